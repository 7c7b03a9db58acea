//! The I/O half of presence (`PROTOCOL.md` §12.5, decided in [`crate::client::presence`]; the
//! mirror of `wasm/presence.rs`): the producer's presence calls beside its transfer, and the
//! consumer's checks beside its `GET` while that waits for the response head.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::http::{duration_of_ms, text_request, HeaderView};
use super::stop::Stop;
use crate::client::error::{Error, StopReason};
use crate::client::presence::{PresenceCheck, PresenceKeeper, PresenceStep};

/// Milliseconds since `clock`.
fn ms(clock: Instant) -> f64 {
    clock.elapsed().as_secs_f64() * 1000.0
}

/// Sleeps until `at_ms` on `clock`.
async fn sleep_until(clock: Instant, at_ms: f64) {
    tokio::time::sleep(duration_of_ms((at_ms - ms(clock)).max(0.0))).await;
}

/// The consumer's word that it gave up before its stream started (§12.5), from the presence
/// calls to the driver, which hands it to the core (`Producer::on_peer_left`).
#[derive(Clone, Default)]
pub(crate) struct PeerLeft(Arc<Mutex<Option<Error>>>);

impl PeerLeft {
    fn set(&self, e: Error) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
    }

    pub(crate) fn take(&self) -> Option<Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Makes the producer's presence calls as `keeper` says, for as long as the task runs (the
/// driver aborts it at the verdict). When the consumer's word that it left comes, it goes to
/// `left` and the transfer's requests are stopped (`stop`).
pub(crate) async fn keep(
    http: reqwest::Client,
    mut keeper: PresenceKeeper,
    stop: Stop,
    left: PeerLeft,
) {
    let clock = Instant::now();
    let own = Stop::new();
    loop {
        match keeper.poll(ms(clock)) {
            PresenceStep::Call(req) => match text_request(&http, &req, None, &own).await {
                Ok(a) => keeper.on_answer(a.status, &HeaderView(&a.headers), ms(clock)),
                Err(f) => keeper.on_failure(f, ms(clock)),
            },
            PresenceStep::WakeAt(t) => sleep_until(clock, t).await,
            PresenceStep::PeerLeft(e) => {
                left.set(e);
                stop.stop(StopReason::Internal, Some("the receiver left".into()));
                return;
            }
            PresenceStep::Vanished(_) => return,
        }
    }
}

/// `head` (a `GET` waiting for its response head), with the checks of `check` beside it
/// (their times on `clock`): the head's outcome, or the error that says the producer vanished
/// (the `GET` is then dropped).
pub(crate) async fn checked<T>(
    http: &reqwest::Client,
    check: Option<PresenceCheck>,
    clock: Instant,
    head: impl Future<Output = T>,
) -> Result<T, Error> {
    let Some(mut check) = check else {
        return Ok(head.await);
    };
    tokio::pin!(head);
    let stop = Stop::new();
    loop {
        match check.poll(ms(clock)) {
            // (a check never says its consumer left)
            PresenceStep::Vanished(e) | PresenceStep::PeerLeft(e) => return Err(e),
            PresenceStep::WakeAt(t) => tokio::select! {
                r = &mut head => return Ok(r),
                _ = sleep_until(clock, t) => {}
            },
            PresenceStep::Call(req) => tokio::select! {
                r = &mut head => return Ok(r),
                a = text_request(http, &req, None, &stop) => match a {
                    Ok(a) => check.on_answer(a.status, ms(clock)),
                    Err(f) => check.on_failure(f, ms(clock)),
                },
            },
        }
    }
}
