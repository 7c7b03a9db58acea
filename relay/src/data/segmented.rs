//! Segmented upload (`docs/PROTOCOL.md` §4): a producer that can't stream a request body sends
//! numbered parts with complete bodies; the consumer still sees one continuous response.
//!
//! `part=0` registers a producer like any other (and waits for the consumers), then opens a
//! session under a random id returned in `X-Httpipe-Upload`. Each later part is read whole
//! (at most `--max-part-bytes`, else 413), checked for order (a retry of an accepted part with
//! the same length is a no-op 200; anything else out of order is 409), handed to the
//! consumers, and answered once the bytes are handed on (backpressure). A session that gets
//! no part for `--upload-gap-timeout` truncates its consumers and frees the path.
//!
//! Data API channels (§5.1): every part carries the `channel=ID` of its upload. An upload is
//! tied to the (path, channel) its `part=0` was sent on: a later part naming the upload with
//! another channel, or none, doesn't find it (`unknown-upload`, like an upload id of another
//! path), and a `part=0` naming it starts a new upload on its own (path, channel). So a part
//! can never be spliced into the transfer of another channel, or of the plain path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::request_body::RequestBody;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Limited};
use httpipe::protocol::control::{Rejection, UPLOAD_ABANDONED};
use httpipe::protocol::upload;

use super::body::{Log, LogBody};
use super::transfer::Transfer;
use super::{headers, Meet, Phase, Plane};
use crate::hangup::Hangup;
use crate::metrics::FailReason;
use crate::respond::{rejection, text, Resp};

/// How long an ended upload still answers a retry of its last part with the verdict (the
/// client's request for it may have been cut while the relay waited on a slow consumer).
const VERDICT_KEPT: Duration = Duration::from_secs(120);

/// Uploads in progress (and recently ended ones, for their verdict), by id.
#[derive(Default)]
pub(crate) struct Uploads {
    map: Mutex<HashMap<String, Arc<Upload>>>,
}

