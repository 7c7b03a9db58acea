//! Byte streams of `Uint8Array` chunks between JavaScript `ReadableStream`s and Rust: type
//! checks, progress metering, and a replayable source for the streaming → segmented fallback
//! (the core's `producer::StreamFailure::replay`). Chunks stay JavaScript objects (no copy
//! into wasm memory) unless encryption needs them. Errors are the SDK's `Error` inside and
//! become `HttpipeError`s only where a stream is handed to JavaScript ([`to_js`]).

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures::stream::{LocalBoxStream, Stream};
use futures::StreamExt;
use js_sys::{ArrayBuffer, Function, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::ReadableStream;

use super::bindings::now_ms;
use super::error::{coded, from_js, has_code, js_error, message_of, to_js as error_to_js};
use super::js_streams::{JsStreamReader, JsValueStream};
use super::options::Parsed;
use crate::client::error::source_failed;
use crate::client::error::{Error, ErrorCode, StopReason};
use crate::client::ledger::Ledger;
use crate::client::parts::ByteChunk;
use crate::client::producer::FallbackReplay;
use crate::client::rate::RateMeter;
use crate::client::resume::{ReopenedLength, ReplayWindow};

/// A stream of byte chunks.
pub type ByteStream = LocalBoxStream<'static, Result<Uint8Array, Error>>;

/// A JavaScript `ReadableStream` as raw values (errors are JavaScript exceptions; a stream
/// already locked to a reader fails at its first read).
pub fn raw(stream: ReadableStream) -> JsValueStream {
    match JsStreamReader::new(&stream) {
        Ok(reader) => reader.boxed_local(),
        Err(e) => futures::stream::once(futures::future::ready(Err(e))).boxed_local(),
    }
}

/// Reads the caller's source, a `ReadableStream` of `Uint8Array` (or `ArrayBuffer`) chunks.
/// A source that fails is reported as what it is (§11.2 step 5): `ABORTED` "the source failed:
/// …" ([`source_failed`]), or the `HttpipeError` it failed with; `failure` keeps its own error
/// for the rejection. After a stop: the stop's code.
pub fn source(
    stream: ReadableStream,
    stop: Rc<Cell<StopReason>>,
    failure: SourceFailure,
) -> ByteStream {
    raw(stream)
        .map(move |r| {
            r.map_err(|e| {
                let stopped = stop.get();
                if stopped != StopReason::None {
                    return from_js(&e, stopped, ErrorCode::Aborted, "reading the source");
                }
                let err = coded(&e).unwrap_or_else(|| source_failed(message_of(&e)));
                failure.record(&err, &e);
                err
            })
            .and_then(as_bytes)
        })
        .boxed_local()
}

/// The caller's source failed: the SDK error it became, and the JavaScript value it failed
/// with, for the operation's rejection (shared by every read of one source).
#[derive(Clone, Default)]
pub struct SourceFailure(Rc<RefCell<Option<(Error, JsValue)>>>);

impl SourceFailure {
    fn record(&self, e: &Error, raw: &JsValue) {
        let mut r = self.0.borrow_mut();
        if r.is_none() {
            *r = Some((e.clone(), raw.clone()));
        }
    }

    /// The operation's error `e` as JavaScript: the source's own failure with the very error
    /// the source failed with as its `cause` (an `HttpipeError` it failed with as it is);
    /// any other error as usual.
    pub fn to_js(&self, e: &Error) -> JsValue {
        match &*self.0.borrow() {
            Some((own, raw)) if own.code == e.code && own.message == e.message => {
                if has_code(raw) {
                    raw.clone()
                } else {
                    js_error(e.code, &e.message, Some(raw))
                }
            }
            _ => error_to_js(e),
        }
    }
}

fn as_bytes(v: JsValue) -> Result<Uint8Array, Error> {
    if v.is_instance_of::<Uint8Array>() {
        return Ok(v.unchecked_into());
    }
    if let Some(ab) = v.dyn_ref::<ArrayBuffer>() {
        return Ok(Uint8Array::new(ab));
    }
    if ArrayBuffer::is_view(&v) {
        let num = |k: &str| {
            js_sys::Reflect::get(&v, &k.into())
                .ok()
                .and_then(|n| n.as_f64())
                .unwrap_or(0.0)
        };
        if let Ok(buffer) = js_sys::Reflect::get(&v, &"buffer".into()) {
            return Ok(Uint8Array::new_with_byte_offset_and_length(
                &buffer,
                num("byteOffset") as u32,
                num("byteLength") as u32,
            ));
        }
    }
    Err(Error::new(
        ErrorCode::Unsupported,
        "the source produced a chunk that is not a Uint8Array (write bytes, e.g. new TextEncoder().encode(text))",
    ))
}

/// Exposes a byte stream as a JavaScript `ReadableStream` (pull-based: backpressure holds);
/// errors become `HttpipeError`s here.
pub fn to_js(stream: ByteStream) -> Result<ReadableStream, JsValue> {
    let values = stream.map(|r| r.map(JsValue::from).map_err(|e| error_to_js(&e)));
    super::js_streams::readable_from(values.boxed_local())
}

/// Enters a JavaScript chunk in `ledger` (§12.2; copied into wasm memory only when it is
/// hashed).
pub fn enter(ledger: &mut Ledger, chunk: &Uint8Array) {
    ledger.add_with(chunk.length() as usize, |buf| chunk.copy_to(buf));
}

/// A `Uint8Array` as a splittable chunk (views, no copy).
#[derive(Clone)]
pub struct View(pub Uint8Array);

impl ByteChunk for View {
    fn byte_len(&self) -> usize {
        self.0.length() as usize
    }
    fn split_at(self, at: usize) -> (Self, Self) {
        let at = at as u32;
        (
            View(self.0.subarray(0, at)),
            View(self.0.subarray(at, self.0.length())),
        )
    }
}

/// Concatenates views into one fresh `Uint8Array` (a JavaScript-side copy).
pub fn concat(parts: &[View]) -> Uint8Array {
    let total: u32 = parts.iter().map(|v| v.0.length()).sum();
    let out = Uint8Array::new_with_length(total);
    let mut at = 0;
    for v in parts {
        out.set(&v.0, at);
        at += v.0.length();
    }
    out
}

/// Counts bytes passing through and calls `onProgress` (throttled, and once at the end);
/// with a `ledger`, enters each chunk in it too (the producer's plaintext, §12.2).
pub fn metered(
    stream: ByteStream,
    meter: Rc<RefCell<RateMeter>>,
    on_progress: Option<Function>,
    ledger: Option<Rc<RefCell<Ledger>>>,
) -> ByteStream {
    Metered {
        inner: stream,
        meter,
        on_progress,
        ledger,
        ended: false,
    }
    .boxed_local()
}

struct Metered {
    inner: ByteStream,
    meter: Rc<RefCell<RateMeter>>,
    on_progress: Option<Function>,
    ledger: Option<Rc<RefCell<Ledger>>>,
    ended: bool,
}

impl Stream for Metered {
    type Item = Result<Uint8Array, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        let item = std::task::ready!(this.inner.poll_next_unpin(cx));
        match &item {
            Some(Ok(chunk)) => {
                let report = this.meter.borrow_mut().add(chunk.length() as u64, now_ms());
                if let Some(p) = report {
                    Parsed::report_progress(&this.on_progress, p);
                }
                if let Some(ledger) = &this.ledger {
                    enter(&mut ledger.borrow_mut(), chunk);
                }
            }
            Some(Err(_)) => {}
            None => {
                this.ended = true;
                let p = this.meter.borrow_mut().report(now_ms());
                Parsed::report_progress(&this.on_progress, p);
            }
        }
        Poll::Ready(item)
    }
}

