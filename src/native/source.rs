//! The producer's bytes on their way to the relay: the encoder (plain or age / age-rt), the
//! bounded channel of wire chunks (backpressure), the streaming request body that pulls from
//! it while keeping what the core needs for a segmented replay ([`StreamFailure`]), and the
//! pumps that fill it from an `AsyncRead` or from a [`super::Writer`].
//!
//! [`StreamFailure`]: crate::client::producer::StreamFailure

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::future::poll_fn;
use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::stop::Stop;
use super::ProgressFn;
use crate::client::error::{source_failed, Error, ErrorCode, StopReason};
use crate::client::ledger::Ledger;
use crate::client::parts::ByteChunk;
use crate::client::producer::REPLAY_LIMIT;
use crate::client::rate::RateMeter;
use crate::client::resume::{Replay, ReplayWindow};
use crate::crypto::{Encryptor, Format};

/// Wire chunks buffered between the encoder and the request body.
pub(crate) const WIRE_CHANNEL: usize = 4;
/// Bytes read from an `AsyncRead` source at a time.
pub(crate) const READ_CHUNK: usize = 256 * 1024;
/// Plain writes smaller than this are coalesced (until a flush or this many bytes).
const COALESCE: usize = 64 * 1024;

/// Runs `f` on the blocking pool (scrypt takes about a second).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Error::new(
            ErrorCode::Unsupported,
            format!("a worker thread failed: {e}"),
        )
    })
}

impl ByteChunk for Bytes {
    fn byte_len(&self) -> usize {
        self.len()
    }
    fn split_at(mut self, at: usize) -> (Self, Self) {
        let tail = self.split_off(at);
        (self, tail)
    }
}

/// One item of the wire channel: `Ok(Some)` bytes, `Ok(None)` the clean end, `Err` the
/// source failed. A channel that closes without `Ok(None)` is a cut source, never an end.
pub(crate) type Item = Result<Option<Bytes>, Error>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// Progress

/// Counts plaintext bytes and calls the progress callback when a report is due.
pub(crate) struct Meter {
    start: Instant,
    meter: Mutex<RateMeter>,
    on_progress: Option<ProgressFn>,
}

impl Meter {
    pub(crate) fn new(total: Option<u64>, on_progress: Option<ProgressFn>) -> Arc<Self> {
        Arc::new(Meter {
            start: Instant::now(),
            meter: Mutex::new(RateMeter::new(0.0, total)),
            on_progress,
        })
    }

    fn now_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    pub(crate) fn add(&self, n: usize) {
        let now = self.now_ms();
        let due = lock(&self.meter).add(n as u64, now);
        if let (Some(p), Some(cb)) = (due, &self.on_progress) {
            cb(p);
        }
    }

    /// A break is being resumed (`reconnecting`), or was (`resumed` so far): reported at once
    /// (§12.3).
    pub(crate) fn set_resume(&self, reconnecting: bool, resumed: u32) {
        let now = self.now_ms();
        let p = {
            let mut m = lock(&self.meter);
            m.set_resume(reconnecting, resumed);
            m.report(now)
        };
        if let Some(cb) = &self.on_progress {
            cb(p);
        }
    }

    /// The final report.
    pub(crate) fn finish(&self) {
        let now = self.now_ms();
        let p = lock(&self.meter).report(now);
        if let Some(cb) = &self.on_progress {
            cb(p);
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        lock(&self.meter).bytes()
    }
}

// ---------------------------------------------------------------------------------------------
// The encoder

/// What the producer's receipt check needs of the encoder once it finished (§12.2): the
/// plaintext it counted, and the encryptor (its tag digest and receipt key).
#[derive(Default)]
pub(crate) struct Sealed {
    pub(crate) plain: Ledger,
    pub(crate) enc: Option<Encryptor>,
}

/// Plaintext in, wire chunks out: passes plain bytes through (coalescing small writes), or
/// encrypts. Output goes to `out` as whole chunks.
pub(crate) struct Encoder {
    enc: Option<Encryptor>,
    /// The plaintext counted (§12.2).
    counted: Ledger,
    /// Filled at the end.
    sealed: Arc<Mutex<Sealed>>,
    /// Plain: small writes waiting for a flush.
    plain: BytesMut,
    /// Encrypted: ciphertext not yet handed out.
    wire: Vec<u8>,
    /// Plaintext written since the last flush.
    unflushed: bool,
}

impl Encoder {
    pub(crate) fn new(enc: Option<Encryptor>, sealed: Arc<Mutex<Sealed>>) -> Self {
        Encoder {
            enc,
            counted: Ledger::default(),
            sealed,
            plain: BytesMut::new(),
            wire: Vec::new(),
            unflushed: false,
        }
    }

