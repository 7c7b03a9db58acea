//! The segmented upload (`PROTOCOL.md` §4) for runtimes without streaming request bodies:
//! parts of `partSize` bytes (the first smaller), one request at a time, so memory holds at
//! most one part; parts after the first are retried on network errors (the relay accepts an
//! idempotent re-send).

use futures::StreamExt;
use wasm_bindgen::prelude::*;
use web_sys::Response;

use super::abort::{Abort, Reason};
use super::bindings::sleep;
use super::chunks::{concat, ByteStream, View};
use super::error::{from_client, is_type_error, js_error};
use super::http::{fetch, header, text, Req};
use crate::client::error::{classify_response, ErrorCode};
use crate::client::parts::PartCutter;
use crate::client::status::StatusLog;
use crate::client::urls::part_url;
use crate::protocol::upload::HEADER as UPLOAD_HEADER;

/// Tries per part after the first (network errors only).
const PART_TRIES: u32 = 3;

/// Uploads `stream` as parts to `data_url`; returns the relay's final state line.
pub async fn upload_segmented(
    mut stream: ByteStream,
    data_url: &str,
    headers: &[(String, String)],
    part_size: usize,
    abort: &Abort,
) -> Result<String, JsValue> {
    let mut cutter = PartCutter::<View>::new(part_size);
    let mut upload_id: Option<String> = None;
    let mut k: u64 = 0;
    loop {
        match stream.next().await {
            Some(Ok(chunk)) => {
                cutter.push(View(chunk));
                while let Some(part) = cutter.pop_full() {
                    send_part(data_url, headers, k, &mut upload_id, &part, false, abort).await?;
                    k += 1;
                }
            }
            Some(Err(e)) => {
                return Err(abort.map_error(e, ErrorCode::Unsupported, "reading the source"))
            }
            None => break,
        }
    }
    let mut rest = cutter.finish();
    let last = rest.pop().unwrap_or_default();
    for part in rest {
        send_part(data_url, headers, k, &mut upload_id, &part, false, abort).await?;
        k += 1;
    }
    if k == 0 {
        // Part 0 opens the upload and returns its id; the final part follows (maybe empty).
        send_part(data_url, headers, 0, &mut upload_id, &last, false, abort).await?;
        let state = send_part(data_url, headers, 1, &mut upload_id, &[], true, abort).await?;
        return Ok(state);
    }
    send_part(data_url, headers, k, &mut upload_id, &last, true, abort).await
}

/// Sends part `k`; for part 0 records the upload id; for the final part returns the state.
async fn send_part(
    data_url: &str,
    headers: &[(String, String)],
    k: u64,
    upload_id: &mut Option<String>,
    part: &[View],
    last: bool,
    abort: &Abort,
) -> Result<String, JsValue> {
    let url = part_url(data_url, k, upload_id.as_deref(), last);
    let what = format!("segmented upload part {k} to {data_url}");
    let body = concat(part);
    // Metadata (Content-Type, Content-Disposition) goes with part 0, which opens the stream.
    let part_headers: Vec<(String, String)> = if k == 0 {
        headers.to_vec()
    } else {
        headers
            .iter()
            .filter(|(n, _)| n == "Authorization")
            .cloned()
            .collect()
    };
    let signal = abort.signal();
    let mut tries = 0;
    let resp: Response = loop {
        tries += 1;
        let r = fetch(Req {
            method: "POST",
            url: &url,
            headers: &part_headers,
            signal: &signal,
            body: Some(body.clone().into()),
            streaming: false,
        })
        .await;
        match r {
            Ok(resp) => break resp,
            Err(e)
                if k > 0
                    && tries < PART_TRIES
                    && abort.reason() == Reason::None
                    && is_type_error(&e) =>
            {
                sleep(200.0 * tries as f64).await;
            }
            Err(e) => return Err(abort.map_error(e, ErrorCode::Network, &what)),
        }
    };
    let status = resp.status();
    let log = text(&resp, 64 * 1024)
        .await
        .map_err(|e| abort.map_error(e, ErrorCode::Network, &what))?;
    if !(200..300).contains(&status) {
        let mut err = classify_response(status, &log, &what);
        if k > 0 && status == 404 && err.code == ErrorCode::RelayError {
            err.message.push_str(" — the relay dropped the upload (the consumer may have left or the gap timeout passed)");
            err.code = ErrorCode::PeerDisconnected;
        }
        return Err(from_client(&err));
    }
    if k == 0 {
        let id = header(&resp, UPLOAD_HEADER).ok_or_else(|| {
            js_error(
                ErrorCode::Unsupported,
                &format!("{what}: the relay does not support segmented uploads (no {UPLOAD_HEADER} header; PROTOCOL.md §4)"),
                None,
            )
        })?;
        *upload_id = Some(id);
    }
    if last {
        let mut status_log = StatusLog::new();
        status_log.push(log.as_bytes());
        return status_log.finish().map_err(|e| from_client(&e));
    }
    if log.contains(crate::client::status::DISCONNECT_LINE) {
        return Err(from_client(&classify_response(status, &log, &what)));
    }
    Ok(String::new())
}