/// A source shared between a streaming attempt and what follows it: remembers the chunks
/// pulled so far (up to the core's `REPLAY_LIMIT`) and the source's own error.
pub struct Shared {
    inner: RefCell<ByteStream>,
    replay: RefCell<FallbackReplay<Uint8Array>>,
    source_error: RefCell<Option<Error>>,
    /// The source ended: it is not polled again (a resumed upload reads on after the end,
    /// §12.3).
    ended: Cell<bool>,
}

impl Shared {
    pub fn new(inner: ByteStream) -> Rc<Shared> {
        Rc::new(Shared {
            inner: RefCell::new(inner),
            replay: RefCell::default(),
            source_error: RefCell::new(None),
            ended: Cell::new(false),
        })
    }

    /// The error the source itself failed with, if any.
    pub fn source_error(&self) -> Option<Error> {
        self.source_error.borrow().clone()
    }

    /// The pulled chunks, if all of them were kept; `None` once more than the limit passed.
    /// Recording stops here.
    pub fn take_replay(&self) -> Option<Vec<View>> {
        self.replay
            .borrow_mut()
            .take()
            .map(|r| r.into_iter().map(View).collect())
    }

    /// A stream reading on from the shared source.
    pub fn reader(self: &Rc<Self>) -> SharedReader {
        SharedReader(self.clone())
    }
}

