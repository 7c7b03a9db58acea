//! `receive` / `openReader`: the fetch adapter of the core's consumer
//! (`crate::client::consumer`): rendezvous (§5), `GET` the data URL (§3.3), body checks
//! (a cut connection is `TRUNCATED`), decryption (§7–§8) when keys are given.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::Response;

use super::abort::Abort;
use super::bindings::now_ms;
use super::chunks::{self, ByteStream};
use super::crypto::{decrypt_stream, decryptor_for};
use super::error::into_js;
use super::http::{exchange, fetch, text, JsHeaders, TEXT_LIMIT};
use super::options::{Parsed, ReceiptMode};
use super::receipt::{with_receipt, Receipt};
use crate::client::consumer::{BodyCheck, Consumer, Step};
use crate::client::error::{Error, ErrorCode};
use crate::client::rate::RateMeter;

/// `receive(options) → Promise<{ stream, contentType?, filename?, size? }>`: resolves when the
/// producer's stream starts. The stream errors with `TRUNCATED` if the producer's stream was
/// cut, `ABORTED` on the signal, `WRONG_KEY` / `DECRYPT_FAILED` when decrypting. `size` is the
/// producer's `Content-Length` or its declared size (`X-Piping: httpipe-size=N`); never for
/// encrypted streams (the SDK sends no size in clear). Cancelling the stream disconnects, and
/// the producer's `send` rejects with `PEER_DISCONNECTED`.
#[wasm_bindgen(js_name = receive)]
pub async fn receive_js(options: JsValue) -> Result<JsValue, JsValue> {
    receive_inner(&options).await.map_err(into_js)
}

async fn receive_inner(options: &JsValue) -> Result<JsValue, Error> {
    let p = Parsed::from_js(options)?;
    // A decryptor is built first, so bad keys fail before anything waits on the relay.
    let decryptor = if p.encrypted() {
        Some(Rc::new(RefCell::new(decryptor_for(&p.o)?)))
    } else {
        None
    };
    let mut abort = Abort::new(p.signal.clone())?;
    let mut consumer = Consumer::new(p.receive_config()?)?;
    let mut response: Option<Response> = None;
    loop {
        match consumer.poll() {
            Step::Rendezvous(req) => match exchange(&req, &mut abort, None).await {
                Ok((status, headers, body)) => consumer.on_response(status, &headers, &body),
                Err(f) => consumer.on_failure(f),
            },
            Step::Get(req) => {
                if let Some(ms) = req.timeout_ms {
                    abort.arm_timeout(ms);
                }
                let r = fetch(&req, &abort.signal(), None, false).await;
                abort.disarm_timeout();
                match r {
                    Ok(resp) => {
                        consumer.on_head(resp.status(), &JsHeaders(resp.headers()));
                        response = Some(resp);
                    }
                    Err(e) => consumer.on_failure(abort.failure(&e)),
                }
            }
            Step::ReadErrorBody => {
                let body = match &response {
                    Some(r) => text(r, TEXT_LIMIT).await.unwrap_or_default(),
                    None => String::new(),
                };
                consumer.on_error_body(&body);
            }
            Step::Failed(e) => return Err(e),
            Step::Stream(incoming, check) => {
                let body = response.as_ref().and_then(Response::body).ok_or_else(|| {
                    Error::new(ErrorCode::RelayError, "the relay's response has no body")
                })?;
                let mut stream = checked(body, Rc::new(abort), check);
                if let Some(dec) = &decryptor {
                    stream = decrypt_stream(stream, dec.clone());
                }
                let manual = p.receipt == ReceiptMode::Manual;
                let receipt = Receipt::new(consumer.receipt_plan(), decryptor, manual);
                stream = with_receipt(stream, receipt.clone());
                let meter = Rc::new(RefCell::new(RateMeter::new(
                    now_ms(),
                    incoming.progress_total,
                )));
                stream = chunks::metered(stream, meter, p.on_progress.clone());
                let out = Object::new();
                let set = |k: &str, v: JsValue| Reflect::set(&out, &k.into(), &v).map(|_| ());
                let js = |e: JsValue| {
                    super::error::from_js(
                        &e,
                        Default::default(),
                        ErrorCode::Unsupported,
                        "building the result",
                    )
                };
                set("stream", chunks::to_js(stream).into()).map_err(js)?;
                if manual {
                    set("confirm", receipt.confirm_fn().into()).map_err(js)?;
                }
                if let Some(ct) = incoming.content_type {
                    set("contentType", ct.into()).map_err(js)?;
                }
                if let Some(name) = incoming.filename {
                    set("filename", name.into()).map_err(js)?;
                }
                if let Some(n) = incoming.size {
                    set("size", (n as f64).into()).map_err(js)?;
                }
                return Ok(out.into());
            }
        }
    }
}

/// The response body through the core's [`BodyCheck`]; keeps `abort` (and so the signal
/// link) alive as long as the stream.
fn checked(body: web_sys::ReadableStream, abort: Rc<Abort>, check: BodyCheck) -> ByteStream {
    let state = (chunks::raw(body), abort, check, false);
    futures::stream::unfold(state, |(mut input, abort, mut check, done)| async move {
        if done {
            return None;
        }
        match input.next().await {
            Some(Ok(v)) => match v.dyn_into::<Uint8Array>() {
                Ok(chunk) => {
                    check.on_bytes(chunk.length() as u64);
                    Some((Ok(chunk), (input, abort, check, false)))
                }
                Err(v) => {
                    let e = check.on_failure(abort.failure(&v));
                    Some((Err(e), (input, abort, check, true)))
                }
            },
            Some(Err(e)) => {
                let e = check.on_failure(abort.failure(&e));
                Some((Err(e), (input, abort, check, true)))
            }
            None => match check.on_end() {
                Err(e) => Some((Err(e), (input, abort, check, true))),
                Ok(()) => None,
            },
        }
    })
    .boxed_local()
}
