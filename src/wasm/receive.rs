//! `receive` / `openReader`: the consumer side. Rendezvous (§5), `GET` the data URL (§3.3),
//! turn a cut connection into `TRUNCATED`, decrypt (§7–§8) when keys are given.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use super::abort::{Abort, Reason};
use super::bindings::now_ms;
use super::chunks::{self, ByteStream};
use super::connect::rendezvous;
use super::crypto::{decrypt_stream, decryptor_for};
use super::error::{from_client, has_code, js_error};
use super::http::{auth_headers, fetch, header, text, Req};
use super::options::Parsed;
use crate::client::disposition;
use crate::client::error::{classify_response, ErrorCode};
use crate::client::rate::RateMeter;
use crate::client::urls::ConnectMode;

/// `receive(options) → Promise<{ stream, contentType?, filename?, size? }>`: resolves when the
/// producer's stream starts. The stream errors with `TRUNCATED` if the producer's stream was
/// cut, `ABORTED` on the signal, `WRONG_KEY` / `DECRYPT_FAILED` when decrypting. `size` is the
/// producer's `Content-Length` or its declared size (`X-Piping: httpipe-size=N`, sent by SDK
/// producers for plain Blob/bytes sources or an explicit `size`); never for encrypted streams
/// (the SDK sends no size in clear). Cancelling the stream disconnects, and
/// the producer's `send` rejects with `PEER_DISCONNECTED`.
#[wasm_bindgen(js_name = receive)]
pub async fn receive_js(options: JsValue) -> Result<JsValue, JsValue> {
    let p = Parsed::from_js(&options)?;
    // A decryptor is built first, so bad keys fail before anything waits on the relay.
    let decryptor = if p.encrypted() {
        Some(decryptor_for(&p.o)?)
    } else {
        None
    };
    let mut abort = Abort::new(p.signal.clone())?;
    let base = p.relay()?;
    let path = p.path()?;
    let data_url = if p.rendezvous() {
        rendezvous(&p, &base, path, ConnectMode::AwaitWriter, &mut abort).await?
    } else {
        base.data_url(path).map_err(|e| from_client(&e))?
    };
    let what = format!("receiving {data_url}");
    if !p.rendezvous() {
        if let Some(t) = p.o.timeout {
            abort.arm_timeout(t);
        }
    }
    let headers = auth_headers(p.o.token.as_deref());
    let signal = abort.signal();
    let resp = fetch(Req {
        method: "GET",
        url: &data_url,
        headers: &headers,
        signal: &signal,
        body: None,
        streaming: false,
    })
    .await
    .map_err(|e| abort.map_error(e, ErrorCode::Network, &what))?;
    abort.disarm_timeout();
    if resp.status() != 200 {
        let body = text(&resp, 64 * 1024).await.unwrap_or_default();
        return Err(from_client(&classify_response(resp.status(), &body, &what)));
    }
    let content_type = header(&resp, "content-type");
    let filename = header(&resp, "content-disposition").and_then(|v| disposition::parse(&v));
    let length = header(&resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
    // A streaming upload has no Content-Length: the producer declares its size in X-Piping.
    let declared =
        length.or_else(|| header(&resp, "x-piping").and_then(|v| super::send::declared_size(&v)));
    let body = resp.body().ok_or_else(|| {
        js_error(
            ErrorCode::RelayError,
            &format!("{what}: the response has no body"),
            None,
        )
    })?;

    let abort = Rc::new(abort);
    let mut stream = checked(chunks::from_js(body), abort, length, what);
    if let Some(dec) = decryptor {
        stream = decrypt_stream(stream, dec);
    }
    let total = if p.encrypted() {
        p.o.size.map(|s| s as u64)
    } else {
        declared
    };
    let meter = Rc::new(RefCell::new(RateMeter::new(now_ms(), total)));
    stream = chunks::metered(stream, meter, p.on_progress.clone());

    let out = Object::new();
    Reflect::set(&out, &"stream".into(), &chunks::to_js(stream))?;
    if let Some(ct) = content_type.filter(|_| !p.encrypted()) {
        Reflect::set(&out, &"contentType".into(), &ct.into())?;
    }
    if let Some(name) = filename {
        Reflect::set(&out, &"filename".into(), &name.into())?;
    }
    if let Some(n) = declared.filter(|_| !p.encrypted()) {
        Reflect::set(&out, &"size".into(), &(n as f64).into())?;
    }
    Ok(out.into())
}

/// Maps transport failures of the response body: `ABORTED` after the signal, otherwise
/// `TRUNCATED` (the relay aborts the consumer's response when the producer's stream breaks,
/// §3.3); a body shorter than its `Content-Length` is `TRUNCATED` too. Keeps `abort` (and so
/// the signal link) alive as long as the stream.
fn checked(input: ByteStream, abort: Rc<Abort>, length: Option<u64>, what: String) -> ByteStream {
    let state = (input, abort, 0u64, false);
    futures::stream::unfold(state, move |(mut input, abort, seen, done)| {
        let what = what.clone();
        async move {
            if done {
                return None;
            }
            match input.next().await {
                Some(Ok(chunk)) => {
                    let seen = seen + chunk.length() as u64;
                    Some((Ok(chunk), (input, abort, seen, false)))
                }
                Some(Err(e)) => {
                    let err = if has_code(&e) || abort.reason() != Reason::None {
                        abort.map_error(e, ErrorCode::Truncated, &what)
                    } else {
                        js_error(
                            ErrorCode::Truncated,
                            &format!("{what}: the stream broke off before its end (the producer stopped or the connection was cut)"),
                            Some(&e),
                        )
                    };
                    Some((Err(err), (input, abort, seen, true)))
                }
                None => match length {
                    Some(n) if seen < n => Some((
                        Err(js_error(ErrorCode::Truncated, &format!("{what}: got {seen} of {n} bytes"), None)),
                        (input, abort, seen, true),
                    )),
                    _ => None,
                },
            }
        }
    })
    .boxed_local()
}