/// Polls the shared source, recording chunks for replay.
pub struct SharedReader(Rc<Shared>);

impl Stream for SharedReader {
    type Item = Result<Uint8Array, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let shared = &self.0;
        if shared.ended.get() {
            return Poll::Ready(None);
        }
        let polled = shared.inner.borrow_mut().poll_next_unpin(cx);
        match &polled {
            Poll::Ready(None) => shared.ended.set(true),
            Poll::Ready(Some(Ok(chunk))) => {
                let len = chunk.length() as usize;
                shared.replay.borrow_mut().record(len, chunk.clone());
            }
            Poll::Ready(Some(Err(e))) => {
                *shared.source_error.borrow_mut() = Some(e.clone());
            }
            _ => {}
        }
        polled
    }
}

/// The producer's wire bytes as they leave the pipeline, one step per chunk (§12.2, §12.3):
/// each chunk entered in the wire `ledger`, then recorded in the replay `window` — copied
/// into the window's own blocks ([`Kept`]) while the window keeps chunks, so its memory is
/// the window's size, not the source's chunks held until the garbage collector frees them;
/// `ended` set at the clean end (the producer's end); once the operation stopped, an
/// `ABORTED` error (never a clean end) without pulling the source again, so nothing keeps
/// reading (and encrypting) a source whose upload is gone.
pub fn wire_tap(
    stream: ByteStream,
    ledger: Rc<RefCell<Ledger>>,
    window: Rc<RefCell<ReplayWindow<Kept>>>,
    ended: Rc<Cell<bool>>,
    stop: Rc<Cell<StopReason>>,
) -> ByteStream {
    WireTap {
        inner: stream,
        ledger,
        window,
        pool: KeptPool::default(),
        ended,
        stop,
        done: false,
    }
    .boxed_local()
}

struct WireTap {
    inner: ByteStream,
    ledger: Rc<RefCell<Ledger>>,
    window: Rc<RefCell<ReplayWindow<Kept>>>,
    pool: KeptPool,
    ended: Rc<Cell<bool>>,
    stop: Rc<Cell<StopReason>>,
    done: bool,
}

impl WireTap {
    fn stopped(&mut self) -> Poll<Option<Result<Uint8Array, Error>>> {
        self.done = true;
        let e = Error::new(ErrorCode::Aborted, "the upload was stopped");
        Poll::Ready(Some(Err(e)))
    }
}

