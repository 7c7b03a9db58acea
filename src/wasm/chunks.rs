//! Byte streams of `Uint8Array` chunks between JavaScript `ReadableStream`s and Rust: type
//! checks, progress metering, and a replayable source for the streaming → segmented fallback.
//! Chunks stay JavaScript objects (no copy into wasm memory) unless encryption needs them.

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

use super::abort::Reason;
use super::bindings::now_ms;
use super::error::js_error;
use super::options::Parsed;
use crate::client::error::ErrorCode;
use crate::client::parts::ByteChunk;
use crate::client::rate::RateMeter;

/// A stream of byte chunks; `Err` is a JavaScript error value.
pub type ByteStream = LocalBoxStream<'static, Result<Uint8Array, JsValue>>;

/// Reads a JavaScript `ReadableStream` of `Uint8Array` (or `ArrayBuffer`) chunks.
pub fn from_js(stream: ReadableStream) -> ByteStream {
    wasm_streams::ReadableStream::from_raw(stream)
        .into_stream()
        .map(|r| r.and_then(as_bytes))
        .boxed_local()
}

fn as_bytes(v: JsValue) -> Result<Uint8Array, JsValue> {
    if v.is_instance_of::<Uint8Array>() {
        return Ok(v.unchecked_into());
    }
    if let Some(ab) = v.dyn_ref::<ArrayBuffer>() {
        return Ok(Uint8Array::new(ab));
    }
    if ArrayBuffer::is_view(&v) {
        let buffer = js_sys::Reflect::get(&v, &"buffer".into())?;
        let offset = js_sys::Reflect::get(&v, &"byteOffset".into())?
            .as_f64()
            .unwrap_or(0.0);
        let len = js_sys::Reflect::get(&v, &"byteLength".into())?
            .as_f64()
            .unwrap_or(0.0);
        return Ok(Uint8Array::new_with_byte_offset_and_length(
            &buffer,
            offset as u32,
            len as u32,
        ));
    }
    Err(js_error(
        ErrorCode::Unsupported,
        "the source produced a chunk that is not a Uint8Array (write bytes, e.g. new TextEncoder().encode(text))",
        Some(&v),
    ))
}

/// Exposes a byte stream as a JavaScript `ReadableStream` (pull-based: backpressure holds).
pub fn to_js(stream: ByteStream) -> ReadableStream {
    wasm_streams::ReadableStream::from_stream(stream.map(|r| r.map(JsValue::from))).into_raw()
}

/// A `Uint8Array` as a splittable chunk (views, no copy).
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

/// Counts bytes passing through and calls `onProgress` (throttled, and once at the end).
pub fn metered(
    stream: ByteStream,
    meter: Rc<RefCell<RateMeter>>,
    on_progress: Option<Function>,
) -> ByteStream {
    let end_meter = meter.clone();
    let end_cb = on_progress.clone();
    let body = stream.map(move |item| {
        if let Ok(chunk) = &item {
            let report = meter.borrow_mut().add(chunk.length() as u64, now_ms());
            if let Some(p) = report {
                Parsed::report_progress(&on_progress, p);
            }
        }
        item
    });
    let tail = futures::stream::once(async move {
        let p = end_meter.borrow_mut().report(now_ms());
        Parsed::report_progress(&end_cb, p);
        None
    })
    .filter_map(futures::future::ready);
    body.chain(tail).boxed_local()
}

/// At most this many bytes pulled by a streaming upload are kept for a fallback replay.
pub const REPLAY_LIMIT: usize = 4 * 1024 * 1024;

/// A source shared between a streaming attempt and a segmented fallback: remembers the
/// chunks pulled so far (up to [`REPLAY_LIMIT`]) and the source's own error.
pub struct Shared {
    inner: RefCell<ByteStream>,
    replay: RefCell<Option<Vec<Uint8Array>>>,
    replay_bytes: Cell<usize>,
    source_error: RefCell<Option<JsValue>>,
}

impl Shared {
    pub fn new(inner: ByteStream) -> Rc<Shared> {
        Rc::new(Shared {
            inner: RefCell::new(inner),
            replay: RefCell::new(Some(Vec::new())),
            replay_bytes: Cell::new(0),
            source_error: RefCell::new(None),
        })
    }

    /// The error the source itself failed with, if any.
    pub fn source_error(&self) -> Option<JsValue> {
        self.source_error.borrow().clone()
    }

    /// The pulled chunks, if all of them were kept; `None` once more than the limit passed.
    pub fn take_replay(&self) -> Option<Vec<Uint8Array>> {
        self.replay.borrow_mut().take()
    }

    /// How many bytes were pulled so far, while all of them are kept for replay.
    pub fn replay_len(&self) -> Option<usize> {
        self.replay
            .borrow()
            .as_ref()
            .map(|_| self.replay_bytes.get())
    }

    /// A stream reading on from the shared source.
    pub fn reader(self: &Rc<Self>) -> SharedReader {
        SharedReader(self.clone())
    }
}

/// Polls the shared source, recording chunks for replay.
pub struct SharedReader(Rc<Shared>);

impl Stream for SharedReader {
    type Item = Result<Uint8Array, JsValue>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let shared = &self.0;
        let polled = shared.inner.borrow_mut().poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => {
                let mut replay = shared.replay.borrow_mut();
                let n = shared.replay_bytes.get() + chunk.length() as usize;
                shared.replay_bytes.set(n);
                if n > REPLAY_LIMIT {
                    *replay = None;
                } else if let Some(r) = replay.as_mut() {
                    r.push(chunk.clone());
                }
            }
            Poll::Ready(Some(Err(e))) => {
                *shared.source_error.borrow_mut() = Some(e.clone());
            }
            _ => {}
        }
        polled
    }
}

/// Ends a source with an `ABORTED` error (never a clean end) once the operation was aborted,
/// so nothing keeps pulling (and encrypting) a source whose upload is gone.
pub fn stoppable(stream: ByteStream, reason: Rc<Cell<Reason>>) -> ByteStream {
    let stopped = || Err(js_error(ErrorCode::Aborted, "the upload was stopped", None));
    futures::stream::unfold(
        (stream, reason, false),
        move |(mut s, reason, done)| async move {
            if done {
                return None;
            }
            if reason.get() != Reason::None {
                return Some((stopped(), (s, reason, true)));
            }
            match s.next().await {
                Some(Ok(_)) if reason.get() != Reason::None => Some((stopped(), (s, reason, true))),
                Some(Ok(c)) => Some((Ok(c), (s, reason, false))),
                Some(Err(e)) => Some((Err(e), (s, reason, true))),
                None => None,
            }
        },
    )
    .boxed_local()
}
