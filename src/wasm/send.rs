//! `send`: the producer side. Rendezvous (§5), then a streaming upload (§3) or the segmented
//! upload (§4), chosen per `PROTOCOL.md` §10 and remembered per relay origin.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::ReadableStream;

use super::abort::Abort;
use super::bindings::now_ms;
use super::chunks::{self, ByteStream, Shared};
use super::connect::rendezvous;
use super::crypto::encrypt_stream;
use super::error::{from_client, js_error};
use super::http::{auth_headers, fetch, relay_alive, streaming_uploads_supported, text, Req};
use super::options::Parsed;
use super::segmented::upload_segmented;
use crate::client::disposition;
use crate::client::error::{classify_response, ErrorCode};
use crate::client::rate::RateMeter;
use crate::client::status::{StatusLog, Verdict};
use crate::client::transport::{OriginMemory, Plan, Transport, UploadMode};
use crate::client::urls::{origin, ConnectMode};

thread_local! {
    static MEMORY: RefCell<OriginMemory> = RefCell::new(OriginMemory::new());
}

/// `send(stream, options) → Promise<SendReport>` for a `ReadableStream<Uint8Array>` source
/// (the package entry turns `Blob`, `string`, `Uint8Array` and async iterables into one).
/// Resolves once the relay confirmed `[STATE:TRANSFER_SUCCESSFUL]` (the consumer got every
/// byte); rejects with `PEER_DISCONNECTED` if the consumer left, `ABORTED`, `UNAUTHORIZED`,
/// `FORBIDDEN`, `CONNECT_TIMEOUT`, `NETWORK`, `RELAY_ERROR`, `UNSUPPORTED`.
#[wasm_bindgen(js_name = sendStream)]
pub async fn send_stream(source: ReadableStream, options: JsValue) -> Result<JsValue, JsValue> {
    let p = Parsed::from_js(&options)?;
    let mut abort = Abort::new(p.signal.clone())?;
    let result = send_inner(source, &p, &mut abort).await;
    if result.is_err() {
        // Stop whatever is still running (the upload, a waiting part request).
        abort.abort_internal();
    }
    result
}

async fn send_inner(
    source: ReadableStream,
    p: &Parsed,
    abort: &mut Abort,
) -> Result<JsValue, JsValue> {
    let base = p.relay()?;
    let path = p.path()?;
    let mode = UploadMode::parse(p.o.upload.as_deref()).map_err(|e| from_client(&e))?;
    let part_size = crate::client::parts::part_size(p.o.part_size).map_err(|e| from_client(&e))?;
    let started = now_ms();
    let meter = Rc::new(RefCell::new(RateMeter::new(
        started,
        p.o.size.map(|s| s as u64),
    )));
    let mut stream: ByteStream = chunks::metered(
        chunks::from_js(source),
        meter.clone(),
        p.on_progress.clone(),
    );
    if p.encrypted() {
        stream = encrypt_stream(stream, &p.o)?;
    }
    let stream = chunks::stoppable(stream, abort.reason_cell());

    let data_url = if p.rendezvous() {
        rendezvous(p, &base, path, ConnectMode::AwaitReader, abort).await?
    } else {
        base.data_url(path).map_err(|e| from_client(&e))?
    };
    let headers = producer_headers(p);
    let key = origin(&data_url);
    let plan = MEMORY
        .with(|m| m.borrow().plan(mode, streaming_uploads_supported(), &key))
        .map_err(|e| from_client(&e))?;

    let (transport, state) = match plan {
        Plan::Segmented => {
            let state = upload_segmented(stream, &data_url, &headers, part_size, abort).await?;
            (Transport::Segmented, state)
        }
        Plan::Stream { fallback } => {
            let shared = Shared::new(stream);
            match upload_stream(&shared, &data_url, &headers, abort).await {
                Ok(state) => {
                    MEMORY.with(|m| m.borrow_mut().remember(&key, true));
                    (Transport::Stream, state)
                }
                Err(Failure::BeforeFirstByte(err)) if fallback => match shared.take_replay() {
                    Some(replay) => {
                        let rest = futures::stream::iter(replay.into_iter().map(Ok))
                            .chain(shared.reader());
                        let remember =
                            |m: &RefCell<OriginMemory>| m.borrow_mut().remember(&key, false);
                        let state = upload_segmented(
                            rest.boxed_local(),
                            &data_url,
                            &headers,
                            part_size,
                            abort,
                        )
                        .await
                        .inspect(|_| MEMORY.with(remember))?;
                        (Transport::Segmented, state)
                    }
                    None => {
                        return Err(abort.map_error(err, ErrorCode::Network, "streaming upload"))
                    }
                },
                Err(Failure::BeforeFirstByte(err)) => {
                    return Err(abort.map_error(
                        err,
                        ErrorCode::Network,
                        &format!("streaming upload to {data_url}"),
                    ))
                }
                Err(Failure::Error(err)) => return Err(err),
            }
        }
    };

    let end = now_ms();
    let bytes = meter.borrow().bytes();
    let report = Object::new();
    Reflect::set(&report, &"bytes".into(), &(bytes as f64).into())?;
    Reflect::set(&report, &"durationMs".into(), &(end - started).into())?;
    Reflect::set(&report, &"transport".into(), &transport.as_str().into())?;
    Reflect::set(&report, &"relayState".into(), &state.into())?;
    Ok(report.into())
}

