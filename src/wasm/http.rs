//! The fetch adapter (`PROTOCOL.md` §10): the core's `Request`s through the global `fetch`,
//! streaming request bodies with `duplex: 'half'` set through `Reflect` (web-sys has no
//! setter), response text, and feature detection of streaming uploads without a request.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, ReadableStream, Response};

use super::bindings::{global_fetch, sleep};
use super::js_streams::JsValueStream;
use super::stop::Abort;
use crate::client::error::Failure;
use crate::client::request::{Headers as ClientHeaders, LastWords, Request, TEXT_LIMIT};
use crate::client::transport::{RuntimeStreams, UploadCut};

/// Response headers for the core (`Headers.get` joins repeated names with ", ").
pub struct JsHeaders(pub web_sys::Headers);

impl ClientHeaders for JsHeaders {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).ok().flatten()
    }
}

/// The `fetch` init of `req`: its method and headers.
fn init_for(req: &Request) -> Result<Object, JsValue> {
    let init = Object::new();
    Reflect::set(&init, &"method".into(), &req.method.as_str().into())?;
    let headers = Headers::new()?;
    for (k, v) in &req.headers {
        headers.append(k, v)?;
    }
    Reflect::set(&init, &"headers".into(), &headers)?;
    if req.last_word && super::bindings::in_page() {
        // outlives the page if it is closed right now (see `pagehide.rs`)
        Reflect::set(&init, &"keepalive".into(), &JsValue::TRUE)?;
    }
    DISPATCHER.with(|d| match &*d.borrow() {
        Some(d) => Reflect::set(&init, &"dispatcher".into(), d).map(drop),
        None => Ok(()),
    })?;
    Ok(init)
}

thread_local! {
    /// Node's: see [`set_fetch_dispatcher`].
    static DISPATCHER: RefCell<Option<JsValue>> = const { RefCell::new(None) };
}

/// `setFetchDispatcher(dispatcher | null)`, called by the package in Node: every request goes
/// through `dispatcher` (`fetch`'s `dispatcher` option, undici's). Node's `fetch` fails a
/// request whose response head took 300 s, or whose body said nothing for 300 s, as a network
/// failure (a runtime fact, `PROTOCOL.md` §10); the core bounds every wait it asks for, so the
/// package's dispatcher hands each request to Node's own with those two limits off.
#[wasm_bindgen(js_name = setFetchDispatcher)]
pub fn set_fetch_dispatcher(dispatcher: JsValue) {
    let d = (!dispatcher.is_null() && !dispatcher.is_undefined()).then_some(dispatcher);
    DISPATCHER.with(|cell| *cell.borrow_mut() = d);
}

/// Sends the core's `req` (no body) with `keepalive`, so that the browser finishes it after the
/// page is gone, and forgets it: a last word that nobody waits for (see `pagehide.rs`).
pub fn send_keepalive(req: &Request) {
    let send = || -> Result<js_sys::Promise, JsValue> {
        let init = init_for(req)?;
        Reflect::set(&init, &"keepalive".into(), &JsValue::TRUE)?;
        Ok(global_fetch(&req.url, &init))
    };
    if let Ok(p) = send() {
        wasm_bindgen_futures::spawn_local(async move {
            let _ = JsFuture::from(p).await;
        });
    }
}

/// Sends the core's `req` with `body` (a complete body — `Uint8Array`, `Blob`, string — or a
/// `ReadableStream` when `streaming`); `Err` is the raw JavaScript rejection (a `TypeError` on
/// network failure, an `AbortError` after an abort).
pub async fn fetch(
    req: &Request,
    signal: &AbortSignal,
    body: Option<JsValue>,
    streaming: bool,
) -> Result<Response, JsValue> {
    let init = init_for(req)?;
    Reflect::set(&init, &"signal".into(), signal)?;
    if let Some(body) = &body {
        Reflect::set(&init, &"body".into(), body)?;
    }
    if streaming {
        Reflect::set(&init, &"duplex".into(), &"half".into())?;
        // A stream body can't follow a redirect (fetch: a network error, or a GET without it
        // for a 303); the relay never redirects an upload. Saying so keeps every chunk sent
        // from being retained: Node's fetch (undici) otherwise tees the body for a redirect
        // it could never replay and buffers the whole upload in the branch nobody reads
        // (nodejs/undici#4058; measured: +1 MB of `arrayBuffers` per MiB sent, Node 20).
        // Where `redirect: 'error'` isn't accepted (workerd rejects it) nothing is said.
        if redirect_error_supported() {
            Reflect::set(&init, &"redirect".into(), &"error".into())?;
        }
    }
    let resp = JsFuture::from(global_fetch(&req.url, &init)).await?;
    resp.dyn_into::<Response>()
}

/// `resp`'s body read chunk by chunk (errors are JavaScript exceptions), holding `resp` for as
/// long as the stream: Deno (2.9) stops the body on the request's `AbortSignal` only while the
/// `Response` object lives, so a `receive()` whose response was let go ran on to a clean end
/// after its caller aborted. `None` without a body.
pub fn body_stream(resp: Response) -> Option<JsValueStream> {
    let body = resp.body()?;
    let held = super::chunks::raw(body).map(move |piece| {
        let _ = &resp;
        piece
    });
    Some(held.boxed_local())
}

