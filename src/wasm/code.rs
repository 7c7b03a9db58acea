//! `sendWithCode` / `receiveWithCode` (`PROTOCOL.md` §14): the fetch driver of the short-code
//! machines (`crate::client::code`). It performs each request a machine asks for, feeds the
//! answer back, and returns the options of the data transfer (the derived path and key,
//! age-rt), which `js/api.js` hands to `send` / `receive`. Every protocol decision is the
//! core's; the native client drives the same machines over reqwest (`src/native/code.rs`).

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::into_js;
use super::http::{body_bytes, fetch, JsHeaders};
use super::options::Parsed;
use super::stop::Abort;
use crate::client::code::{
    Code, CodeKeys, CodeMachine, CodeReceive, CodeRelay, CodeSend, CodeStep, Offer,
};
use crate::client::error::{Error, ErrorCode, Failure};
use crate::crypto::OsRandom;

/// Options the code derives: refused when given.
const DERIVED: [&str; 5] = ["path", "passphrase", "recipients", "identities", "format"];

fn refuse_derived(options: &JsValue, what: &str) -> Result<(), Error> {
    for name in DERIVED {
        if super::options::member(options, name).is_some() {
            return Err(Error::usage(format!(
                "{what} derives `{name}` from the code: leave it out"
            )));
        }
    }
    Ok(())
}

/// A copy of `options` with the derived members set.
fn with_members(options: &JsValue, members: &[(&str, JsValue)]) -> Result<JsValue, Error> {
    let out = Object::assign(&Object::new(), options.unchecked_ref());
    for (k, v) in members {
        Reflect::set(&out, &(*k).into(), v).map_err(|e| js_failed(&e))?;
    }
    Ok(out.into())
}

fn js_failed(e: &JsValue) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!(
            "the runtime refused an object operation: {}",
            super::error::message_of(e)
        ),
    )
}

/// Drives a short-code machine to its end over `fetch`: performs each request it asks for
/// (on `abort`'s signal, with its `timeout_ms` armed through the end of its body) and feeds
/// the answer back; `announce` shows the code.
async fn drive<M: CodeMachine>(
    mut m: M,
    abort: &mut Abort,
    mut announce: impl FnMut(&Code) -> Result<(), Error>,
) -> Result<M::Done, Error> {
    let mut answer = None;
    let done = async {
        loop {
            match m.poll() {
                CodeStep::Send { req, body } => {
                    match req.timeout_ms {
                        Some(ms) => abort.arm_timeout(ms),
                        None => abort.disarm_timeout(),
                    }
                    let body = body.map(|b| Uint8Array::from(b.as_slice()).into());
                    match fetch(&req, &abort.signal(), body, false).await {
                        Ok(resp) => {
                            m.on_head(resp.status(), &JsHeaders(resp.headers()));
                            answer = Some(resp);
                        }
                        Err(e) => m.on_failure(abort.failure(&e)),
                    }
                }
                CodeStep::Announce(code) => announce(&code)?,
                CodeStep::ReadBody { limit } => {
                    let read = match answer.take() {
                        Some(resp) => body_bytes(&resp, limit)
                            .await
                            .map_err(|e| abort.failure(&e)),
                        None => Err(Failure::coded(Error::usage("no answer to read"))),
                    };
                    abort.disarm_timeout();
                    match read {
                        Ok(body) => m.on_body(body),
                        Err(f) => m.on_failure(f),
                    }
                }
                CodeStep::Done(done) => return Ok(done),
                CodeStep::Failed(e) => return Err(e),
            }
        }
    }
    .await;
    abort.disarm_timeout();
    done
}

/// `codeSend(options, onCode) → Promise<options>`, the first half of `sendWithCode`: holds a
/// channel, calls `onCode(code)` once it is the sender's, runs the exchange (§14.2), and
/// resolves with `options` for `send` to the derived path and recipient (age-rt). Rejects
/// `WRONG_CODE` when the receiver's code differs (nothing was sent). The package entry
/// (`js/api.js`) calls `send` with the result: one copy of `send` in the module.
#[wasm_bindgen(js_name = codeSend)]
pub async fn code_send(options: JsValue, on_code: Function) -> Result<JsValue, JsValue> {
    send_exchange(&options, &on_code).await.map_err(into_js)
}

async fn send_exchange(options: &JsValue, on_code: &Function) -> Result<JsValue, Error> {
    let p = Parsed::from_js(options)?;
    refuse_derived(options, "sendWithCode")?;
    let relay = CodeRelay::new(p.relay()?, p.o.token.clone());
    let offer = Offer::new(p.o.filename.clone(), p.size(), p.o.content_type.clone());
    let mut abort = Abort::new(p.signal.clone())?;
    let sender = CodeSend::new(relay, offer, p.o.timeout, Box::new(OsRandom));
    let keys = drive(sender, &mut abort, |code| {
        on_code
            .call1(&JsValue::UNDEFINED, &code.to_string().into())
            .map(|_| ())
            .map_err(|e| js_failed(&e))
    })
    .await?;
    with_members(
        options,
        &[
            ("path", keys.path.as_str().into()),
            (
                "recipients",
                Array::of1(&keys.recipient.as_str().into()).into(),
            ),
            ("format", CodeKeys::FORMAT.name().into()),
        ],
    )
}

/// `codeReceive(code, options) → Promise<{ options, offer }>`, the first half of
/// `receiveWithCode`: the exchange (§14.2) on the code's channel; `options` are for `receive`
/// from the derived path with the derived identity, `offer` the sender's sealed
/// `{ filename?, size?, contentType? }`. Rejects `WRONG_CODE` for a malformed code (before
/// any request), when no sender waits, or when the codes differ.
#[wasm_bindgen(js_name = codeReceive)]
pub async fn code_receive(code: String, options: JsValue) -> Result<JsValue, JsValue> {
    let (data_options, offer) = receive_exchange(&code, &options).await.map_err(into_js)?;
    let out = Object::new();
    let meta = Object::new();
    if let Some(n) = offer.name {
        Reflect::set(&meta, &"filename".into(), &n.into())?;
    }
    if let Some(s) = offer.size {
        Reflect::set(&meta, &"size".into(), &(s as f64).into())?;
    }
    if let Some(t) = offer.content_type {
        Reflect::set(&meta, &"contentType".into(), &t.into())?;
    }
    Reflect::set(&out, &"options".into(), &data_options)?;
    Reflect::set(&out, &"offer".into(), &meta)?;
    Ok(out.into())
}

async fn receive_exchange(code: &str, options: &JsValue) -> Result<(JsValue, Offer), Error> {
    let code = Code::parse(code)?;
    let p = Parsed::from_js(options)?;
    refuse_derived(options, "receiveWithCode")?;
    let relay = CodeRelay::new(p.relay()?, p.o.token.clone());
    let mut abort = Abort::new(p.signal.clone())?;
    let receiver = CodeReceive::new(relay, code, Box::new(OsRandom));
    let (keys, offer) = drive(receiver, &mut abort, |_| Ok(())).await?;
    let mut members = vec![
        ("path", JsValue::from(keys.path.as_str())),
        (
            "identities",
            Array::of1(&keys.identity.as_str().into()).into(),
        ),
    ];
    if let (Some(s), None) = (offer.size, p.o.size) {
        // the progress total
        members.push(("size", (s as f64).into()));
    }
    Ok((with_members(options, &members)?, offer))
}
