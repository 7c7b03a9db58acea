//! Streaming response bodies fed by channels.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::{mpsc, oneshot};

use super::direct::DirectFeed;

/// A message for one consumer's response: from the transfer's task, or from the upload itself
/// ([`super::direct`]).
pub enum Msg {
    Data(Bytes),
    /// Clean end of the upload (§3.3): the response ends normally.
    End,
}

/// Where a consumer's response gets its bytes.
pub(crate) enum Feed {
    /// From the transfer's task, which shares the upload out among the consumers.
    Channel(mpsc::Receiver<Msg>),
    /// From the upload itself (the only consumer of a streaming producer).
    Direct(DirectFeed),
}

impl Feed {
    /// `None`: the feed stopped without its end (the channel closed, the feed was cut).
    fn poll_msg(&mut self, cx: &mut Context<'_>) -> Poll<Option<Msg>> {
        match self {
            Feed::Channel(rx) => rx.poll_recv(cx),
            Feed::Direct(feed) => feed.poll_msg(cx),
        }
    }
}

/// A consumer's response body. Without a [`Msg::End`] before its feed stops (the producer
/// aborted) it yields an error, so hyper truncates the response (§3.3). Dropped before the end
/// (the consumer hung up, or its HTTP/2 stream was reset), it reports its index on the `gone`
/// channel.
pub struct ConsumerBody {
    feed: Feed,
    /// Gets what `ack` notes at the end ([`super::Ack::end`]).
    done: Option<oneshot::Sender<super::Ending>>,
    ack: super::Ack,
    gone: Option<(mpsc::UnboundedSender<usize>, usize)>,
    ended: bool,
    /// Bytes still expected when the producer declared a `Content-Length`: the bytes that
    /// reach it are the end (HTTP/1.1 stops polling the body there; on HTTP/2 they go in a
    /// DATA frame with `END_STREAM`: curl resets a stream whose `Content-Length` it has while
    /// its `END_STREAM` is missing, and the end must not wait for the upload's).
    remaining: Option<u64>,
    /// Bytes yielded so far.
    yielded: u64,
    /// Where the response stood when the body was made (before hyper queued the head) or last
    /// yielded (before hyper queues the data), to cut it only once that reached the socket.
    written: Written,
}

/// Whether what hyper queued of a response (its head, the data yielded last) reached the socket,
/// so that a cut doesn't drop it: HTTP/1.1 closes the connection with hyper's buffer unwritten,
/// HTTP/2 drops the frames a reset stream still has queued, and a consumer that got no head
/// reports a network failure instead of a cut stream (§3.3).
enum Written {
    /// How far the connection had written its responses then ([`crate::conn::ConnFd::sent`]).
    Sent(u64),
    /// Not a TCP connection to watch: one wait (hyper writes what it buffered when a body
    /// waits) has passed (`true`) or not.
    Waited(bool),
}

impl ConsumerBody {
    /// `done` fires when the body has yielded its end, with what `ack` noted then; `gone`
    /// gets `index` if dropped before. `length` is the forwarded `Content-Length`, if any.
    pub(crate) fn new(
        feed: Feed,
        done: oneshot::Sender<super::Ending>,
        ack: super::Ack,
        gone: (mpsc::UnboundedSender<usize>, usize),
        length: Option<u64>,
    ) -> Self {
        let (gone, index) = gone;
        let mut body = ConsumerBody {
            feed,
            done: Some(done),
            ack,
            gone: Some((gone, index)),
            ended: false,
            remaining: length,
            yielded: 0,
            written: Written::Waited(false),
        };
        body.mark_written();
        if length == Some(0) {
            // hyper never polls a body that is at its end from the start.
            body.end();
        }
        body
    }

    fn end(&mut self) {
        self.ended = true;
        self.mark_done();
    }

    /// Notes where the response stands (made, or yielding data).
    fn mark_written(&mut self) {
        self.written = match &self.ack {
            super::Ack::Tcp { conn, .. } => Written::Sent(conn.sent()),
            _ => Written::Waited(false),
        };
    }

