//! The one crossing between the SDK's error type (`crate::client::Error`) and JavaScript:
//! [`to_js`] builds an `HttpipeError` (the class `js/api.js` registers at init) at the
//! `#[wasm_bindgen]` boundary; [`failure`] and [`coded`] read a JavaScript exception back
//! into the core's terms.

use std::cell::RefCell;
use std::sync::Arc;

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::client::error::{Cause, Error, ErrorCode, Failure, StopReason};

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the `HttpipeError` constructor `(message, code, options)`; called once by the
/// package entry at init.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(ctor: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(ctor));
}

/// Builds an `HttpipeError` (or a plain `Error` with `code` before registration).
pub fn js_error(code: ErrorCode, message: &str, cause: Option<&JsValue>) -> JsValue {
    let options = Object::new();
    if let Some(cause) = cause {
        let _ = Reflect::set(&options, &"cause".into(), cause);
    }
    let ctor = ERROR_CLASS.with(|c| c.borrow().clone());
    if let Some(ctor) = ctor {
        let args = Array::of3(&message.into(), &code.as_str().into(), &options);
        if let Ok(err) = Reflect::construct(&ctor, &args) {
            return err;
        }
    }
    let err = js_sys::Error::new(message);
    let _ = Reflect::set(&err, &"code".into(), &code.as_str().into());
    let _ = Reflect::set(&err, &"name".into(), &"HttpipeError".into());
    if let Some(cause) = cause {
        let _ = Reflect::set(&err, &"cause".into(), cause);
    }
    err.into()
}

/// The SDK error as a JavaScript `HttpipeError`; its cause (if any) becomes `cause`.
pub fn to_js(e: &Error) -> JsValue {
    let cause = e.cause().map(|c| {
        let err = js_sys::Error::new(&c.to_string());
        JsValue::from(err)
    });
    let err = js_error(e.code, &e.message, cause.as_ref());
    if let Some(peer) = e.peer() {
        // the other side's code (PROTOCOL.md §12.2): `HttpipeError.peerCode`
        let _ = Reflect::set(&err, &"peerCode".into(), &peer.as_str().into());
    }
    err
}

/// `to_js` for `map_err`.
pub fn into_js(e: Error) -> JsValue {
    to_js(&e)
}

/// True if `v` already carries one of our codes (so it is passed on unchanged).
pub fn has_code(v: &JsValue) -> bool {
    code_of(v).is_some()
}

/// The `code` of an `HttpipeError`.
pub fn code_of(v: &JsValue) -> Option<String> {
    if !v.is_object() {
        return None;
    }
    let name = Reflect::get(v, &"name".into()).ok()?.as_string()?;
    if name != "HttpipeError" {
        return None;
    }
    Reflect::get(v, &"code".into()).ok()?.as_string()
}

/// An `HttpipeError` read back as the SDK error (e.g. a source that re-throws ours).
pub fn coded(v: &JsValue) -> Option<Error> {
    let code = ErrorCode::parse(&code_of(v)?)?;
    let message = Reflect::get(v, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default();
    Some(Error::new(code, message))
}

/// The `message` of a JavaScript error (or its string form).
pub fn message_of(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        let msg: String = e.message().into();
        // undici puts the interesting part ("ECONNREFUSED", "other side closed") in `cause`.
        if let Ok(cause) = Reflect::get(v, &"cause".into()) {
            if let Some(c) = cause.dyn_ref::<js_sys::Error>() {
                let cm: String = c.message().into();
                return format!("{msg}: {cm}");
            }
        }
        return msg;
    }
    v.as_string().unwrap_or_else(|| format!("{v:?}"))
}

/// A JavaScript exception described in words (the core's [`Cause`]).
pub fn cause_of(v: &JsValue) -> Cause {
    let name = Reflect::get(v, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .filter(|_| v.is_object())
        .unwrap_or_default();
    Cause {
        name,
        message: message_of(v),
    }
}

/// True for a `TypeError` (what `fetch` rejects with on a network failure).
pub fn is_type_error(v: &JsValue) -> bool {
    v.is_instance_of::<js_sys::TypeError>()
        || Reflect::get(v, &"name".into())
            .ok()
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == "TypeError")
}

/// A failed request or stream read, in the core's terms, given why the operation stopped.
pub fn failure(v: &JsValue, stop: StopReason) -> Failure {
    Failure {
        stop,
        network: is_type_error(v),
        coded: coded(v),
        cause: Some(Arc::new(cause_of(v))),
    }
}

/// A JavaScript exception as the SDK error: ours keep their code, others get `fallback`.
pub fn from_js(v: &JsValue, stop: StopReason, fallback: ErrorCode, what: &str) -> Error {
    Failure {
        network: false,
        ..failure(v, stop)
    }
    .into_error(fallback, what)
}
