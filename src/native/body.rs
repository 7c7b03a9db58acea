//! The producer's streaming request body in the native driver (the mirror of
//! `wasm/body.rs`): the receiving end of the wire channel as the core's source — the body
//! that pulls from it while keeping what the core needs for a segmented replay
//! ([`StreamFailure`]), the replay window of a resume (§12.3), the wire ledger (§12.2), and
//! how the body is pulled, for the stall watch (§12.4). A stopped body fails, so the upload
//! is cut, never ended (§11.2 step 5).
//!
//! [`StreamFailure`]: crate::client::producer::StreamFailure

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::poll_fn;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::lock;
use super::stop::Stop;
use crate::client::error::{Error, ErrorCode, StopReason};
use crate::client::ledger::Ledger;
use crate::client::producer::FallbackReplay;
use crate::client::resume::{Replay, ReplayWindow};

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
    /// What the current streaming attempt pulled, for a fallback.
    replay: FallbackReplay<Bytes>,
    source_error: Option<Error>,
    ended: bool,
    /// How the streaming body is pulled, for the core's stall watch (§12.4).
    watch: BodyWatch,
}

/// One item of the wire channel: `Ok(Some)` bytes, `Ok(None)` the clean end, `Err` the
/// source failed. A channel that closes without `Ok(None)` is a cut source, never an end.
pub(crate) type Item = Result<Option<Bytes>, Error>;

/// Puts `out`'s chunks on the wire channel in order; `Err` when nobody reads it any more.
pub(crate) async fn send_all(tx: &mpsc::Sender<Item>, out: &mut Vec<Bytes>) -> Result<(), ()> {
    for b in out.drain(..) {
        tx.send(Ok(Some(b))).await.map_err(|_| ())?;
    }
    Ok(())
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
                replay: FallbackReplay::default(),
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
            g.replay = FallbackReplay::default();
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
    pub(crate) fn keep_window(&self, window: ReplayWindow<Bytes>) {
        lock(&self.inner).window = Some(window);
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
                g.replay.record(b.len(), b.clone());
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