    fn take_wire(&mut self, out: &mut Vec<Bytes>) {
        if !self.wire.is_empty() {
            out.push(Bytes::from(std::mem::take(&mut self.wire)));
        }
    }

    /// The start: an encrypted stream's header goes out at once (the consumer learns a wrong
    /// key before any plaintext, and the relay sees the producer). A passphrase's header goes
    /// in two parts: its first lines (with the salt) into `tx` at once, the rest after this
    /// side's scrypt, which runs on the blocking pool meanwhile, so that the consumer's scrypt
    /// runs at the same time instead of after it (`Encryptor::intro`; the same bytes).
    pub(crate) async fn start(
        &mut self,
        tx: &mpsc::Sender<Item>,
        out: &mut Vec<Bytes>,
    ) -> Result<(), Error> {
        let Some(enc) = &mut self.enc else {
            return Ok(());
        };
        enc.intro(&mut self.wire)?;
        if self.wire.len() as u64 >= enc.header_len() {
            // no scrypt to wait for: the whole header is out
            enc.flush(&mut self.wire)?;
            self.take_wire(out);
            return Ok(());
        }
        self.take_wire(out);
        if send_all(tx, out).await.is_err() {
            return Ok(()); // nobody reads the upload any more: the pump notices
        }
        let Some(mut enc) = self.enc.take() else {
            return Ok(());
        };
        let (enc, wire, r) = blocking(move || {
            let mut wire = Vec::new();
            let r = enc.flush(&mut wire);
            (enc, wire, r)
        })
        .await?;
        self.enc = Some(enc);
        r?;
        self.wire = wire;
        self.take_wire(out);
        Ok(())
    }

    /// Plaintext `data`; with `flush`, everything written so far goes out (as
    /// [`flush`](Self::flush)), without copying plain bytes.
    pub(crate) fn data(
        &mut self,
        data: Bytes,
        flush: bool,
        out: &mut Vec<Bytes>,
    ) -> Result<(), Error> {
        if !data.is_empty() {
            self.unflushed = true;
            self.counted.add(&data);
        }
        match &mut self.enc {
            None => {
                if flush || data.len() >= COALESCE {
                    if !self.plain.is_empty() {
                        out.push(self.plain.split().freeze());
                    }
                    if !data.is_empty() {
                        out.push(data);
                    }
                    self.unflushed = false;
                } else {
                    self.plain.extend_from_slice(&data);
                    if self.plain.len() >= COALESCE {
                        out.push(self.plain.split().freeze());
                    }
                }
                Ok(())
            }
            Some(enc) => {
                if !data.is_empty() {
                    if self.wire.capacity() - self.wire.len() < data.len() {
                        self.wire.reserve(data.len() + data.len() / 64 + 64);
                    }
                    enc.update(&data, &mut self.wire)?;
                }
                if flush {
                    return self.flush(out);
                }
                if self.wire.len() >= COALESCE {
                    self.take_wire(out);
                }
                Ok(())
            }
        }
    }

    /// True if written plaintext may still wait in here.
    pub(crate) fn pending(&self) -> bool {
        self.unflushed
    }

    /// What was written goes out now (age-rt: one record; age v1 can't emit a partial chunk).
    pub(crate) fn flush(&mut self, out: &mut Vec<Bytes>) -> Result<(), Error> {
        self.unflushed = false;
        match &mut self.enc {
            None => {
                if !self.plain.is_empty() {
                    out.push(self.plain.split().freeze());
                }
            }
            Some(enc) => {
                if enc.format() == Format::AgeRt {
                    enc.flush(&mut self.wire)?;
                }
                self.take_wire(out);
            }
        }
        Ok(())
    }