impl Stream for WireTap {
    type Item = Result<Uint8Array, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.stop.get() != StopReason::None {
            return this.stopped();
        }
        let chunk = match std::task::ready!(this.inner.poll_next_unpin(cx)) {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => {
                this.done = true;
                return Poll::Ready(Some(Err(e)));
            }
            None => {
                this.done = true;
                this.ended.set(true);
                return Poll::Ready(None);
            }
        };
        enter(&mut this.ledger.borrow_mut(), &chunk);
        if this.stop.get() != StopReason::None {
            return this.stopped();
        }
        let mut w = this.window.borrow_mut();
        if w.keeps_chunks() {
            for kept in this.pool.keep(&chunk) {
                w.push(kept);
            }
        } else {
            w.push(Kept::view(chunk.clone()));
        }
        Poll::Ready(Some(Ok(chunk)))
    }
}

/// The replay window's blocks: 1 MiB each, reused once no kept chunk is in them.
const KEPT_BLOCK: u32 = 1 << 20;

/// A chunk as the replay window keeps it (§12.3): a copy in one of the window's blocks, or
/// (a window that keeps no chunks: only the last one or an encrypted header) the source's
/// own chunk. Sent again only as a fresh copy ([`Kept::to_send`]): a block is written again
/// once the window dropped what was in it.
///
/// Why copies: a window holding the source's chunks keeps each for as long as the window's
/// size takes to send, long enough for the garbage collector to move it to the old
/// generation; dropped chunks then wait for a full collection, which V8 starts only after
/// about 64 MB more of them. Measured in Node 20 (1 GiB through the relay, 64 KiB chunks):
/// producer RSS growth +150–190 MB with a 64 MiB window of the source's chunks.
#[derive(Clone)]
pub struct Kept {
    view: Uint8Array,
    _block: Option<Rc<KeptBlock>>,
}

impl Kept {
    fn view(view: Uint8Array) -> Kept {
        Kept { view, _block: None }
    }

    /// The bytes to send again, in a `Uint8Array` of their own.
    pub fn to_send(&self) -> Uint8Array {
        self.view.slice(0, self.view.length())
    }
}

impl ByteChunk for Kept {
    fn byte_len(&self) -> usize {
        self.view.length() as usize
    }
    fn split_at(self, at: usize) -> (Self, Self) {
        let at = at as u32;
        (
            Kept {
                view: self.view.subarray(0, at),
                _block: self._block.clone(),
            },
            Kept {
                view: self.view.subarray(at, self.view.length()),
                _block: self._block,
            },
        )
    }
}

/// A block of the window's memory; back to its pool when the last chunk in it is dropped.
pub struct KeptBlock {
    bytes: Uint8Array,
    free: std::rc::Weak<RefCell<Vec<Uint8Array>>>,
}

impl Drop for KeptBlock {
    fn drop(&mut self) {
        if let Some(free) = self.free.upgrade() {
            free.borrow_mut().push(self.bytes.clone());
        }
    }
}

/// Where [`Kept`] copies go: the block being filled and the blocks free again.
#[derive(Default)]
struct KeptPool {
    free: Rc<RefCell<Vec<Uint8Array>>>,
    current: Option<(Rc<KeptBlock>, u32)>,
}

impl KeptPool {
    /// `chunk` copied into the pool's blocks (one piece per block it spans).
    fn keep(&mut self, chunk: &Uint8Array) -> Vec<Kept> {
        let mut out = Vec::new();
        let (mut at, len) = (0, chunk.length());
        while at < len {
            let (block, used) = match self.current.take() {
                Some((b, used)) if used < KEPT_BLOCK => (b, used),
                _ => {
                    let bytes = self
                        .free
                        .borrow_mut()
                        .pop()
                        .unwrap_or_else(|| Uint8Array::new_with_length(KEPT_BLOCK));
                    let free = Rc::downgrade(&self.free);
                    (Rc::new(KeptBlock { bytes, free }), 0)
                }
            };
            let n = (len - at).min(KEPT_BLOCK - used);
            let view = block.bytes.subarray(used, used + n);
            view.set(&chunk.subarray(at, at + n), 0);
            out.push(Kept {
                view,
                _block: Some(block.clone()),
            });
            self.current = Some((block, used + n));
            at += n;
        }
        out
    }
}

