//! A streaming upload's request body, stopped so that the upload is cut, never ended
//! (`PROTOCOL.md` §10, §11.2 step 5): the body is a JavaScript `ReadableStream` whose controller
//! this side keeps, and a stop errors it and aborts the request in the order the core names
//! for this runtime ([`StopOrder`]: Chromium resets an HTTP/2 upload whose body errored but
//! ends an aborted one cleanly; workerd the other way round).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, spawn_local};
use web_sys::ReadableStream;

use super::chunks::ByteStream;
use super::error::to_js as error_to_js;
use crate::client::error::{Error, ErrorCode};
use crate::client::transport::StopOrder;

#[wasm_bindgen]
extern "C" {
    /// A `ReadableStreamDefaultController` (the three methods used here).
    type StreamController;

    #[wasm_bindgen(method, catch)]
    fn enqueue(this: &StreamController, chunk: &JsValue) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch)]
    fn close(this: &StreamController) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch)]
    fn error(this: &StreamController, e: &JsValue) -> Result<(), JsValue>;
}

/// Stops one upload: its body's controller (until the body ended) and the request's abort.
pub struct BodyStop {
    controller: RefCell<Option<StreamController>>,
    order: StopOrder,
    abort: Rc<dyn Fn()>,
}

impl BodyStop {
    /// Stops the upload so that it is cut: errors the body with `reason` and aborts the
    /// request, in the core's order. After an abort the body errors a microtask later, once
    /// the runtime has taken the abort (as a rejected `pull` would): workerd, which ends a
    /// request whose body errors, must see the abort first. The body always errors in the
    /// end: a body left pending kept a Node `fetch` from settling.
    pub fn stop(self: &Rc<Self>, reason: &JsValue) {
        match self.order {
            StopOrder::BodyFirst => {
                self.error(reason);
                (self.abort)();
            }
            StopOrder::AbortFirst => {
                (self.abort)();
                let (me, reason) = (self.clone(), reason.clone());
                spawn_local(async move { me.error(&reason) });
            }
        }
    }

    /// A chunk of the body failed with `reason` (the source failed, or the operation
    /// stopped): [`BodyStop::stop`], where after an abort the `pull` rejects — the stream's
    /// own way to error, a microtask after the abort.
    fn failed(&self, reason: JsValue) -> Result<JsValue, JsValue> {
        match self.order {
            StopOrder::BodyFirst => {
                self.error(&reason);
                (self.abort)();
                Ok(JsValue::UNDEFINED)
            }
            StopOrder::AbortFirst => {
                (self.abort)();
                self.release();
                Err(reason)
            }
        }
    }

    /// Errors the body only (the caller's abort follows: [`BodyStop::first`]).
    fn error(&self, reason: &JsValue) {
        if let Some(c) = self.controller.borrow_mut().take() {
            let _ = c.error(reason);
        }
    }

    /// What a stop of the whole operation (the caller's `AbortSignal`) does to this body
    /// before it aborts the requests: errors it where that must come first (`BodyFirst`).
    pub fn first(self: &Rc<Self>) -> Option<Rc<dyn Fn()>> {
        if self.order != StopOrder::BodyFirst {
            return None;
        }
        let me = self.clone();
        Some(Rc::new(move || {
            me.error(&error_to_js(&Error::new(
                ErrorCode::Aborted,
                "the upload was aborted by its AbortSignal",
            )))
        }))
    }

    /// The upload is over: the controller is let go (it would keep the body alive).
    pub fn release(&self) {
        self.controller.borrow_mut().take();
    }
}

/// `stream` as the request body of a streaming upload (pull-based, no queue: the source is
/// read only as the HTTP client asks), with its [`BodyStop`]; `abort` aborts the request. A
/// chunk error (the source failed, or the operation stopped) stops the upload.
pub fn upload_body(
    stream: ByteStream,
    order: StopOrder,
    abort: Rc<dyn Fn()>,
) -> Result<(ReadableStream, Rc<BodyStop>), JsValue> {
    let stop = Rc::new(BodyStop {
        controller: RefCell::new(None),
        order,
        abort,
    });
    let source = Rc::new(RefCell::new(Some(stream)));
    let cancelled = Rc::new(Cell::new(false));
    let underlying = Object::new();

    let s = stop.clone();
    let start = Closure::once_into_js(move |c: JsValue| {
        *s.controller.borrow_mut() = Some(c.unchecked_into());
    });
    Reflect::set(&underlying, &"start".into(), &start)?;

    let (s, src, gone) = (stop.clone(), source.clone(), cancelled.clone());
    let pull = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |_| {
        let (stop, source, cancelled) = (s.clone(), src.clone(), gone.clone());
        future_to_promise(async move {
            let Some(mut stream) = source.borrow_mut().take() else {
                return Ok(JsValue::UNDEFINED);
            };
            let next = stream.next().await;
            if cancelled.get() {
                return Ok(JsValue::UNDEFINED);
            }
            match next {
                Some(Ok(chunk)) => {
                    *source.borrow_mut() = Some(stream);
                    if let Some(c) = stop.controller.borrow().as_ref() {
                        let _ = c.enqueue(&chunk);
                    }
                }
                Some(Err(e)) => return stop.failed(error_to_js(&e)),
                None => {
                    if let Some(c) = stop.controller.borrow_mut().take() {
                        let _ = c.close();
                    }
                }
            }
            Ok(JsValue::UNDEFINED)
        })
    });
    Reflect::set(&underlying, &"pull".into(), &pull.into_js_value())?;

    let (s, src, gone) = (stop.clone(), source, cancelled);
    let cancel = Closure::<dyn FnMut(JsValue)>::new(move |_| {
        gone.set(true);
        src.borrow_mut().take();
        s.release();
    });
    Reflect::set(&underlying, &"cancel".into(), &cancel.into_js_value())?;

    let strategy = Object::new();
    Reflect::set(&strategy, &"highWaterMark".into(), &0.into())?;
    let ctor: Function =
        Reflect::get(&js_sys::global(), &"ReadableStream".into())?.unchecked_into();
    let body = Reflect::construct(&ctor, &Array::of2(&underlying, &strategy))?;
    Ok((body.unchecked_into(), stop))
}
