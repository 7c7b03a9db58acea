//! A lone consumer's response that reads the upload itself (`docs/PROTOCOL.md` §3.2, §3.3).
//!
//! With one consumer and a streaming producer, nothing has to be shared out: the consumer's
//! connection polls the producer's request body directly, as a plain proxy would, instead of a
//! task of the transfer reading it and passing each block on through a channel. That saves a
//! task wake-up (and often a move to the other CPU, with the block no longer in its cache) per
//! block: issue 28 measured the extra hop as most of what this relay spent per byte beyond the
//! leanest peer. What the hop also did stays with the transfer's task, told here how the feed
//! ended ([`DirectEnd`]); the transfer cuts the response by dropping its [`DirectCut`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_util::task::AtomicWaker;
use tokio::sync::oneshot;

use super::body::Msg;
use super::source::Source;
use crate::metrics::Metrics;

/// How a direct feed ended, for the transfer's task.
pub(crate) enum DirectEnd {
    /// The upload ended cleanly and the response yielded its end.
    Ended,
    /// The upload failed; the response is cut (§3.3).
    Failed,
    /// The response was dropped first (the consumer left, or its response ended at its
    /// `Content-Length`): the upload comes back, to be read on (or held) by the transfer.
    Handed(Source),
}

#[derive(Default)]
struct Shared {
    cut: AtomicBool,
    /// The transfer freed the path after the upload's clean end: the response may end.
    released: AtomicBool,
    waker: AtomicWaker,
    /// Bytes relayed so far.
    bytes: AtomicU64,
}

/// The transfer's hold on a direct feed: dropping it cuts the response (the transfer failed or
/// the relay is aborting), unless the response already ended.
pub(crate) struct DirectCut(Arc<Shared>);

/// What a direct feed relayed so far (for the transfer's log line; the metrics count as it
/// goes).
pub(crate) struct DirectBytes(Arc<Shared>);

impl DirectBytes {
    pub(crate) fn get(&self) -> u64 {
        self.0.bytes.load(Ordering::Relaxed)
    }
}

impl DirectCut {
    /// Lets the response yield its clean end (the transfer freed the path first, so that a
    /// consumer that sees the end finds the path free: the order the pump kept).
    pub(crate) fn release(&self) {
        self.0.released.store(true, Ordering::Release);
        self.0.waker.wake();
    }
}

impl Drop for DirectCut {
    fn drop(&mut self) {
        self.0.cut.store(true, Ordering::Release);
        self.0.waker.wake();
    }
}

enum State {
    Reading(Source),
    /// Told the transfer [`DirectEnd::Ended`]; the end waits for [`DirectCut::release`].
    Ending,
    /// Told the transfer [`DirectEnd::Failed`]; the cut waits for the transfer to end (and
    /// free the path) first.
    Failing,
    /// The end was yielded.
    Done,
}

/// The consumer's side: yields the upload's chunks as [`Msg`]s.
pub(crate) struct DirectFeed {
    state: State,
    shared: Arc<Shared>,
    tell: Option<oneshot::Sender<DirectEnd>>,
    metrics: Arc<Metrics>,
}

/// The ends of a direct feed, as the transfer holds them.
pub(crate) struct DirectHold {
    pub(crate) cut: DirectCut,
    pub(crate) bytes: DirectBytes,
    pub(crate) told: oneshot::Receiver<DirectEnd>,
}

/// A direct feed of `source`, and the transfer's ends of it.
pub(crate) fn direct(source: Source, metrics: Arc<Metrics>) -> (DirectFeed, DirectHold) {
    let shared = Arc::new(Shared::default());
    let (tell, told) = oneshot::channel();
    let feed = DirectFeed {
        state: State::Reading(source),
        shared: shared.clone(),
        tell: Some(tell),
        metrics,
    };
    let hold = DirectHold {
        cut: DirectCut(shared.clone()),
        bytes: DirectBytes(shared),
        told,
    };
    (feed, hold)
}

impl DirectFeed {
    /// The next message for the response: data, the clean end, or `None` when it is to be cut
    /// (the upload failed, or the transfer dropped its [`DirectCut`]).
    pub(crate) fn poll_msg(&mut self, cx: &mut Context<'_>) -> Poll<Option<Msg>> {
        self.shared.waker.register(cx.waker());
        if let State::Reading(source) = &mut self.state {
            if self.shared.cut.load(Ordering::Acquire) {
                return Poll::Ready(None);
            }
            match ready!(source.poll_next(cx)) {
                Ok(Some(bytes)) => {
                    let len = bytes.len() as u64;
                    self.shared.bytes.fetch_add(len, Ordering::Relaxed);
                    self.metrics.relayed(len);
                    return Poll::Ready(Some(Msg::Data(bytes)));
                }
                Ok(None) => self.tell(DirectEnd::Ended, State::Ending),
                Err(e) => {
                    tracing::debug!(error = %e, "upload failed");
                    self.tell(DirectEnd::Failed, State::Failing);
                }
            }
        }
        let released = self.shared.released.load(Ordering::Acquire);
        let cut = self.shared.cut.load(Ordering::Acquire);
        match self.state {
            State::Ending if released => {
                self.state = State::Done;
                Poll::Ready(Some(Msg::End))
            }
            State::Ending | State::Failing if !cut => Poll::Pending,
            _ => Poll::Ready(None),
        }
    }

    fn tell(&mut self, end: DirectEnd, next: State) {
        self.state = next;
        if let Some(tell) = self.tell.take() {
            let _ = tell.send(end);
        }
    }
}

impl Drop for DirectFeed {
    fn drop(&mut self) {
        if let State::Reading(source) = std::mem::replace(&mut self.state, State::Done) {
            if let Some(tell) = self.tell.take() {
                let _ = tell.send(DirectEnd::Handed(source));
            }
        }
    }
}