/// `stream` while `live` holds; after that it fails without polling `stream` again, so no
/// chunk is taken from it by a reader that is no longer wanted. (A `Stream` of its own, not
/// an async block: a poll already waiting in `stream` would take the next chunk after the
/// flag was cleared.)
pub fn gated(stream: ByteStream, live: Rc<Cell<bool>>) -> ByteStream {
    Gated {
        inner: stream,
        live,
    }
    .boxed_local()
}

struct Gated {
    inner: ByteStream,
    live: Rc<Cell<bool>>,
}

impl Stream for Gated {
    type Item = Result<Uint8Array, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if !self.live.get() {
            let e = Error::new(ErrorCode::Network, "the upload was replaced");
            return Poll::Ready(Some(Err(e)));
        }
        self.inner.poll_next_unpin(cx)
    }
}

/// How a streaming upload's body is pulled (`PROTOCOL.md` §12.4): when the HTTP client last
/// got a chunk, whether it is asking for one now, and a hold that keeps the body from taking
/// more from the source while a stall call is out.
pub struct BodyWatch {
    asking: Cell<bool>,
    last_ms: Cell<f64>,
    held: Cell<bool>,
    waker: RefCell<Option<std::task::Waker>>,
}

impl BodyWatch {
    pub fn new() -> Rc<BodyWatch> {
        Rc::new(BodyWatch {
            asking: Cell::new(false),
            last_ms: Cell::new(now_ms()),
            held: Cell::new(false),
            waker: RefCell::new(None),
        })
    }

    /// Milliseconds the body has waited for the HTTP client to ask for more (after its end:
    /// since the end); 0 while the client asks.
    pub fn blocked_ms(&self, now_ms: f64) -> f64 {
        if self.asking.get() {
            0.0
        } else {
            now_ms - self.last_ms.get()
        }
    }

    /// Hand the upload nothing more until [`BodyWatch::release`].
    pub fn hold(&self) {
        self.held.set(true);
    }

    pub fn release(&self) {
        self.held.set(false);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// `stream` as an upload's body watched by `watch`.
pub fn watched(stream: ByteStream, watch: Rc<BodyWatch>) -> ByteStream {
    Watched {
        inner: stream,
        watch,
    }
    .boxed_local()
}

struct Watched {
    inner: ByteStream,
    watch: Rc<BodyWatch>,
}

impl Stream for Watched {
    type Item = Result<Uint8Array, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let w = self.watch.clone();
        w.asking.set(true);
        if w.held.get() {
            *w.waker.borrow_mut() = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let r = self.inner.poll_next_unpin(cx);
        if r.is_ready() {
            w.asking.set(false);
            w.last_ms.set(now_ms());
        }
        r
    }
}

/// Clears its flag when dropped (ends a [`gated`] stream).
pub struct CloseOnDrop(pub Rc<Cell<bool>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// A reopened source (§12.3): exactly `len` bytes, as the core's [`ReopenedLength`] holds it.
pub fn exactly(stream: ByteStream, len: u64) -> ByteStream {
    let state = (stream, ReopenedLength::new(len), false);
    futures::stream::unfold(state, |(mut s, mut check, done)| async move {
        if done {
            return None;
        }
        let item = match s.next().await {
            Some(Ok(c)) => check.on_chunk(u64::from(c.length())).map(|()| c),
            Some(Err(e)) => Err(e),
            None => match check.on_end() {
                Ok(()) => return None,
                Err(e) => Err(e),
            },
        };
        let done = item.is_err();
        Some((item, (s, check, done)))
    })
    .boxed_local()
}