impl Uploads {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Upload>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn get(&self, id: &str) -> Option<Arc<Upload>> {
        self.lock().get(id).cloned()
    }
    fn insert(&self, id: String, u: Arc<Upload>) {
        self.lock().insert(id, u);
    }
    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// One segmented upload.
struct Upload {
    id: String,
    path: String,
    /// The Data API channel of `part=0` (§5.1); every later part must carry the same.
    channel: Option<String>,
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
    /// The answer to the part that ended the upload, for a retry of that part.
    verdict: Option<(u64, String)>,
}

struct Live {
    transfer: Transfer,
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

/// Counts a part request from its arrival to its answer, however it ends.
struct Inflight(Arc<Upload>);
impl Inflight {
    fn new(up: &Arc<Upload>) -> Inflight {
        up.inflight.fetch_add(1, Ordering::SeqCst);
        Inflight(up.clone())
    }
}
impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads a part's whole body, at most `max` bytes.
async fn read_part(body: RequestBody, max: usize) -> Result<Bytes, Rejection> {
    match Limited::new(body, max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(Rejection::PartTooLarge { max })
        }
        Err(_) => Err(Rejection::PartBodyFailed),
    }
}

fn answer(log: String) -> Resp {
    text(StatusCode::OK, log)
}

/// What a part request says (§4).
pub struct Part {
    /// `part=K`.
    pub k: u64,
    /// `final=1`.
    pub is_final: bool,
    /// `upload=ID` or the `X-Httpipe-Upload` header.
    pub upload: Option<String>,
}

/// Handles `POST /{path}?part=K...` (the router checked method, path and token).
pub async fn handle(
    plane: Arc<Plane>,
    headers: HeaderMap,
    body: RequestBody,
    hangup: Hangup,
    meet: Meet,
    part: Part,
) -> Resp {
    let id = part.upload.clone().or_else(|| {
        headers
            .get(upload::HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    // an upload is found only on the (path, channel) it was started on (§4, §5.1)
    let up = id
        .and_then(|id| plane.uploads.get(&id))
        .filter(|u| u.path == meet.path && u.channel == meet.channel);
    // `part=0` starts an upload, unless it names the current upload of this path: then it is
    // a retry of the accepted part 0, answered like any other retry.
    if part.k == 0 && up.is_none() {
        return start(plane, headers, body, hangup, meet, part.is_final).await;
    }
    let Some(up) = up else {
        return rejection(&Rejection::UnknownUpload);
    };
    let inflight = Inflight::new(&up);
    let bytes = match read_part(body, plane.limits.max_part_bytes).await {
        Ok(b) => b,
        Err(r) => return rejection(&r),
    };
    accept_detached(plane, up, inflight, part, bytes).await
}

/// Accepts a part in a task of its own: a part handed to one consumer reaches every consumer
/// and is counted, even if its request is cut meanwhile (the retry is then a no-op, §4).
async fn accept_detached(
    plane: Arc<Plane>,
    up: Arc<Upload>,
    inflight: Inflight,
    part: Part,
    bytes: Bytes,
) -> Resp {
    let task = tokio::spawn(async move {
        let _inflight = inflight;
        let mut s = up.session.lock().await;
        accept(&plane, &up, &mut s, part.k, bytes, part.is_final).await
    });
    match task.await {
        Ok(resp) => resp,
        Err(e) => {
            tracing::error!(error = %e, "segmented part task failed");
            rejection(&Rejection::UnknownUpload)
        }
    }
}

/// `part=0`: register as a producer, wait for the consumers, open the session, forward.
async fn start(
    plane: Arc<Plane>,
    req_headers: HeaderMap,
    body: RequestBody,
    hangup: Hangup,
    meet: Meet,
    is_final: bool,
) -> Resp {
    let mut wait = match meet.producer(&plane) {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let bytes = match read_part(body, plane.limits.max_part_bytes).await {
        Ok(b) => b,
        Err(r) => return rejection(&r),
    };
    let (log, log_body) = Log::new();
    log.line(format!("[INFO] Waiting for {} receiver(s)...", meet.n));
    // The request going away drops `wait`: unregistered (§3.6).
    let matched = tokio::select! {
        m = wait.matched() => m,
        _ = plane.reached(Phase::Draining) => return rejection(&Rejection::ShuttingDown),
        // never sent: the peer is gone
        _ = hangup.hung_up() => return rejection(&Rejection::ShuttingDown),
    };
    drop(wait);
    let mut fwd = headers::forwarded(&req_headers, false);
    headers::add_consumer_defaults(&mut fwd);
    let transfer = Transfer::start(&plane, matched, fwd, log, &meet.path);
    let id = new_id();
    let up = Arc::new(Upload {
        id: id.clone(),
        path: meet.path,
        channel: meet.channel,
        session: tokio::sync::Mutex::new(Session {
            live: Some(Live { transfer, log_body }),
            next_part: 0,
            part_lens: Vec::new(),
            verdict: None,
        }),
        inflight: AtomicUsize::new(0),
        touched: Mutex::new(Instant::now()),
    });
    let inflight = Inflight::new(&up);
    plane.uploads.insert(id.clone(), up.clone());
    tokio::spawn(gap_timer(plane.clone(), up.clone()));
    let part = Part {
        k: 0,
        is_final,
        upload: None,
    };
    let resp = accept_detached(plane, up, inflight, part, bytes).await;
    let (mut parts, body) = resp.into_parts();
    if parts.status == StatusCode::OK {
        if let Ok(v) = HeaderValue::from_str(&id) {
            parts.headers.insert(upload::HEADER, v);
        }
        parts.headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(upload::HEADER),
        );
    }
    http::Response::from_parts(parts, body)
}

/// Checks the part's number, hands it to the consumers, and ends the upload on `final` or
/// when every consumer has left.
async fn accept(
    plane: &Arc<Plane>,
    up: &Upload,
    s: &mut Session,
    part: u64,
    bytes: Bytes,
    is_final: bool,
) -> Resp {
    if part < s.next_part {
        if s.part_lens.get(part as usize) != Some(&bytes.len()) {
            return rejection(&Rejection::PartLengthMismatch { part });
        }
        return match &s.verdict {
            Some((k, text)) if *k == part => answer(text.clone()),
            _ => answer(format!("[INFO] Part {part} was already accepted.\n")),
        };
    }
    let Some(live) = s.live.as_mut() else {
        return rejection(&Rejection::UnknownUpload);
    };
    if part > s.next_part {
        let expected = s.next_part;
        return rejection(&Rejection::PartOutOfOrder {
            expected,
            got: part,
        });
    }
    live.transfer.reap_gone();
    let mut outcome = Ok(());
    if live.transfer.alive() == 0 {
        outcome = Err(FailReason::ReceiverDisconnected);
    } else if !bytes.is_empty() {
        // A consumer that stopped reading holds the send (and the session's lock, which the
        // gap timer then waits for): the grace period's end must still fail the transfer with
        // its `[ERROR]` line in this part's answer (§9).
        outcome = tokio::select! {
            biased;
            _ = plane.reached(Phase::Aborting) => Err(FailReason::Shutdown),
            sent = live.transfer.send(bytes.clone()) => sent,
        };
    }
    s.part_lens.push(bytes.len());
    s.next_part += 1;
    if outcome.is_ok() && !is_final {
        return answer(live.log_body.take_available());
    }
    let Some(Live {
        transfer,
        mut log_body,
    }) = s.live.take()
    else {
        return rejection(&Rejection::UnknownUpload);
    };
    match outcome {
        Ok(()) => {
            let _ = transfer.finish().await;
        }
        Err(reason) => transfer.fail(reason),
    }
    let text = log_body.take_available();
    s.verdict = Some((part, text.clone()));
    forget_later(plane.clone(), up.id.clone());
    answer(text)
}

/// Handles `DELETE /{path}?upload=ID` (§4 "Abandoning"; the router checked path and token):
/// the producer gives the upload up, its consumers are truncated at once.
pub async fn abandon(plane: Arc<Plane>, meet: Meet, id: &str) -> Resp {
    // only on the (path, channel) it was started on (§4, §5.1)
    let up = plane
        .uploads
        .get(id)
        .filter(|u| u.path == meet.path && u.channel == meet.channel);
    let Some(up) = up else {
        return rejection(&Rejection::UnknownUpload);
    };
    let mut s = up.session.lock().await;
    if s.live.is_none() {
        return rejection(&Rejection::UnknownUpload);
    }
    drop_upload(&plane, &up, &mut s, FailReason::ProducerAborted);
    text(StatusCode::OK, format!("{}\n", UPLOAD_ABANDONED))
}

/// Removes an ended upload after [`VERDICT_KEPT`].
fn forget_later(plane: Arc<Plane>, id: String) {
    tokio::spawn(async move {
        tokio::time::sleep(VERDICT_KEPT).await;
        plane.uploads.remove(&id);
    });
}

/// Truncates the consumers and frees the path if no part arrives for the gap timeout, or
/// when the relay's grace period ends (§4, §9).
async fn gap_timer(plane: Arc<Plane>, up: Arc<Upload>) {
    let gap = plane.limits.upload_gap_timeout;
    let idle = || up.inflight.load(Ordering::SeqCst) == 0 && up.idle_for() >= gap;
    loop {
        if idle() {
            let mut s = up.session.lock().await;
            if idle() {
                return drop_upload(&plane, &up, &mut s, FailReason::UploadGapTimeout);
            }
        }
        let nap = gap
            .saturating_sub(up.idle_for())
            .max(Duration::from_millis(50));
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            _ = plane.reached(Phase::Aborting) => {
                let mut s = up.session.lock().await;
                return drop_upload(&plane, &up, &mut s, FailReason::Shutdown);
            }
        }
        if up.session.lock().await.live.is_none() {
            return;
        }
    }
}

fn drop_upload(plane: &Arc<Plane>, up: &Upload, s: &mut Session, reason: FailReason) {
    if let Some(live) = s.live.take() {
        tracing::info!(path = %plane.log_path(&up.path), reason = reason.as_str(), "segmented upload dropped");
        live.transfer.fail(reason); // no End: the consumers' responses are aborted (§3.3)
        forget_later(plane.clone(), up.id.clone());
    }
}
