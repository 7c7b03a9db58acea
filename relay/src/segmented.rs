//! Segmented upload (`docs/PROTOCOL.md` §4): a producer that can't stream a request body sends
//! numbered parts with complete bodies; the consumer still sees one continuous response.
//!
//! `part=0` registers a producer like any other (and waits for the consumers), then opens a
//! session under a random id returned in `X-Httpipe-Upload`. Each later part is read whole
//! (at most `--max-part-bytes`, else 413), checked for order (a retry of an accepted part with
//! the same length is a no-op 200; anything else out of order is 409), handed to the
//! consumers, and answered once the bytes are handed on (backpressure). A session that gets
//! no part for `--upload-gap-timeout` truncates its consumers and frees the path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Limited};
use httpipe::protocol::control::{self, Rejection};
use httpipe::protocol::upload;
use hyper::body::Incoming;

use crate::data::body::{Log, LogBody};
use crate::data::headers;
use crate::data::producer::Pump;
use crate::data::Handoff;
use crate::metrics::FailReason;
use crate::pairing::Transfer;
use crate::respond::{rejection, text, Resp};
use crate::router::Params;
use crate::state::Shared;

/// Uploads in progress, by id.
#[derive(Default)]
pub struct Uploads {
    map: Mutex<HashMap<String, Arc<Upload>>>,
}

impl Uploads {
    fn get(&self, id: &str) -> Option<Arc<Upload>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }
    fn insert(&self, id: String, u: Arc<Upload>) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, u);
    }
    fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// One segmented upload.
struct Upload {
    id: String,
    path: String,
    session: tokio::sync::Mutex<Session>,
    /// Part requests being read or forwarded right now (the gap timer waits for them).
    inflight: AtomicUsize,
    touched: Mutex<Instant>,
}

impl Upload {
    fn touch(&self) {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }
    fn idle_for(&self) -> Duration {
        self.touched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }
}

struct Session {
    /// `None` once the upload ended (finished, failed or timed out).
    live: Option<Live>,
    next_part: u64,
    part_lens: Vec<usize>,
}

struct Live {
    pump: Pump,
    transfer: Transfer<Handoff>,
    log: Log,
    log_body: LogBody,
}

fn new_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // Only if the OS has no randomness at all: fall back to the clock.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b.copy_from_slice(&t.to_le_bytes());
    }
    URL_SAFE_NO_PAD.encode(b)
}

/// Decrements `inflight` when a part request ends, however it ends.
struct Inflight(Arc<Upload>);
impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads a part's whole body, at most `max` bytes.
async fn read_part(body: Incoming, max: usize) -> Result<Bytes, Resp> {
    match Limited::new(body, max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("[ERROR] A part may have at most {max} bytes.\n"),
            ))
        }
        Err(_) => Err(text(
            StatusCode::BAD_REQUEST,
            "[ERROR] The part's body failed.\n",
        )),
    }
}

fn answer(log: String, upload_id: Option<&str>) -> Resp {
    let mut r = text(StatusCode::OK, log);
    if let Some(id) = upload_id {
        if let Ok(v) = HeaderValue::from_str(id) {
            r.headers_mut().insert(upload::HEADER, v);
        }
        r.headers_mut().insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(upload::HEADER),
        );
    }
    r
}