    /// The end: the rest and (encrypted) the final chunk / record. The encryptor then goes
    /// to the receipt check ([`Sealed`]).
    pub(crate) fn finish(&mut self, out: &mut Vec<Bytes>) -> Result<(), Error> {
        self.flush(out)?;
        if let Some(enc) = &mut self.enc {
            enc.finish(&mut self.wire)?;
            self.take_wire(out);
        }
        let mut sealed = lock(&self.sealed);
        sealed.plain = std::mem::take(&mut self.counted);
        sealed.enc = self.enc.take();
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The wire channel, as the core's source

struct Inner {
    rx: mpsc::Receiver<Item>,
    /// The streaming body allowed to pull (0: none).
    attempt: u64,
    /// Streaming bodies made so far (the next one's id).
    attempts: u64,
    /// After a resume (§12.3): the window's bytes from the agreed offset, served before the
    /// channel.
    pending: VecDeque<Bytes>,
    /// The replay window (§12.3), once both sides resume: every chunk taken from the channel.
    window: Option<ReplayWindow<Bytes>>,
    /// What went on the wire, counted (and hashed when a receipt commits to it, §12.2): each
    /// chunk once, when first taken from the channel.
    wire: Ledger,
    replay: Option<Vec<Bytes>>,
    replay_bytes: usize,
    source_error: Option<Error>,
    ended: bool,
    /// How the streaming body is pulled, for the core's stall watch (§12.4).
    watch: BodyWatch,
}

/// The streaming body as the stall watch sees it (§12.4): whether the HTTP client is asking
/// for more now, when it last got something (or the end), and whether the body is held
/// while a stall call is out.
struct BodyWatch {
    asking: bool,
    last: Instant,
    held: bool,
    waker: Option<std::task::Waker>,
}

/// The receiving end of the wire channel, shared by the driver (segmented parts) and the
/// streaming request body.
#[derive(Clone)]
pub(crate) struct Source {
    inner: Arc<Mutex<Inner>>,
    stop: Stop,
}

fn cut_error(stop: &Stop) -> Error {
    if stop.reason() != StopReason::None {
        return stop.error("sending");
    }
    Error::new(
        ErrorCode::Aborted,
        "the source went away before its end (the writer was dropped without finish())",
    )
}

impl Source {
    pub(crate) fn new(rx: mpsc::Receiver<Item>, stop: Stop) -> Self {
        Source {
            inner: Arc::new(Mutex::new(Inner {
                rx,
                attempt: 0,
                attempts: 0,
                pending: VecDeque::new(),
                window: None,
                wire: Ledger::default(),
                replay: None,
                replay_bytes: 0,
                source_error: None,
                ended: false,
                watch: BodyWatch {
                    asking: false,
                    last: Instant::now(),
                    held: false,
                    waker: None,
                },
            })),
            stop,
        }
    }

    /// A streaming request body pulling from the channel until `cancel` (then it fails, so the
    /// upload is cut rather than ended).
    pub(crate) fn body(&self, cancel: CancellationToken) -> BodyStream {
        let id = {
            let mut g = lock(&self.inner);
            g.attempts += 1;
            g.attempt = g.attempts;
            g.replay = Some(Vec::new());
            g.replay_bytes = 0;
            g.watch.asking = false;
            g.watch.last = Instant::now();
            g.attempt
        };
        BodyStream {
            inner: self.inner.clone(),
            stop: self.stop.clone(),
            id,
            cancel: Box::pin(cancel.cancelled_owned()),
            done: false,
        }
    }

    /// How long the streaming body has waited for the HTTP client to ask for more (after its
    /// end: since the end; zero while the client asks): the stall watch's input (§12.4).
    pub(crate) fn blocked(&self) -> Duration {
        let g = lock(&self.inner);
        if g.watch.asking {
            Duration::ZERO
        } else {
            g.watch.last.elapsed()
        }
    }

    /// Hands the streaming body nothing more until [`Source::release`] (a stall call is out,
    /// §12.4).
    pub(crate) fn hold(&self) {
        lock(&self.inner).watch.held = true;
    }

    pub(crate) fn release(&self) {
        let waker = {
            let mut g = lock(&self.inner);
            g.watch.held = false;
            g.watch.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Ends the streaming attempt: no more pulls by its body; what was pulled (if all of it
    /// was kept) and the source's own error.
    pub(crate) fn end_attempt(&self) -> (Option<Vec<Bytes>>, Option<Error>) {
        let mut g = lock(&self.inner);
        g.attempt = 0;
        (g.replay.take(), g.source_error.take())
    }

    /// The source's own error, if it failed.
    pub(crate) fn source_error(&self) -> Option<Error> {
        lock(&self.inner).source_error.clone()
    }

    /// Both sides resume (§12.3): from now on every chunk taken from the channel is kept in a
    /// replay window of `cap` bytes.
    pub(crate) fn keep_window(&self, cap: usize) {
        lock(&self.inner).window = Some(ReplayWindow::new(cap));
    }

    /// Whether the wire bytes are hashed (a receipt commits to them, §12.2).
    pub(crate) fn hash_wire(&self, hash: bool) {
        lock(&self.inner).wire.hash = hash;
    }

    /// The window's `low` and `high` wire offsets (0, 0 without a window).
    pub(crate) fn window(&self) -> (u64, u64) {
        let g = lock(&self.inner);
        g.window.as_ref().map_or((0, 0), |w| (w.low(), w.high()))
    }

    /// The transfer resumes at wire byte `offset` (§12.3, checked by the core against the
    /// window): the next upload sends the window's bytes from there, then the channel's.
    pub(crate) fn resume_from(&self, offset: u64) {
        let mut g = lock(&self.inner);
        let replay = g.window.as_ref().and_then(|w| w.replay_from(offset));
        g.pending = match replay {
            Some(Replay::Kept(kept)) => kept.into(),
            // The native window keeps its bytes (`ReplayWindow::new`, never `seekable`):
            // nothing can be reopened, so the resumed upload fails rather than skip bytes.
            Some(Replay::Reopen { .. }) => {
                g.source_error = Some(Error::new(
                    ErrorCode::Unsupported,
                    "internal error in the native client: a resume asked to reopen the source",
                ));
                VecDeque::new()
            }
            None => VecDeque::new(),
        };
    }

    /// True once the source ended cleanly: every wire byte was taken (and counted) and the
    /// encoder finished (§12.2, the producer's end).
    pub(crate) fn ended(&self) -> bool {
        lock(&self.inner).ended
    }

    /// Runs `f` with the wire ledger (the receipt check, §12.2).
    pub(crate) fn with_wire<T>(&self, f: impl FnOnce(&Ledger) -> T) -> T {
        f(&lock(&self.inner).wire)
    }

    /// The next chunk for a segmented part: `Ok(None)` at the clean end.
    pub(crate) async fn next(&self) -> Result<Option<Bytes>, Error> {
        let pulled = tokio::select! {
            r = poll_fn(|cx| lock(&self.inner).pull(cx)) => r,
            _ = self.stop.stopped() => return Err(self.stop.error("sending")),
        };
        match pulled {
            Some(Ok(None)) => {
                lock(&self.inner).ended = true;
                Ok(None)
            }
            Some(other) => other,
            None => Err(cut_error(&self.stop)),
        }
    }

    /// No more source: writers blocked on the channel see it closed.
    pub(crate) fn close(&self) {
        lock(&self.inner).rx.close();
    }
}

/// The streaming request body (`reqwest::Body::wrap_stream`).
pub(crate) struct BodyStream {
    inner: Arc<Mutex<Inner>>,
    stop: Stop,
    id: u64,
    cancel: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
}

impl Stream for BodyStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.cancel.as_mut().poll(cx).is_ready() {
            self.done = true;
            return Poll::Ready(Some(Err(cut_error(&self.stop))));
        }
        let inner = self.inner.clone();
        let mut g = lock(&inner);
        if g.attempt != self.id {
            drop(g);
            self.done = true;
            return Poll::Ready(Some(Err(cut_error(&self.stop))));
        }
        g.watch.asking = true;
        if g.watch.held {
            g.watch.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let pulled = g.pull(cx);
        if pulled.is_ready() {
            g.watch.asking = false;
            g.watch.last = Instant::now();
        }
        match pulled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(Some(b)))) => {
                let n = g.replay_bytes + b.len();
                g.replay_bytes = n;
                if n > REPLAY_LIMIT {
                    g.replay = None;
                } else if let Some(r) = g.replay.as_mut() {
                    r.push(b.clone());
                }
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Ok(None))) => {
                g.ended = true;
                drop(g);
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                g.source_error = Some(e.clone());
                drop(g);
                self.done = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                drop(g);
                self.done = true;
                Poll::Ready(Some(Err(cut_error(&self.stop))))
            }
        }
    }
}

impl Inner {
    /// The next item for an upload: a resume's replay first, then the channel (each chunk
    /// taken from it entered in the window and the wire ledger once); the clean end again
    /// once it was seen (a resumed upload after the end).
    fn pull(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        if let Some(b) = self.pending.pop_front() {
            return Poll::Ready(Some(Ok(Some(b))));
        }
        if self.ended {
            return Poll::Ready(Some(Ok(None)));
        }
        let item = std::task::ready!(self.rx.poll_recv(cx));
        if let Some(Ok(Some(b))) = &item {
            self.wire.add(b);
            if let Some(w) = self.window.as_mut() {
                w.push(b.clone());
            }
        }
        Poll::Ready(item)
    }
}

// ---------------------------------------------------------------------------------------------
// Pumps

async fn send_all(tx: &mpsc::Sender<Item>, out: &mut Vec<Bytes>) -> Result<(), ()> {
    for b in out.drain(..) {
        tx.send(Ok(Some(b))).await.map_err(|_| ())?;
    }
    Ok(())
}

/// Reads `source` to its end into the wire channel. Every read goes out at once (a short read
/// also flushes: `tail -f | send` is real-time), so it ends the pump's work per chunk.
pub(crate) async fn pump_reader<R: AsyncRead + Unpin>(
    mut source: R,
    mut enc: Encoder,
    tx: mpsc::Sender<Item>,
    meter: Arc<Meter>,
) {
    let mut out = Vec::new();
    let r = async {
        enc.start(&tx, &mut out).await?;
        let mut buf = BytesMut::new();
        loop {
            if send_all(&tx, &mut out).await.is_err() {
                return Ok(false);
            }
            buf.reserve(READ_CHUNK);
            let n = source
                .read_buf(&mut buf)
                .await
                .map_err(|e| source_failed(&e).with_source(e))?;
            if n == 0 {
                enc.finish(&mut out)?;
                return Ok(true);
            }
            meter.add(n);
            // A short read: the source has nothing more right now, so what it gave goes out.
            // It is copied out of the read buffer: a split-off chunk would keep the whole
            // buffer alive while the replay window holds it (§12.3), several times its size.
            let chunk = if n < READ_CHUNK / 2 {
                let c = Bytes::copy_from_slice(&buf);
                buf.clear();
                c
            } else {
                buf.split().freeze()
            };
            enc.data(chunk, n < READ_CHUNK, &mut out)?;
        }
    }
    .await;
    match r {
        Ok(true) => {
            if send_all(&tx, &mut out).await.is_ok() {
                let _ = tx.send(Ok(None)).await;
            }
        }
        Ok(false) => {}
        Err(e) => {
            let _ = tx.send(Err(e)).await;
        }
    }
}

/// What a [`super::Writer`] asks of its encoder task.
pub(crate) enum Cmd {
    Data(Bytes),
    Flush(oneshot::Sender<()>),
    Finish,
    /// Cut the upload: the body fails (after the request reached the relay), so the
    /// consumer sees truncation.
    Abort(String),
}

/// The encoder task of a writer: commands in, wire chunks out; flushes by itself at most
/// `auto_flush` after plaintext was written.
pub(crate) async fn pump_commands(
    mut rx: mpsc::Receiver<Cmd>,
    mut enc: Encoder,
    tx: mpsc::Sender<Item>,
    meter: Arc<Meter>,
    auto_flush: Option<Duration>,
    stop: Stop,
) {
    let mut out = Vec::new();
    let mut deadline: Option<tokio::time::Instant> = None;
    let r: Result<(), Error> = async {
        enc.start(&tx, &mut out).await?;
        loop {
            if send_all(&tx, &mut out).await.is_err() {
                return Ok(());
            }
            let due = deadline.is_some_and(|d| d <= tokio::time::Instant::now());
            let cmd = if due {
                None
            } else {
                let sleep = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    c = rx.recv() => Some(c),
                    _ = sleep => None,
                }
            };
            match cmd {
                None => {
                    // The auto-flush deadline passed.
                    deadline = None;
                    enc.flush(&mut out)?;
                }
                Some(Some(Cmd::Data(b))) => {
                    meter.add(b.len());
                    enc.data(b, false, &mut out)?;
                    if let (Some(af), None, true) = (auto_flush, deadline, enc.pending()) {
                        deadline = Some(tokio::time::Instant::now() + af);
                    }
                }
                Some(Some(Cmd::Flush(ack))) => {
                    deadline = None;
                    enc.flush(&mut out)?;
                    if send_all(&tx, &mut out).await.is_err() {
                        return Ok(());
                    }
                    let _ = ack.send(());
                }
                Some(Some(Cmd::Abort(why))) => {
                    return Err(Error::new(
                        ErrorCode::Aborted,
                        format!("the producer aborted the stream: {why}"),
                    ));
                }
                Some(Some(Cmd::Finish)) => {
                    enc.finish(&mut out)?;
                    if send_all(&tx, &mut out).await.is_ok() {
                        let _ = tx.send(Ok(None)).await;
                    }
                    return Ok(());
                }
                Some(None) => {
                    // Dropped without finish() or abort(): the consumer must see a cut.
                    stop.stop(
                        StopReason::User,
                        Some("the writer was dropped without finish()".into()),
                    );
                    return Ok(());
                }
            }
        }
    }
    .await;
    if let Err(e) = r {
        let _ = tx.send(Err(e)).await;
    }
}
