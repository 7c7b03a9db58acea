//! `sendWithCode` / `receiveWithCode` (`PROTOCOL.md` §14): the fetch adapter of the short-code
//! core (`crate::client::code`): it moves the exchange's bytes through the three pipes of the
//! channel and returns the options of the data transfer (the derived path and key, age-rt),
//! which `js/api.js` hands to `send` / `receive`. Every protocol decision is the core's.

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::abort::Abort;
use super::error::into_js;
use super::http::{body_bytes, exchange, fetch, text, JsHeaders, TEXT_LIMIT};
use super::options::Parsed;
use crate::client::code::{
    busy_pipe, next_code, on_await_sender, on_get, on_post, on_post_log, Code, CodeReceiver,
    CodeRelay, CodeSender, Offer, Pipe, Posted,
};
use crate::client::error::{Error, ErrorCode};
use crate::client::request::Request;
use crate::crypto::OsRandom;

/// Options the code derives: refused when given.
const DERIVED: [&str; 5] = ["path", "passphrase", "recipients", "identities", "format"];

fn refuse_derived(options: &JsValue, what: &str) -> Result<(), Error> {
    for name in DERIVED {
        let v = Reflect::get(options, &name.into()).unwrap_or(JsValue::UNDEFINED);
        if !(v.is_undefined() || v.is_null()) {
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

/// Largest pipe message read (`c` carries the offer: a file name and a type).
const PIPE_LIMIT: usize = 64 * 1024;

/// GET a pipe: its bytes.
async fn get_pipe(req: &Request, abort: &mut Abort) -> Result<Vec<u8>, Error> {
    let what = req.describe();
    if let Some(ms) = req.timeout_ms {
        abort.arm_timeout(ms);
    }
    let r = async {
        let resp = fetch(req, &abort.signal(), None, false)
            .await
            .map_err(|e| abort.failure(&e).into_error(ErrorCode::Network, &what))?;
        let body = body_bytes(&resp, PIPE_LIMIT)
            .await
            .map_err(|e| abort.failure(&e).into_error(ErrorCode::Network, &what))?;
        on_get(resp.status(), body, &what)
    }
    .await;
    abort.disarm_timeout();
    r
}

/// POST `body` on a pipe; `on_held` runs once the relay took it (`200`), then the status log
/// is read to its end (the reader took the bytes). `Ok(Posted::Busy)`: another writer holds
/// the pipe.
async fn post_pipe(
    req: &Request,
    abort: &mut Abort,
    body: &[u8],
    on_held: impl FnOnce() -> Result<(), Error>,
) -> Result<Posted, Error> {
    let what = req.describe();
    if let Some(ms) = req.timeout_ms {
        abort.arm_timeout(ms);
    }
    let r = async {
        let fail =
            |abort: &Abort, e: &JsValue| abort.failure(e).into_error(ErrorCode::Network, &what);
        let resp = fetch(
            req,
            &abort.signal(),
            Some(Uint8Array::from(body).into()),
            false,
        )
        .await
        .map_err(|e| fail(abort, &e))?;
        if resp.status() != 200 {
            let t = text(&resp, TEXT_LIMIT).await.unwrap_or_default();
            return on_post(resp.status(), &JsHeaders(resp.headers()), &t, &what);
        }
        on_held()?;
        let log = body_bytes(&resp, TEXT_LIMIT)
            .await
            .map_err(|e| fail(abort, &e))?;
        on_post_log(&log, &what).map(|_| Posted::Held)
    }
    .await;
    abort.disarm_timeout();
    r
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
    // 1: hold a channel (another one while busy) until a receiver took A
    let mut busy = 0;
    let sender = loop {
        let code = next_code(busy, &mut OsRandom)?;
        let sender = CodeSender::new(code, offer.clone(), &mut OsRandom)?;
        let req = relay.post(code.channel(), Pipe::A, p.o.timeout)?;
        let shown = code.to_string();
        let held = post_pipe(&req, &mut abort, sender.message_a(), || {
            on_code
                .call1(&JsValue::UNDEFINED, &shown.as_str().into())
                .map(|_| ())
                .map_err(|e| js_failed(&e))
        })
        .await?;
        match held {
            Posted::Held => break sender,
            Posted::Busy => busy += 1,
        }
    };
    let channel = sender.code().channel();
    // 3: B ‖ confirm_r → always c, then the verdict
    let b = get_pipe(&relay.get(channel, Pipe::B)?, &mut abort).await?;
    let reply = sender.on_b(&b);
    let posted = post_pipe(
        &relay.post(channel, Pipe::C, None)?,
        &mut abort,
        &reply.c,
        || Ok(()),
    )
    .await;
    let keys = reply.result?;
    if posted? == Posted::Busy {
        return Err(busy_pipe(Pipe::C));
    }
    with_members(
        options,
        &[
            ("path", keys.path.as_str().into()),
            (
                "recipients",
                Array::of1(&keys.recipient.as_str().into()).into(),
            ),
            ("format", "age-rt".into()),
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
    let channel = code.channel();
    // 2: a sender on the channel? A → B ‖ confirm_r
    let req = relay.await_sender(channel)?;
    match exchange(&req, &mut abort, None).await {
        Ok((status, _, body)) => on_await_sender(status, &body, &req.describe())?,
        Err(f) => return Err(f.into_error(ErrorCode::Network, &req.describe())),
    }
    let a = get_pipe(&relay.get(channel, Pipe::A)?, &mut abort).await?;
    let mut receiver = CodeReceiver::new(&code, &mut OsRandom)?;
    let b = receiver.on_a(&a)?;
    if post_pipe(&relay.post(channel, Pipe::B, None)?, &mut abort, &b, || {
        Ok(())
    })
    .await?
        == Posted::Busy
    {
        return Err(busy_pipe(Pipe::B));
    }
    // 4: confirm_s ‖ seal(offer)
    let c = get_pipe(&relay.get(channel, Pipe::C)?, &mut abort).await?;
    let (keys, offer) = receiver.on_c(&c)?;
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
