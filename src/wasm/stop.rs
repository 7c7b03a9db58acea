//! One `AbortController` per operation: fired by the caller's `AbortSignal`, by a timeout
//! the core asked for (`Request::timeout_ms`), or internally (to stop an upload once the
//! consumer left). Every request of the operation uses its signal, so aborting it aborts the
//! HTTP requests and the peer sees the abort.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal};

use super::bindings::{clear_timeout, set_timeout};
use super::error::failure;
use crate::client::error::{Error, ErrorCode, Failure, StopReason};
use crate::client::request::{OnTimeout, Request};

pub struct Abort {
    controller: AbortController,
    user: Option<AbortSignal>,
    listener: Option<Closure<dyn FnMut()>>,
    timer: Option<(JsValue, Closure<dyn FnMut()>)>,
    reason: Rc<Cell<StopReason>>,
    /// What the caller's signal does before it aborts the requests ([`Abort::set_first`]).
    first: Rc<RefCell<Option<Hook>>>,
}

/// What runs when the caller's signal fires, before the requests are aborted.
pub type Hook = Rc<dyn Fn()>;

fn js_failed(e: JsValue) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!(
            "the runtime refused an AbortController: {}",
            super::error::message_of(&e)
        ),
    )
}

impl Abort {
    /// Links a new controller to the caller's `signal`; fails with `ABORTED` if it already fired.
    pub fn new(user: Option<AbortSignal>) -> Result<Abort, Error> {
        let controller = AbortController::new().map_err(js_failed)?;
        let reason = Rc::new(Cell::new(StopReason::None));
        let mut abort = Abort {
            controller,
            user: None,
            listener: None,
            timer: None,
            reason,
            first: Rc::default(),
        };
        if let Some(signal) = user {
            if signal.aborted() {
                return Err(Error::new(
                    ErrorCode::Aborted,
                    "the operation was aborted by its AbortSignal",
                ));
            }
            let controller = abort.controller.clone();
            let reason = abort.reason.clone();
            let first = abort.first.clone();
            let listener = Closure::<dyn FnMut()>::new(move || {
                if reason.get() == StopReason::None {
                    reason.set(StopReason::User);
                }
                let hook = first.borrow().clone();
                if let Some(h) = hook {
                    h();
                }
                controller.abort();
            });
            signal
                .add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref())
                .map_err(js_failed)?;
            abort.listener = Some(listener);
            abort.user = Some(signal);
        }
        Ok(abort)
    }

    /// The signal to pass to every request of the operation.
    pub fn signal(&self) -> AbortSignal {
        self.controller.signal()
    }

    pub fn reason(&self) -> StopReason {
        self.reason.get()
    }

    /// `hook` runs when the caller's signal fires, before the requests are aborted (`None`:
    /// nothing): a streaming upload errors its body first where that is what cuts it
    /// (`PROTOCOL.md` §11.2 step 5, [`super::body::BodyStop::first`]).
    pub fn set_first(&self, hook: Option<Hook>) {
        *self.first.borrow_mut() = hook;
    }

    /// A shared view of the reason, for streams that must stop once the operation is aborted.
    pub fn reason_cell(&self) -> Rc<Cell<StopReason>> {
        self.reason.clone()
    }

    /// Stops the operation's requests (first reason wins).
    pub fn abort_internal(&self) {
        if self.reason.get() == StopReason::None {
            self.reason.set(StopReason::Internal);
        }
        self.controller.abort();
    }

    /// A handle that does [`Abort::abort_internal`] from inside a stream (the body of an
    /// upload, which outlives any borrow of `self`).
    pub fn cutter(&self) -> Rc<dyn Fn()> {
        let controller = self.controller.clone();
        let reason = self.reason.clone();
        Rc::new(move || {
            if reason.get() == StopReason::None {
                reason.set(StopReason::Internal);
            }
            controller.abort();
        })
    }

    /// Fires [`StopReason::Timeout`] after `ms` unless [`Abort::disarm_timeout`] comes first.
    pub fn arm_timeout(&mut self, ms: f64) {
        self.disarm_timeout();
        let controller = self.controller.clone();
        let reason = self.reason.clone();
        let cb = Closure::<dyn FnMut()>::new(move || {
            if reason.get() == StopReason::None {
                reason.set(StopReason::Timeout);
                controller.abort();
            }
        });
        let handle = set_timeout(cb.as_ref().unchecked_ref(), ms);
        self.timer = Some((handle, cb));
    }

    pub fn disarm_timeout(&mut self) {
        if let Some((handle, _cb)) = self.timer.take() {
            clear_timeout(&handle);
        }
    }

    /// Arms what `req.timeout_ms` means ([`OnTimeout`], decided by the core): the operation's
    /// timeout for a wait for a peer ([`Abort::disarm_timeout`] after), or, for a request that
    /// would hang, the timeout of a controller of its own (returned; linked to this one), which
    /// stops that request alone.
    pub fn arm_for(&mut self, req: &Request) -> Option<Abort> {
        let ms = req.timeout_ms?;
        if req.on_timeout == OnTimeout::Hung {
            if let Ok(mut own) = Abort::new(Some(self.signal())) {
                own.arm_timeout(ms);
                return Some(own);
            }
        }
        self.arm_timeout(ms);
        None
    }

    /// [`Abort::failure`] of a request armed with [`Abort::arm_for`]: the timeout of its own
    /// controller is [`Failure::timed_out`].
    pub fn failure_of(&self, req: &Request, own: &Option<Abort>, e: &JsValue) -> Failure {
        match own {
            Some(o) if o.reason() == StopReason::Timeout => Failure::timed_out(req),
            _ => self.failure(e),
        }
    }

    /// A JavaScript failure of one of this operation's requests, in the core's terms.
    pub fn failure(&self, e: &JsValue) -> Failure {
        failure(e, self.reason.get())
    }
}

impl Drop for Abort {
    fn drop(&mut self) {
        self.disarm_timeout();
        if let (Some(signal), Some(listener)) = (&self.user, &self.listener) {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
    }
}
