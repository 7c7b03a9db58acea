//! Stopping an operation from outside the protocol: the caller's abort, or the adapter itself
//! when an operation ends. The first reason wins; everything that waits selects on
//! [`Stop::stopped`], and a streaming request body errors out at once (so the relay truncates
//! the consumer's response instead of ending it cleanly, `PROTOCOL.md` §3.3).

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::client::error::{Error, ErrorCode, Failure, StopReason};

#[derive(Clone, Default)]
pub(crate) struct Stop {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    reason: Mutex<(StopReason, Option<String>)>,
    token: CancellationToken,
}

impl Stop {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Stops with `reason` (ignored if already stopped); `why` is said in messages.
    pub(crate) fn stop(&self, reason: StopReason, why: Option<String>) {
        {
            let mut r = self
                .inner
                .reason
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if r.0 != StopReason::None {
                return;
            }
            *r = (reason, why);
        }
        self.inner.token.cancel();
    }

    pub(crate) fn reason(&self) -> StopReason {
        self.inner
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0
    }

    /// A token cancelled with this stop (and cancellable on its own).
    pub(crate) fn child(&self) -> CancellationToken {
        self.inner.token.child_token()
    }

    /// Resolves once stopped.
    pub(crate) async fn stopped(&self) {
        self.inner.token.cancelled().await;
    }

    /// The error to report for an operation (`what`) that was stopped: the core's for the
    /// stop ([`Failure::into_error`]), with what the stop said.
    pub(crate) fn error(&self, what: &str) -> Error {
        let (reason, why) = self
            .inner
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut e = Failure::stopped(reason, None).into_error(ErrorCode::Aborted, what);
        if let Some(w) = why {
            e.message = format!("{} ({w})", e.message);
        }
        e
    }
}