/// Handles `POST /{path}?part=K...` (the router checked method, path and token).
pub async fn handle(
    state: Shared,
    req: Request<Incoming>,
    path: String,
    n: usize,
    params: Params,
) -> Resp {
    let Some(part) = params.get(upload::PART).and_then(|p| p.parse::<u64>().ok()) else {
        return rejection(&Rejection::InvalidParameter("part"));
    };
    let is_final = matches!(params.get(upload::FINAL), Some("1") | Some("true"));
    let (parts, body) = req.into_parts();
    let id = params.get(upload::UPLOAD).map(str::to_string).or_else(|| {
        parts
            .headers
            .get(upload::HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    let up = id
        .and_then(|id| state.uploads.get(&id))
        .filter(|u| u.path == path);
    // `part=0` starts an upload, unless it names the current upload of this path: then it is
    // a retry of the accepted part 0, answered like any other retry.
    if part == 0 && up.is_none() {
        let hangup = crate::hangup::Hangup::of(&parts.extensions);
        return start(state, parts.headers, body, path, n, is_final, hangup).await;
    }
    let Some(up) = up else {
        return text(
            StatusCode::NOT_FOUND,
            "[ERROR] Unknown or expired upload id.\n",
        );
    };
    up.inflight.fetch_add(1, Ordering::SeqCst);
    let _inflight = Inflight(up.clone());
    let bytes = match read_part(body, state.config.max_part_bytes).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut s = up.session.lock().await;
    if s.live.is_none() {
        return text(
            StatusCode::NOT_FOUND,
            "[ERROR] Unknown or expired upload id.\n",
        );
    }
    if part < s.next_part {
        return if s.part_lens.get(part as usize) == Some(&bytes.len()) {
            answer(format!("[INFO] Part {part} was already accepted.\n"), None)
        } else {
            text(
                StatusCode::CONFLICT,
                format!("[ERROR] Part {part} was already accepted with another length.\n"),
            )
        };
    }
    if part > s.next_part {
        let next = s.next_part;
        return text(
            StatusCode::CONFLICT,
            format!("[ERROR] Expected part {next}, got part {part}.\n"),
        );
    }
    forward(&state, &up, &mut s, bytes, is_final).await
}

/// `part=0`: register as a producer, wait for the consumers, forward, open the session.
async fn start(
    state: Shared,
    req_headers: HeaderMap,
    body: Incoming,
    path: String,
    n: usize,
    is_final: bool,
    hangup: crate::hangup::Hangup,
) -> Resp {
    let mut wait = match state.hub.producer(&path, n) {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let bytes = match read_part(body, state.config.max_part_bytes).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (log, log_body) = Log::new();
    log.line(format!("[INFO] Waiting for {n} receiver(s)..."));
    // The request going away drops `wait` (unregistered); so does a hang-up (§3.6).
    let m = tokio::select! {
        m = wait.matched() => m,
        _ = hangup.hung_up() => return http::Response::new(crate::respond::empty()), // never sent: the peer is gone
    };
    drop(wait);
    let mut fwd = headers::forwarded(&req_headers, false);
    headers::add_consumer_defaults(&mut fwd);
    let pump = Pump::start(&state, m.consumers, fwd, &log);
    state.metrics.segmented_started();
    let id = new_id();
    let up = Arc::new(Upload {
        id: id.clone(),
        path,
        session: tokio::sync::Mutex::new(Session {
            live: Some(Live {
                pump,
                transfer: m.transfer,
                log,
                log_body,
            }),
            next_part: 0,
            part_lens: Vec::new(),
        }),
        inflight: AtomicUsize::new(1),
        touched: Mutex::new(Instant::now()),
    });
    let _inflight = Inflight(up.clone());
    state.uploads.insert(id.clone(), up.clone());
    tokio::spawn(gap_timer(state.clone(), up.clone()));
    let mut s = up.session.lock().await;
    let resp = forward(&state, &up, &mut s, bytes, is_final).await;
    if resp.status() != StatusCode::OK || is_final {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    if let Ok(v) = HeaderValue::from_str(&id) {
        parts.headers.insert(upload::HEADER, v);
    }
    parts.headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(upload::HEADER),
    );
    http::Response::from_parts(parts, body)
}

/// Hands the next part to the consumers; ends the session on `final` or when every consumer
/// has left.
async fn forward(
    state: &Shared,
    up: &Upload,
    s: &mut Session,
    bytes: Bytes,
    is_final: bool,
) -> Resp {
    let Some(live) = s.live.as_mut() else {
        return text(
            StatusCode::NOT_FOUND,
            "[ERROR] Unknown or expired upload id.\n",
        );
    };
    live.pump.reap_gone(&live.log);
    let len = bytes.len();
    if !bytes.is_empty() && live.pump.alive() > 0 {
        live.pump.send_all(bytes, state, &live.log).await;
    }
    s.part_lens.push(len);
    s.next_part += 1;
    let Some(mut live) = s.live.take() else {
        return text(StatusCode::NOT_FOUND, "\n");
    };
    if live.pump.alive() == 0 {
        drop(live.transfer);
        end(state, up, FailReason::ReceiverDisconnected);
        return answer(live.log_body.take_available(), None);
    }
    if !is_final {
        let out = live.log_body.take_available();
        s.live = Some(live);
        return answer(out, None);
    }
    let result = live.pump.finish(live.transfer, &live.log).await;
    match result {
        Ok(()) => {
            live.log.line("[INFO] Sent successfully!");
            live.log
                .line("[INFO] All receiver(s) was/were received successfully.");
            live.log.line(control::TRANSFER_SUCCESSFUL);
            state.uploads.remove(&up.id);
            state.metrics.segmented_ended();
            state.metrics.completed();
        }
        Err(reason) => end(state, up, reason),
    }
    answer(live.log_body.take_available(), None)
}

fn end(state: &Shared, up: &Upload, reason: FailReason) {
    state.uploads.remove(&up.id);
    state.metrics.segmented_ended();
    state.metrics.failed(reason);
}

/// Truncates the consumers and frees the path if no part arrives for the gap timeout.
async fn gap_timer(state: Shared, up: Arc<Upload>) {
    let gap = state.config.upload_gap_timeout;
    loop {
        let idle = up.idle_for();
        if idle < gap || up.inflight.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(gap.saturating_sub(idle).max(Duration::from_millis(50))).await;
            let s = up.session.lock().await;
            if s.live.is_none() {
                return;
            }
            continue;
        }
        let mut s = up.session.lock().await;
        if up.inflight.load(Ordering::SeqCst) > 0 || up.idle_for() < gap {
            continue;
        }
        if let Some(live) = s.live.take() {
            tracing::info!(path = %state.log_path(&up.path), "segmented upload: gap timeout, truncating");
            drop(live); // no End: the consumers' responses are aborted (§3.3)
            end(&state, &up, FailReason::UploadGapTimeout);
        }
        return;
    }
}