/// Headers of the producer's request: token, `Content-Type`, `Content-Disposition` (§3.3) and
/// the declared plaintext size as `X-Piping: httpipe-size=N` (a streaming upload has no
/// `Content-Length`; the relay forwards `X-Piping` to the consumer). When encrypting, the relay
/// sees no metadata: `Content-Type: application/octet-stream`, and neither the filename nor
/// the size is sent (they would travel in clear text).
pub fn producer_headers(p: &Parsed) -> Vec<(String, String)> {
    let mut h = auth_headers(p.o.token.as_deref());
    if p.encrypted() {
        h.push(("Content-Type".into(), "application/octet-stream".into()));
        return h;
    }
    if let Some(ct) = &p.o.content_type {
        h.push(("Content-Type".into(), ct.clone()));
    }
    if let Some(name) = &p.o.filename {
        h.push(("Content-Disposition".into(), disposition::encode(name)));
    }
    if let Some(size) = p.o.size.filter(|s| s.is_finite() && *s >= 0.0) {
        h.push((
            "X-Piping".into(),
            format!("{SIZE_PREFIX}{}", size.trunc() as u64),
        ));
    }
    h
}

/// `X-Piping` value prefix carrying the producer's declared size.
pub const SIZE_PREFIX: &str = "httpipe-size=";

/// The declared size in an `X-Piping` header value (`Headers.get` joins several with ", ").
pub fn declared_size(x_piping: &str) -> Option<u64> {
    x_piping
        .split(',')
        .find_map(|v| v.trim().strip_prefix(SIZE_PREFIX))
        .and_then(|n| n.trim().parse().ok())
}

/// How a streaming upload failed.
pub enum Failure {
    /// `fetch` rejected before the response: maybe the runtime/hop can't stream (§10).
    BeforeFirstByte(JsValue),
    /// Any other failure, already an `HttpipeError`.
    Error(JsValue),
}

/// POSTs the stream as one request body and follows the status log (§3.2).
async fn upload_stream(
    shared: &Rc<Shared>,
    url: &str,
    headers: &[(String, String)],
    abort: &Abort,
) -> Result<String, Failure> {
    let what = format!("streaming upload to {url}");
    let body = chunks::to_js(shared.reader().boxed_local());
    let signal = abort.signal();
    let resp = fetch(Req {
        method: "POST",
        url,
        headers,
        signal: &signal,
        body: Some(body.into()),
        streaming: true,
    })
    .await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            if let Some(src) = shared.source_error() {
                return Err(Failure::Error(abort.map_error(
                    src,
                    ErrorCode::Unsupported,
                    "reading the source",
                )));
            }
            if abort.reason() != super::abort::Reason::None || !super::error::is_type_error(&e) {
                return Err(Failure::Error(abort.map_error(
                    e,
                    ErrorCode::Network,
                    &what,
                )));
            }
            if shared.replay_len().is_none() {
                // Bytes went out already (a half-duplex runtime rejects only at the end).
                return Err(Failure::Error(cut_off(e, url, abort, &what).await));
            }
            return Err(Failure::BeforeFirstByte(e));
        }
    };
    if resp.status() != 200 {
        let body = text(&resp, 64 * 1024).await.unwrap_or_default();
        return Err(Failure::Error(from_client(&classify_response(
            resp.status(),
            &body,
            &what,
        ))));
    }
    let mut log = StatusLog::new();
    if let Some(body) = resp.body() {
        let mut s = wasm_streams::ReadableStream::from_raw(body).into_stream();
        while let Some(chunk) = s.next().await {
            let chunk = chunk.and_then(|c| c.dyn_into::<Uint8Array>());
            match chunk {
                Ok(c) => {
                    if log.push(&c.to_vec()) == Verdict::PeerDisconnected {
                        return Err(Failure::Error(js_error(
                            ErrorCode::PeerDisconnected,
                            &format!(
                                "{what}: the consumer disconnected before the end of the stream"
                            ),
                            None,
                        )));
                    }
                }
                Err(e) => {
                    if let Some(src) = shared.source_error() {
                        return Err(Failure::Error(abort.map_error(
                            src,
                            ErrorCode::Unsupported,
                            "reading the source",
                        )));
                    }
                    return Err(Failure::Error(cut_off(e, url, abort, &what).await));
                }
            }
        }
    }
    log.finish().map_err(|e| Failure::Error(from_client(&e)))
}

/// The upload broke after it started. If the relay still answers, it cut the upload itself,
/// which it does when the consumer left (§3.2; the status line may not have reached us before
/// the connection closed): `PEER_DISCONNECTED`. Otherwise `NETWORK`.
async fn cut_off(err: JsValue, url: &str, abort: &Abort, what: &str) -> JsValue {
    if abort.reason() != super::abort::Reason::None {
        return abort.map_error(err, ErrorCode::Network, what);
    }
    let origin = origin(url);
    // Two short probes: one stuck on a half-closed pooled connection must not decide.
    if relay_alive(&origin, 2500.0).await || relay_alive(&origin, 2500.0).await {
        return js_error(
            ErrorCode::PeerDisconnected,
            &format!(
                "{what}: the relay closed the upload while it is still up: the consumer disconnected ({})",
                super::error::message_of(&err)
            ),
            Some(&err),
        );
    }
    abort.map_error(
        err,
        ErrorCode::Network,
        &format!("{what} (and the relay did not answer afterwards)"),
    )
}
