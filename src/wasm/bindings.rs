//! Own bindings to globals every target runtime has (browsers, workers, Node, Deno,
//! Cloudflare Workers) — never through `window` (`PROTOCOL.md` §10).

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::into_js;
use crate::client::error::Error;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch(url, init)`.
    #[wasm_bindgen(js_name = fetch)]
    pub fn global_fetch(url: &str, init: &JsValue) -> Promise;

    /// The global `setTimeout(handler, ms)`; returns the runtime's handle.
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout(handler: &Function, ms: f64) -> JsValue;

    /// The global `clearTimeout(handle)`.
    #[wasm_bindgen(js_name = clearTimeout)]
    pub fn clear_timeout(handle: &JsValue);
}

/// Milliseconds since the epoch (`Date.now()`).
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Resolves after `ms` milliseconds, and clears its timer when dropped before that (a
/// dropped [`sleep`] keeps its timer, and with it a Node or Deno process, alive until it
/// fires): for timers raced against other work.
pub struct Delay {
    fired: wasm_bindgen_futures::JsFuture,
    handle: JsValue,
}

impl Delay {
    pub fn new(ms: f64) -> Delay {
        let mut handle = JsValue::UNDEFINED;
        let promise = Promise::new(&mut |resolve, _reject| {
            handle = set_timeout(&resolve, ms);
        });
        Delay {
            fired: wasm_bindgen_futures::JsFuture::from(promise),
            handle,
        }
    }
}

impl std::future::Future for Delay {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.fired).poll(cx).map(|_| ())
    }
}

impl Drop for Delay {
    fn drop(&mut self) {
        clear_timeout(&self.handle);
    }
}

/// Resolves after `ms` milliseconds.
pub async fn sleep(ms: f64) {
    let promise = Promise::new(&mut |resolve, _reject| {
        set_timeout(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// True in a browser page (a global with a `document`), false in Node, Deno and workers.
pub fn in_page() -> bool {
    js_sys::Reflect::has(&js_sys::global(), &"document".into()).unwrap_or(false)
}

/// `provider[name]`, a function, or `UNSUPPORTED` naming the registering call (`setter`).
pub(crate) fn provider_member(
    provider: &JsValue,
    setter: &str,
    name: &str,
) -> Result<Function, JsValue> {
    Reflect::get(provider, &name.into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| {
            into_js(Error::usage(format!(
                "{setter}: the provider has no function `{name}`"
            )))
        })
}

#[wasm_bindgen]
extern "C" {
    /// A `ReadableStreamDefaultReader`.
    #[wasm_bindgen(js_name = ReadableStreamDefaultReader)]
    type StreamReader;
    /// A `ReadableStream`, as far as reading it goes.
    type Readable;
    #[wasm_bindgen(method, catch, js_name = getReader)]
    fn get_reader(this: &Readable) -> Result<StreamReader, JsValue>;
    #[wasm_bindgen(method)]
    fn read(this: &StreamReader) -> Settling;
    #[wasm_bindgen(method)]
    fn cancel(this: &StreamReader) -> Settling;
    #[wasm_bindgen(method, js_name = releaseLock)]
    fn release_lock(this: &StreamReader);

    /// A promise settled through callbacks owned by JavaScript.
    type Settling;
    /// `promise.then(on_value, on_error)`.
    #[wasm_bindgen(method, js_name = then)]
    fn then_call(this: &Settling, on_value: &JsValue, on_error: &JsValue) -> JsValue;

    /// What `read()` resolves with.
    type ReadResult;
    #[wasm_bindgen(method, getter)]
    fn done(this: &ReadResult) -> bool;
    #[wasm_bindgen(method, getter)]
    fn value(this: &ReadResult) -> JsValue;
}

/// Where a [`JsStreamReader`]'s callbacks put a read's outcome.
#[derive(Default)]
struct ReadSlot {
    outcome: std::cell::RefCell<Option<Result<JsValue, JsValue>>>,
    waker: std::cell::RefCell<Option<std::task::Waker>>,
}

impl ReadSlot {
    fn settle(&self, outcome: Result<JsValue, JsValue>) {
        *self.outcome.borrow_mut() = Some(outcome);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// A JavaScript `ReadableStream` read from Rust, chunk by chunk (errors are JavaScript
/// exceptions). Every read settles through the same two callbacks, made once per stream:
/// `JsFuture` makes a pair per promise, each registered with the runtime's
/// `FinalizationRegistry` (issue #27: two per chunk, on every side of a transfer; a plain
/// Node transfer costs each side ~5 % less CPU without them). At its end the stream's lock is
/// released; dropped before, it cancels the stream.
pub struct JsStreamReader {
    reader: Option<StreamReader>,
    slot: std::rc::Rc<ReadSlot>,
    on_value: JsValue,
    on_error: JsValue,
    reading: bool,
}

impl JsStreamReader {
    /// Locks `stream` to a new reader; a stream already locked is an error.
    pub fn new(stream: &web_sys::ReadableStream) -> Result<JsStreamReader, JsValue> {
        let reader = stream.unchecked_ref::<Readable>().get_reader()?;
        let slot = std::rc::Rc::new(ReadSlot::default());
        let settle = |ok: bool| {
            let slot = slot.clone();
            // owned by JavaScript from here: a read still pending when this reader is
            // dropped settles into a slot nobody polls
            Closure::<dyn FnMut(JsValue)>::new(move |v| {
                slot.settle(if ok { Ok(v) } else { Err(v) })
            })
            .into_js_value()
        };
        Ok(JsStreamReader {
            reader: Some(reader),
            on_value: settle(true),
            on_error: settle(false),
            slot,
            reading: false,
        })
    }
}

impl futures::Stream for JsStreamReader {
    type Item = Result<JsValue, JsValue>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        let Some(reader) = &this.reader else {
            return Poll::Ready(None);
        };
        let outcome = this.slot.outcome.borrow_mut().take();
        match outcome {
            Some(Ok(v)) => {
                this.reading = false;
                let result: ReadResult = v.unchecked_into();
                if result.done() {
                    reader.release_lock(); // the end: nothing to cancel
                    this.reader = None;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Ok(result.value())))
            }
            Some(Err(e)) => {
                this.reading = false;
                reader.release_lock();
                this.reader = None;
                Poll::Ready(Some(Err(e)))
            }
            None => {
                *this.slot.waker.borrow_mut() = Some(cx.waker().clone());
                if !this.reading {
                    this.reading = true;
                    reader.read().then_call(&this.on_value, &this.on_error);
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for JsStreamReader {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            // a rejection of the cancel (a stream that errored meanwhile) concerns nobody
            let ignore = Closure::once_into_js(|_: JsValue| {});
            reader.cancel().then_call(&JsValue::UNDEFINED, &ignore);
        }
    }
}
