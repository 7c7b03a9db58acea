//! The request body type of every handler (`docs/PROTOCOL.md` §3.5, §3.8): hyper's body,
//! which, when a handler drops it unread (a refusal answered before the upload ended), is
//! read and discarded for a short while in the background instead of being cut.
//!
//! Cutting an unread body resets it: on HTTP/2 an `RST_STREAM(NO_ERROR)` right behind the
//! answer, which curl 7.88 reports as "(92) Stream error in the HTTP/2 framing layer" and
//! drops the answer with it; on HTTP/1.1 a close with unread bytes, which makes the kernel
//! send a TCP reset that can destroy the answer before the client reads it. Draining lets the
//! client read the answer and stop sending on its own (curl does: "HTTP error before end of
//! send, stop sending").

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// How long an abandoned request body is still read after its handler dropped it.
pub const DRAIN_FOR: Duration = Duration::from_secs(5);
/// How much of it is read (and discarded) at most.
pub const DRAIN_BYTES: u64 = 64 << 20;

/// A request body that drains itself when dropped before its end.
pub struct RequestBody {
    inner: Option<Incoming>,
    ended: bool,
}

impl RequestBody {
    pub fn new(inner: Incoming) -> RequestBody {
        RequestBody {
            inner: Some(inner),
            ended: false,
        }
    }
}

impl RequestBody {
    /// Drops the body now, without the background drain (the caller drained it already).
    pub fn cut(&mut self) {
        self.ended = true;
        self.inner = None;
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(|b| b.size_hint())
            .unwrap_or_default()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else {
            return;
        };
        if self.ended || body.is_end_stream() {
            return;
        }
        // Only inside the runtime (always, for a body hyper gave us).
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let drain = async {
                    let mut read = 0u64;
                    while let Some(Ok(frame)) = body.frame().await {
                        if let Ok(data) = frame.into_data() {
                            read += data.len() as u64;
                            if read >= DRAIN_BYTES {
                                break;
                            }
                        }
                    }
                };
                let _ = tokio::time::timeout(DRAIN_FOR, drain).await;
            });
        }
    }
}