/// The response body as text (lossy UTF-8), at most `limit` bytes; errors become `Err`.
pub async fn text(resp: &Response, limit: usize) -> Result<String, JsValue> {
    let out = body_bytes(resp, limit).await?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The whole response body (read to its end), keeping at most `limit` bytes.
pub async fn body_bytes(resp: &Response, limit: usize) -> Result<Vec<u8>, JsValue> {
    let mut out = Vec::new();
    if let Some(body) = resp.body() {
        let mut s = super::chunks::raw(body);
        while let Some(chunk) = s.next().await {
            let chunk: Uint8Array = chunk?.dyn_into()?;
            if out.len() < limit {
                out.extend(chunk.to_vec());
            }
        }
    }
    out.truncate(limit);
    Ok(out)
}

/// A request with a short text answer (Connect API, segmented part, probe): status, headers,
/// body. `req.timeout_ms` is armed as the core's `req.on_timeout` says ([`Abort::arm_for`]).
pub async fn exchange(
    req: &Request,
    abort: &mut Abort,
    body: Option<JsValue>,
) -> Result<(u16, JsHeaders, String), Failure> {
    exchange_seen(req, abort, body, &mut |_, _| {}).await
}

/// [`exchange`], handing the response's status and headers to `on_head` as soon as they are
/// there, before the body is read (which may still fail). (A `dyn` callback: one body of this
/// serves every caller, the module's weight, issue #27.)
pub async fn exchange_seen(
    req: &Request,
    abort: &mut Abort,
    body: Option<JsValue>,
    on_head: &mut dyn FnMut(u16, &JsHeaders),
) -> Result<(u16, JsHeaders, String), Failure> {
    let own = abort.arm_for(req);
    let signal = own.as_ref().unwrap_or(abort).signal();
    let result = match fetch(req, &signal, body, false).await {
        Ok(resp) => {
            on_head(resp.status(), &JsHeaders(resp.headers()));
            match text(&resp, TEXT_LIMIT).await {
                Ok(t) => Ok((resp.status(), JsHeaders(resp.headers()), t)),
                Err(e) => Err(abort.failure_of(req, &own, &e)),
            }
        }
        Err(e) => Err(abort.failure_of(req, &own, &e)),
    };
    abort.disarm_timeout();
    result
}

thread_local! {
    static STREAMS_SUPPORTED: RefCell<Option<bool>> = const { RefCell::new(None) };
    static REDIRECT_ERROR: RefCell<Option<bool>> = const { RefCell::new(None) };
}

/// Whether this runtime's `Request` takes `redirect: 'error'` (workerd throws on it). Cached.
fn redirect_error_supported() -> bool {
    if let Some(known) = REDIRECT_ERROR.with(|c| *c.borrow()) {
        return known;
    }
    let probe = || -> Result<bool, JsValue> {
        let init = Object::new();
        Reflect::set(&init, &"redirect".into(), &"error".into())?;
        let request =
            web_sys::Request::new_with_str_and_init("http://localhost/", init.unchecked_ref())?;
        Ok(Reflect::get(&request, &"redirect".into())?
            .as_string()
            .as_deref()
            == Some("error"))
    };
    let supported = probe().unwrap_or(false);
    REDIRECT_ERROR.with(|c| *c.borrow_mut() = Some(supported));
    supported
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

/// What the runtime can stream (§10): browsers stream a request body over HTTP/2 only, so a
/// page's answer is [`RuntimeStreams::OverTls`] (the core plans accordingly).
pub fn runtime_streams() -> RuntimeStreams {
    match (streaming_uploads_supported(), super::bindings::in_page()) {
        (false, _) => RuntimeStreams::No,
        (true, true) => RuntimeStreams::OverTls,
        (true, false) => RuntimeStreams::Yes,
    }
}

/// What cuts a streaming upload in this runtime (§10, §11.2 step 5): workerd ends a request
/// whose body errored as if it were complete, so only an abort cuts there; everywhere else an
/// errored body does (Chromium's aborted HTTP/2 upload ends cleanly, its errored one resets).
pub fn upload_cut() -> UploadCut {
    if is_cloudflare_workers() {
        UploadCut::Abort
    } else {
        UploadCut::BodyError
    }
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

/// Makes the core's last words together (the producer's: a failure notice for a consumer that
/// may be resuming, §12.3, a withdrawal for one that may wait for an upload that never reached
/// the relay, §3.10; the consumer's word that it left, §12.5) and waits until one told the
/// peer ([`LastWords::told`]), all are answered, or the core's wait is over; the calls go on
/// without the operation after that (work left in the background dies with a Worker's request
/// or a script that exits; the peer is there within moments); one that told the peer stops
/// the others ([`LastWords::calls`]). The mirror of the native driver's `say_last_words`.
pub async fn say_last_words(words: LastWords) {
    // stops the calls once one told the peer
    let Ok(all) = web_sys::AbortController::new() else {
        return;
    };
    let calls: Vec<_> = (words.calls.into_iter())
        .map(|req| {
            let all = all.clone();
            let answered = wasm_bindgen_futures::future_to_promise(async move {
                let mut told = false;
                if let Ok(mut a) = Abort::new(Some(all.signal())) {
                    let status = exchange(&req, &mut a, None).await.ok().map(|(s, ..)| s);
                    told = LastWords::told(status);
                }
                if told {
                    all.abort();
                }
                Ok(JsValue::from_bool(told))
            });
            wasm_bindgen_futures::JsFuture::from(answered)
        })
        .collect();
    let told = async move {
        let mut left = calls;
        while !left.is_empty() {
            let (answer, _, rest) = futures::future::select_all(left).await;
            if answer.ok().and_then(|v| v.as_bool()) == Some(true) {
                return;
            }
            left = rest;
        }
    };
    let wait = Box::pin(sleep(words.wait_ms));
    let _ = futures::future::select(Box::pin(told), wait).await;
}
