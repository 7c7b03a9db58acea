//! The I/O half of presence (`PROTOCOL.md` §12.5, decided in [`crate::client::presence`]; the
//! mirror of `native/presence.rs`): the producer's presence calls beside its transfer, and the
//! consumer's checks beside its `GET` while that waits for the response head.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

use futures::future::Either;
use wasm_bindgen_futures::spawn_local;

use super::bindings::{now_ms, sleep, Delay};
use super::http::exchange;
use super::stop::Abort;
use crate::client::error::Error;
use crate::client::presence::{PresenceCheck, PresenceKeeper, PresenceStep};

/// The stop of the call that is out, if one is.
type CallCut = Rc<RefCell<Option<Rc<dyn Fn()>>>>;

/// The producer's presence calls, made in the background until this is dropped (the verdict),
/// which also cancels the call that is out.
pub struct PresenceTask {
    stopped: Rc<Cell<bool>>,
    cut: CallCut,
}

impl Drop for PresenceTask {
    fn drop(&mut self) {
        self.stopped.set(true);
        if let Some(cut) = self.cut.borrow_mut().take() {
            cut();
        }
    }
}

/// The consumer's word that it gave up before its stream started (§12.5), from the presence
/// calls to the driver, which hands it to the core (`Producer::on_peer_left`).
#[derive(Clone, Default)]
pub struct PeerLeft(Rc<RefCell<Option<Error>>>);

impl PeerLeft {
    pub fn take(&self) -> Option<Error> {
        self.0.borrow_mut().take()
    }
}

/// Starts making the calls `keeper` names. When the consumer's word that it left comes, it
/// goes to `left` and the transfer's requests are stopped (`stop_transfer`).
pub fn keep(
    mut keeper: PresenceKeeper,
    stop_transfer: Rc<dyn Fn()>,
    left: PeerLeft,
) -> PresenceTask {
    let stopped = Rc::new(Cell::new(false));
    let cut: CallCut = Rc::new(RefCell::new(None));
    let (done, current) = (stopped.clone(), cut.clone());
    spawn_local(async move {
        while !done.get() {
            match keeper.poll(now_ms()) {
                PresenceStep::Call(req) => {
                    // a controller per call: a call's own timeout must not stop the next one
                    let Ok(mut abort) = Abort::new(None) else {
                        return;
                    };
                    *current.borrow_mut() = Some(abort.cutter());
                    let answer = exchange(&req, &mut abort, None).await;
                    current.borrow_mut().take();
                    match answer {
                        Ok((status, headers, _)) => keeper.on_answer(status, &headers, now_ms()),
                        Err(f) => keeper.on_failure(f, now_ms()),
                    }
                }
                PresenceStep::WakeAt(t) => sleep((t - now_ms()).max(0.0)).await,
                PresenceStep::PeerLeft(e) => {
                    *left.0.borrow_mut() = Some(e);
                    stop_transfer();
                    return;
                }
                PresenceStep::Vanished(_) => return,
            }
        }
    });
    PresenceTask { stopped, cut }
}

/// `head` (a `GET` waiting for its response head), with the checks of `check` beside it
/// (stopped with `signal`): the head's outcome, or the error that says the producer vanished
/// (the caller then aborts the `GET`).
pub async fn checked<T>(
    check: Option<PresenceCheck>,
    signal: Option<web_sys::AbortSignal>,
    head: impl Future<Output = T>,
) -> Result<T, Error> {
    let Some(mut check) = check else {
        return Ok(head.await);
    };
    futures::pin_mut!(head);
    loop {
        match check.poll(now_ms()) {
            // (a check never says its consumer left)
            PresenceStep::Vanished(e) | PresenceStep::PeerLeft(e) => return Err(e),
            PresenceStep::WakeAt(t) => {
                let timer = Delay::new((t - now_ms()).max(0.0));
                if let Either::Left((r, _)) = futures::future::select(&mut head, timer).await {
                    return Ok(r);
                }
            }
            PresenceStep::Call(req) => {
                let mut abort = Abort::new(signal.clone())?;
                let call = Box::pin(async move { exchange(&req, &mut abort, None).await });
                match futures::future::select(&mut head, call).await {
                    Either::Left((r, _)) => return Ok(r),
                    Either::Right((Ok((status, _, _)), _)) => check.on_answer(status, now_ms()),
                    Either::Right((Err(f), _)) => check.on_failure(f, now_ms()),
                }
            }
        }
    }
}
