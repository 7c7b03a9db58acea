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
