//! One `AbortController` per operation: fired by the caller's `AbortSignal`, by the
//! rendezvous timeout, or internally (to stop an upload once the consumer left). Every request
//! of the operation uses its signal, so aborting it aborts the HTTP requests and the peer sees
//! the abort.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal};

use super::bindings::{clear_timeout, set_timeout};
use super::error::{has_code, js_error, message_of};
use crate::client::error::ErrorCode;

/// Why the operation's controller fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    None,
    /// The caller's signal.
    User,
    /// The `timeout` option elapsed while waiting for the peer.
    Timeout,
    /// The SDK stopped the operation itself (the error is reported separately).
    Internal,
}

pub struct Abort {
    controller: AbortController,
    user: Option<AbortSignal>,
    listener: Option<Closure<dyn FnMut()>>,
    timer: Option<(JsValue, Closure<dyn FnMut()>)>,
    reason: Rc<Cell<Reason>>,
}

impl Abort {
    /// Links a new controller to the caller's `signal`; fails with `ABORTED` if it already fired.
    pub fn new(user: Option<AbortSignal>) -> Result<Abort, JsValue> {
        let controller = AbortController::new()?;
        let reason = Rc::new(Cell::new(Reason::None));
        let mut abort = Abort {
            controller,
            user: None,
            listener: None,
            timer: None,
            reason,
        };
        if let Some(signal) = user {
            if signal.aborted() {
                return Err(js_error(
                    ErrorCode::Aborted,
                    "the operation was aborted by its AbortSignal",
                    Some(&signal.reason()),
                ));
            }
            let controller = abort.controller.clone();
            let reason = abort.reason.clone();
            let listener = Closure::<dyn FnMut()>::new(move || {
                if reason.get() == Reason::None {
                    reason.set(Reason::User);
                }
                controller.abort();
            });
            signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref())?;
            abort.listener = Some(listener);
            abort.user = Some(signal);
        }
        Ok(abort)
    }

    /// The signal to pass to every request of the operation.
    pub fn signal(&self) -> AbortSignal {
        self.controller.signal()
    }

    pub fn reason(&self) -> Reason {
        self.reason.get()
    }

    /// A shared view of the reason, for streams that must stop once the operation is aborted.
    pub fn reason_cell(&self) -> Rc<Cell<Reason>> {
        self.reason.clone()
    }

    /// Stops the operation's requests (first reason wins).
    pub fn abort_internal(&self) {
        if self.reason.get() == Reason::None {
            self.reason.set(Reason::Internal);
        }
        self.controller.abort();
    }

    /// Fires `CONNECT_TIMEOUT` after `seconds` unless [`Abort::disarm_timeout`] comes first.
    pub fn arm_timeout(&mut self, seconds: f64) {
        self.disarm_timeout();
        let controller = self.controller.clone();
        let reason = self.reason.clone();
        let cb = Closure::<dyn FnMut()>::new(move || {
            if reason.get() == Reason::None {
                reason.set(Reason::Timeout);
                controller.abort();
            }
        });
        let handle = set_timeout(cb.as_ref().unchecked_ref(), seconds * 1000.0);
        self.timer = Some((handle, cb));
    }

    pub fn disarm_timeout(&mut self) {
        if let Some((handle, _cb)) = self.timer.take() {
            clear_timeout(&handle);
        }
    }

    /// Turns a JavaScript failure into an `HttpipeError`: ours pass unchanged; after an abort
    /// the abort's code; else `fallback` with `what` and the original message.
    pub fn map_error(&self, err: JsValue, fallback: ErrorCode, what: &str) -> JsValue {
        if has_code(&err) {
            return err;
        }
        match self.reason.get() {
            Reason::User => js_error(
                ErrorCode::Aborted,
                &format!("{what}: aborted by the AbortSignal"),
                Some(&err),
            ),
            Reason::Timeout => js_error(
                ErrorCode::ConnectTimeout,
                &format!("{what}: no peer arrived within the timeout"),
                Some(&err),
            ),
            _ => js_error(
                fallback,
                &format!("{what}: {}", message_of(&err)),
                Some(&err),
            ),
        }
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