    /// Ready once what hyper queued at the last mark reached the socket (or can't anymore).
    fn poll_written(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match (&mut self.written, &self.ack) {
            (Written::Sent(mark), super::Ack::Tcp { conn, .. }) => conn.poll_sent_since(*mark, cx),
            (Written::Waited(false), _) => {
                self.written = Written::Waited(true);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            _ => Poll::Ready(()),
        }
    }

    fn mark_done(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(self.ack.end(self.yielded));
        }
    }
}

impl Body for ConsumerBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match ready!(self.feed.poll_msg(cx)) {
            Some(Msg::Data(b)) => {
                self.mark_written();
                self.yielded += b.len() as u64;
                if let Some(rem) = self.remaining.as_mut() {
                    *rem = rem.saturating_sub(b.len() as u64);
                    if *rem == 0 {
                        self.end();
                    }
                }
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Some(Msg::End) => {
                self.end();
                Poll::Ready(None)
            }
            None => {
                ready!(self.poll_written(cx));
                self.ended = true;
                Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "the producer aborted the upload",
                ))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

impl Drop for ConsumerBody {
    fn drop(&mut self) {
        if self.done.is_some() {
            if let Some((gone, index)) = self.gone.take() {
                let _ = gone.send(index);
            }
        }
    }
}

/// The producer's status log (§3.2): lines sent on an unbounded channel (a few dozen bytes
/// per transfer); ends cleanly when every [`Log`] is dropped.
pub struct LogBody {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl Body for LogBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        Poll::Ready(ready!(self.rx.poll_recv(cx)).map(|b| Ok(Frame::data(b))))
    }
}

impl LogBody {
    /// Everything logged so far and not yet taken (for answers that aren't streamed).
    pub fn take_available(&mut self) -> String {
        let mut out = String::new();
        while let Ok(b) = self.rx.try_recv() {
            out.push_str(&String::from_utf8_lossy(&b));
        }
        out
    }
}

/// The writing end of a [`LogBody`].
#[derive(Clone)]
pub struct Log {
    tx: mpsc::UnboundedSender<Bytes>,
}

impl Log {
    /// A new log and the response body that streams it.
    pub fn new() -> (Log, LogBody) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Log { tx }, LogBody { rx })
    }

    /// Appends `line` and a newline.
    pub fn line(&self, line: impl AsRef<str>) {
        let _ = self.tx.send(Bytes::from(format!("{}\n", line.as_ref())));
    }

    /// Resolves when the response body was dropped: the producer's connection is gone.
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn body(rx: mpsc::Receiver<Msg>) -> ConsumerBody {
        let (done, _) = oneshot::channel();
        let (gone, _) = mpsc::unbounded_channel();
        ConsumerBody::new(
            Feed::Channel(rx),
            done,
            super::super::Ack::Ended,
            (gone, 0),
            None,
        )
    }

    /// Regression (CI, the Worker example's relay test): an abort seen on the first poll made
    /// hyper close the consumer's connection with the response head unsent. With no TCP
    /// connection to watch (`Ack::Ended`), the body waits once (waking itself) before the
    /// error, after the start and after data alike; `tests/cut.rs` covers TCP connections.
    #[test]
    fn an_abort_waits_once_so_hyper_writes_what_it_buffered() {
        let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        for data_first in [false, true] {
            let (tx, rx) = mpsc::channel(1);
            let mut b = body(rx);
            if data_first {
                tx.try_send(Msg::Data(Bytes::from_static(b"x"))).unwrap();
            }
            drop(tx);
            let mut b = Pin::new(&mut b);
            if data_first {
                let first = b.as_mut().poll_frame(&mut cx);
                assert!(matches!(first, Poll::Ready(Some(Ok(_)))));
            }
            let before = wakes.0.load(Ordering::SeqCst);
            assert!(b.as_mut().poll_frame(&mut cx).is_pending());
            assert_eq!(
                wakes.0.load(Ordering::SeqCst),
                before + 1,
                "it wakes itself"
            );
            assert!(matches!(
                b.as_mut().poll_frame(&mut cx),
                Poll::Ready(Some(Err(_)))
            ));
            assert!(b.is_end_stream());
        }
    }
}
