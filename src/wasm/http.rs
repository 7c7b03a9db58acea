//! HTTP requests through the global `fetch` (`PROTOCOL.md` §10): headers, streaming request
//! bodies with `duplex: 'half'` set through `Reflect` (web-sys has no setter), response text,
//! and feature detection of streaming uploads without a request.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, ReadableStream, Response};

use super::bindings::global_fetch;

/// One request.
pub struct Req<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub signal: &'a AbortSignal,
    /// A complete body (`Uint8Array`, `Blob`, string) or a `ReadableStream` when `streaming`.
    pub body: Option<JsValue>,
    pub streaming: bool,
}

/// Sends the request; `Err` is the raw JavaScript rejection (a `TypeError` on network
/// failure, an `AbortError` after an abort).
pub async fn fetch(req: Req<'_>) -> Result<Response, JsValue> {
    let init = Object::new();
    Reflect::set(&init, &"method".into(), &req.method.into())?;
    let headers = Headers::new()?;
    for (k, v) in req.headers {
        headers.append(k, v)?;
    }
    Reflect::set(&init, &"headers".into(), &headers)?;
    Reflect::set(&init, &"signal".into(), req.signal)?;
    if let Some(body) = &req.body {
        Reflect::set(&init, &"body".into(), body)?;
    }
    if req.streaming {
        Reflect::set(&init, &"duplex".into(), &"half".into())?;
    }
    let resp = JsFuture::from(global_fetch(req.url, &init)).await?;
    resp.dyn_into::<Response>()
}

/// The response body as text (lossy UTF-8), at most `limit` bytes; errors become `Err`.
pub async fn text(resp: &Response, limit: usize) -> Result<String, JsValue> {
    let mut out = Vec::new();
    if let Some(body) = resp.body() {
        let mut s = wasm_streams::ReadableStream::from_raw(body).into_stream();
        while let Some(chunk) = s.next().await {
            let chunk: Uint8Array = chunk?.dyn_into()?;
            if out.len() < limit {
                out.extend(chunk.to_vec());
            }
        }
    }
    out.truncate(limit);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A response header, if present.
pub fn header(resp: &Response, name: &str) -> Option<String> {
    resp.headers().get(name).ok().flatten()
}

thread_local! {
    static STREAMS_SUPPORTED: RefCell<Option<bool>> = const { RefCell::new(None) };
}

/// Whether this runtime can send a `ReadableStream` request body (`PROTOCOL.md` §10): build a
/// `Request` whose init has `duplex` as a getter; supported iff the getter was read and no
/// `Content-Type` was added (a runtime that stringifies the stream adds `text/plain`).
/// Cloudflare Workers and Deno stream outgoing bodies but ignore `duplex`, so they are
/// recognised by name. Cached.
pub fn streaming_uploads_supported() -> bool {
    if let Some(known) = STREAMS_SUPPORTED.with(|c| *c.borrow()) {
        return known;
    }
    let supported = detect().unwrap_or(false) || is_cloudflare_workers() || is_deno();
    STREAMS_SUPPORTED.with(|c| *c.borrow_mut() = Some(supported));
    supported
}

fn detect() -> Result<bool, JsValue> {
    let read = Rc::new(Cell::new(false));
    let flag = read.clone();
    let getter = Closure::<dyn FnMut() -> JsValue>::new(move || {
        flag.set(true);
        JsValue::from_str("half")
    });
    let init = Object::new();
    Reflect::set(&init, &"method".into(), &"POST".into())?;
    Reflect::set(
        &init,
        &"body".into(),
        &JsValue::from(ReadableStream::new()?),
    )?;
    let descriptor = Object::new();
    Reflect::set(&descriptor, &"get".into(), getter.as_ref())?;
    Reflect::set(&descriptor, &"enumerable".into(), &true.into())?;
    Object::define_property(&init, &"duplex".into(), &descriptor);
    let request =
        web_sys::Request::new_with_str_and_init("http://localhost/", init.unchecked_ref())?;
    let has_content_type = request.headers().has("content-type")?;
    Ok(read.get() && !has_content_type)
}

/// Deno streams request bodies over HTTP/1.1 (§10) but its `Request` never reads `duplex`.
fn is_deno() -> bool {
    Reflect::get(&js_sys::global(), &"Deno".into())
        .map(|d| d.is_object())
        .unwrap_or(false)
}

fn is_cloudflare_workers() -> bool {
    let global = js_sys::global();
    Reflect::get(&global, &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"userAgent".into()))
        .ok()
        .and_then(|ua| ua.as_string())
        .is_some_and(|ua| ua == "Cloudflare-Workers")
}

/// Request headers common to an operation: the token (§6) and, for producers, the metadata
/// forwarded to the consumer (§3.3).
pub fn auth_headers(token: Option<&str>) -> Vec<(String, String)> {
    token
        .map(|t| vec![("Authorization".to_string(), format!("Bearer {t}"))])
        .unwrap_or_default()
}

/// Whether the relay at `origin` still answers HTTP (any status) within `ms` milliseconds.
/// Used to tell "the relay cut our upload because the consumer left" (alive) from "the relay
/// or the network is gone".
pub async fn relay_alive(origin: &str, ms: f64) -> bool {
    let Ok(controller) = web_sys::AbortController::new() else {
        return false;
    };
    let signal = controller.signal();
    let timer_controller = controller.clone();
    let cb = Closure::once(move || timer_controller.abort());
    let handle = super::bindings::set_timeout(cb.as_ref().unchecked_ref(), ms);
    let url = format!("{origin}/version");
    let r = fetch(Req {
        method: "GET",
        url: &url,
        headers: &[],
        signal: &signal,
        body: None,
        streaming: false,
    })
    .await;
    super::bindings::clear_timeout(&handle);
    r.is_ok()
}
