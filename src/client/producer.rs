//! The producer (`send`) as a sans-IO state machine (`PROTOCOL.md` §3, §4, §5, §10, §11):
//! rendezvous, the choice between a streaming and a segmented upload and the fallback from
//! one to the other, the segmented part loop with its retries, the status log, and what every
//! failure means. It knows nothing about HTTP libraries: an adapter (the wasm `fetch` one, the
//! native reqwest one) asks [`Producer::poll`] what to do, does it, and reports back.
//!
//! ```text
//! Start ─rendezvous?─▶ Rendezvous ─data URL─▶ Plan ─▶ Stream ──log ends OK──▶ Done
//!                                              │        │ failed, all pulled bytes kept,
//!                                              │        │ fallback allowed
//!                                              ▼        ▼
//!                                          Segmented ◀─ replay ── (parts, retries) ─▶ Done
//!                              Stream broke after bytes left ─▶ Probe the relay ─▶ Failed
//! ```

use std::collections::VecDeque;

use super::disposition;
use super::error::{
    classify_response, unavailable_now, Error, ErrorCode, Failure, Source, StopReason,
};
use super::parts::{ByteChunk, PartCutter};
use super::receipt::{self, Commitment, ReceiptReport};
use super::rendezvous::{auth_headers, Begin, Rendezvous};
use super::request::{Headers, Method, Request};
use super::resume::{agree, ResumeClock, ResumePlan};
use super::stall::{self, StallStep, STALL_RECHECK_MS};
use super::status::{StatusLog, Verdict};
use super::transport::{
    OriginMemory, Plan, RuntimeStreams, StopOrder, Transport, UploadCut, UploadMode,
};
use super::urls::{origin, part_url, percent_encode_component, ConnectMode, RelayBase};
use crate::protocol::channel::{self, key_header as channel_key};
use crate::protocol::control::{Code, WITHDRAW_WAIT_S};
use crate::protocol::headers::{
    resume_value, size_value, AUTHORIZATION, CONTENT_DISPOSITION, CONTENT_TYPE, ERROR_CODE,
    OCTET_STREAM, PEER_HELLO, X_PIPING,
};
use crate::protocol::hello::{
    producer_hello, PeerHello, ResumeHello, FAILURE_NOTICE_TIMEOUT_S, RESUME_RETRY_MS, STALL_CALL_S,
};
use crate::protocol::upload::{HEADER as UPLOAD_HEADER, UPLOAD as UPLOAD_QUERY};

/// Tries per segmented part after the first (network errors only; the relay accepts an
/// idempotent re-send of an accepted part, §4).
pub const PART_TRIES: u32 = 3;
/// Milliseconds before retry `n` (1-based) of a part: `n ×` this.
pub const PART_RETRY_BACKOFF_MS: f64 = 200.0;
/// How often the relay is probed after a streaming upload broke (one probe stuck on a
/// half-closed pooled connection must not decide).
pub const PROBE_TRIES: u32 = 2;
/// Milliseconds a probe may take.
pub const PROBE_TIMEOUT_MS: f64 = 2500.0;
/// At most this many bytes pulled by a streaming attempt are kept for a segmented replay;
/// past it, the attempt can no longer fall back (§10).
pub const REPLAY_LIMIT: usize = 4 * 1024 * 1024;

/// What the producer tells the consumer about the payload (§3.3, §11.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub content_type: Option<String>,
    pub filename: Option<String>,
    /// Plaintext bytes, when known.
    pub size: Option<u64>,
}

/// Everything a send needs to know up front.
#[derive(Debug, Clone)]
pub struct SendConfig {
    pub relay: RelayBase,
    pub path: String,
    pub token: Option<String>,
    /// Wait on the Connect API first (§5).
    pub rendezvous: bool,
    /// Seconds to wait for the consumer.
    pub timeout_s: Option<f64>,
    pub upload: UploadMode,
    /// Segmented part size in bytes (see [`super::parts::part_size`]).
    pub part_size: usize,
    pub meta: Metadata,
    /// The payload is encrypted: no metadata in clear (§11.1).
    pub encrypted: bool,
    /// Whether the runtime can send a streaming request body (feature detection, §10).
    pub runtime_streams: RuntimeStreams,
    /// What cuts a streaming upload in this runtime (§10, §11.2 step 5).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // read by the wasm driver's
    pub upload_cut: UploadCut,
    /// Delivery receipts (§12): the transfer's id and whether to wait for a receipt. `None`:
    /// no hello at all (the rendezvous is plain §5).
    pub receipt: Option<ReceiptConfig>,
    /// Resume after a break (§12.3): seconds to keep trying; `None`: no resume. Needs a
    /// transfer id ([`SendConfig::receipt`]).
    pub resume_s: Option<f64>,
}

/// The producer's side of §12.
#[derive(Debug, Clone)]
pub struct ReceiptConfig {
    /// The transfer id ([`receipt::transfer_id`]).
    pub transfer: String,
    /// Wait for a receipt (when the consumer sends them).
    pub wait: bool,
    /// Seconds to wait for it after the relay's success.
    pub timeout_s: f64,
    /// Accept a consumer's receipt for the ciphertext of an encrypted transfer (a consumer
    /// without keys: unauthenticated, §12.2); otherwise only an authenticated one delivers.
    pub ciphertext: bool,
}

/// Headers of the producer's request: token, `Content-Type`, `Content-Disposition` (§3.3) and
/// the declared plaintext size as `X-Piping: httpipe-size=N` (a streaming upload has no
/// `Content-Length`; the relay forwards `X-Piping`). When encrypting, the relay sees no
/// metadata: `Content-Type: application/octet-stream`, and neither the filename nor the size
/// (they would travel in clear text, §11.1).
pub fn producer_headers(
    token: Option<&str>,
    meta: &Metadata,
    encrypted: bool,
) -> Vec<(&'static str, String)> {
    let mut h = auth_headers(token);
    if encrypted {
        h.push((CONTENT_TYPE, OCTET_STREAM.into()));
        return h;
    }
    if let Some(ct) = &meta.content_type {
        h.push((CONTENT_TYPE, ct.clone()));
    }
    if let Some(name) = &meta.filename {
        h.push((CONTENT_DISPOSITION, disposition::encode(name)));
    }
    if let Some(size) = meta.size {
        h.push((X_PIPING, size_value(size)));
    }
    h
}

/// What a successful send reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    pub transport: Transport,
    /// The relay's final status line, `[STATE:TRANSFER_SUCCESSFUL]`.
    pub relay_state: String,
    /// The consumer's verified receipt (§12); `None` when the consumer doesn't send them.
    pub receipt: Option<ReceiptReport>,
    /// Breaks the transfer resumed after (§12.3).
    pub resumes: u32,
}

/// What the adapter must do next.
#[derive(Debug)]
pub enum Step {
    /// `GET` this Connect API request; answer with [`Producer::on_response`] (status, body)
    /// or [`Producer::on_failure`].
    Rendezvous(Request),
    /// `POST` this with the source as one streaming body; answer with
    /// [`Producer::on_stream_refused`] (a status other than 200, with its body), then
    /// [`Producer::on_stream_log`] for each piece of the response body and
    /// [`Producer::on_stream_end`]; or [`Producer::on_stream_failed`].
    Stream(Request),
    /// The next part needs more source: answer with [`Producer::on_chunk`],
    /// [`Producer::on_source_end`] or [`Producer::on_source_error`].
    NeedSource,
    /// `POST` this with [`Producer::part_body`] as the complete body; answer with
    /// [`Producer::on_response`] or [`Producer::on_failure`].
    Part(Request),
    /// Wait this many milliseconds, then [`Producer::on_slept`].
    Sleep(f64),
    /// `GET` this (any answer will do) to learn whether the relay is still up; answer with
    /// [`Producer::on_response`] or [`Producer::on_failure`].
    Probe(Request),
    /// The relay reported success and the consumer sends receipts (§12.2): `GET` this
    /// Connect call on the transfer's channel; answer with [`Producer::on_receipt`] (with what
    /// was sent) or [`Producer::on_failure`].
    Receipt(Request),
    /// The transfer resumes at this wire byte (§12.3): stop the old upload; from now on the
    /// upload's source is what the replay window gives from here
    /// ([`ReplayWindow::replay_from`]: kept bytes, or the source reopened), then the rest of
    /// the source. Then poll.
    ///
    /// [`ReplayWindow::replay_from`]: super::resume::ReplayWindow::replay_from
    ResumeFrom(u64),
    /// Finished.
    Done(SendReport),
    /// Failed; the adapter stops whatever still runs.
    Failed(Error),
}

/// How a streaming upload failed, as the adapter saw it.
#[derive(Debug)]
pub struct StreamFailure<T> {
    pub failure: Failure,
    /// Every chunk pulled from the source so far, if none was dropped (at most
    /// [`REPLAY_LIMIT`] bytes); `None` once more went out.
    pub replay: Option<Vec<T>>,
    /// The response had started (the failure broke the status log).
    pub response_started: bool,
    /// The source itself failed (its error is what to report).
    pub source_error: Option<Error>,
}

struct Current<T> {
    body: Vec<T>,
    is_final: bool,
    tries: u32,
    request: Request,
    k: u64,
}

struct Segmented<T> {
    data_url: String,
    headers: Vec<(&'static str, String)>,
    cutter: Option<PartCutter<T>>,
    tail: VecDeque<Vec<T>>,
    upload_id: Option<String>,
    k: u64,
    current: Option<Current<T>>,
    /// After a fallback from streaming: the origin to remember as "can't stream" on success.
    fell_back_from: Option<String>,
}

impl<T: ByteChunk> Segmented<T> {
    fn new(data_url: String, headers: Vec<(&'static str, String)>, part_size: usize) -> Self {
        Segmented {
            data_url,
            headers,
            cutter: Some(PartCutter::new(part_size)),
            tail: VecDeque::new(),
            upload_id: None,
            k: 0,
            current: None,
            fell_back_from: None,
        }
    }

    fn what(&self, k: u64) -> String {
        format!("segmented upload part {k} to {}", self.data_url)
    }

    /// The `DELETE` that gives upload `id` up (§4 "Abandoning"): on the upload's channel, if
    /// any, with the token.
    fn abandonment(&self, id: &str) -> Request {
        let sep = if self.data_url.contains('?') {
            '&'
        } else {
            '?'
        };
        let url = format!(
            "{}{sep}{}={}",
            self.data_url,
            UPLOAD_QUERY,
            percent_encode_component(id)
        );
        let headers = self
            .headers
            .iter()
            .filter(|(n, _)| *n == AUTHORIZATION || *n == channel::KEY_HEADER)
            .cloned()
            .collect();
        Request {
            method: Method::Delete,
            timeout_ms: Some(WITHDRAW_WAIT_S * 1000.0),
            ..Request::get(url, headers)
        }
        .into_last_word()
    }

    /// The next part to send, if one is ready (`None`: more source needed).
    fn next_part(&mut self) -> Option<&Current<T>> {
        if self.current.is_none() {
            let (body, is_final) = if let Some(p) = self.cutter.as_mut().and_then(|c| c.pop_full())
            {
                (p, false)
            } else if self.cutter.is_none() {
                let body = self.tail.pop_front()?;
                let last = self.tail.is_empty();
                if last && self.k == 0 {
                    // Part 0 opens the upload and returns its id; an (empty) final part follows.
                    self.tail.push_back(Vec::new());
                    (body, false)
                } else {
                    (body, last)
                }
            } else {
                return None;
            };
            let k = self.k;
            let url = part_url(&self.data_url, k, self.upload_id.as_deref(), is_final);
            // Metadata goes with part 0, which opens the stream; later parts carry the token
            // and, on a channel, its key (§5.1: every part names the channel).
            let headers = if k == 0 {
                self.headers.clone()
            } else {
                self.headers
                    .iter()
                    .filter(|(n, _)| *n == AUTHORIZATION || *n == channel::KEY_HEADER)
                    .cloned()
                    .collect()
            };
            self.current = Some(Current {
                body,
                is_final,
                tries: 0,
                request: Request::post(url, headers),
                k,
            });
        }
        self.current.as_ref()
    }

    fn source_end(&mut self) {
        if let Some(c) = self.cutter.take() {
            self.tail.extend(c.finish());
        }
    }

    /// The relay's answer to the current part.
    fn on_response(
        &mut self,
        status: u16,
        headers: &dyn Headers,
        body: &str,
    ) -> Result<Option<String>, Error> {
        let Some(cur) = self.current.take() else {
            return Err(misuse("a part answer without a part"));
        };
        let what = self.what(cur.k);
        if !(200..300).contains(&status) {
            let mut err = classify_response(status, body, &what);
            if err.code == ErrorCode::RelayError {
                // The relay's refusal code (§3.5); a relay without codes: its status (§4).
                let code = headers.get(ERROR_CODE).and_then(|c| Code::parse(&c));
                let refusal = match (code, status) {
                    (Some(c), _) => Some(c),
                    (None, 404) if cur.k > 0 => Some(Code::UnknownUpload),
                    (None, 409) => Some(Code::PartOutOfOrder),
                    (None, 413) => Some(Code::PartTooLarge),
                    _ => None,
                };
                match refusal {
                    Some(Code::UnknownUpload) if cur.k > 0 => {
                        err.code = ErrorCode::PeerDisconnected;
                        err.message.push_str(" — the relay dropped the upload (the consumer may have left or the gap timeout passed)");
                    }
                    Some(Code::PartOutOfOrder | Code::PartLengthMismatch) => err.message.push_str(
                        " — the relay expected another part number (another producer on this upload?)",
                    ),
                    Some(Code::PartTooLarge) => {
                        err.code = ErrorCode::Unsupported;
                        err.message
                            .push_str(" — the part is larger than the relay accepts; use a smaller part size");
                    }
                    _ => {}
                }
            }
            return Err(err);
        }
        if cur.k == 0 {
            let id = headers.get(UPLOAD_HEADER).ok_or_else(|| {
                Error::new(
                    ErrorCode::Unsupported,
                    format!("{what}: the relay does not support segmented uploads (no {UPLOAD_HEADER} header; PROTOCOL.md §4)"),
                )
            })?;
            self.upload_id = Some(id.trim().to_string());
        }
        let mut log = StatusLog::new();
        let verdict = log.push(body.as_bytes());
        if cur.is_final {
            return log.finish(&what).map(Some);
        }
        if verdict == Verdict::PeerDisconnected {
            return Err(classify_response(status, body, &what));
        }
        self.k += 1;
        Ok(None)
    }

    /// The current part's request failed: `Ok(ms)` to retry after, or the error.
    fn on_failure(&mut self, f: Failure) -> Result<f64, Error> {
        let Some(cur) = self.current.as_mut() else {
            return Err(misuse("a part failure without a part"));
        };
        cur.tries += 1;
        if cur.k > 0 && cur.tries < PART_TRIES && f.stop == StopReason::None && f.network {
            return Ok(PART_RETRY_BACKOFF_MS * cur.tries as f64);
        }
        let k = cur.k;
        Err(f.into_error(ErrorCode::Network, &self.what(k)))
    }
}

/// Where the segmented loop is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SegPhase {
    /// Ready to send the next part or ask for source.
    Ready,
    /// A part request is out.
    AwaitPart,
    /// Source was asked for.
    AwaitSource,
    /// A retry must wait this many milliseconds (not yet told to the adapter).
    SleepDue(f64),
    /// The adapter sleeps.
    Sleeping,
}

enum State<T> {
    Start,
    AwaitRendezvous(Rendezvous),
    Plan(String),
    Streaming {
        request: Request,
        fallback: bool,
        log: StatusLog,
        issued: bool,
    },
    Probing {
        request: Request,
        tries: u32,
        cause: Option<Source>,
        issued: bool,
    },
    Segmented {
        seg: Box<Segmented<T>>,
        phase: SegPhase,
    },
    /// The relay reported success: the receipt call (made at the next poll, so that it states
    /// the producer's end, §12.2).
    AwaitReceipt {
        report: SendReport,
        issued: bool,
    },
    /// After a break (§12.3): meeting the consumer on the transfer's channel.
    Resuming {
        clock: ResumeClock,
        phase: ResumePhase,
        /// What is reported if the resume time runs out.
        error: Error,
        /// The relay had reported success (the consumer's side broke after it).
        report: Option<SendReport>,
    },
    /// The meeting agreed on this wire offset: tell the adapter.
    Rewind(u64),
    Finished(Option<Result<SendReport, Error>>),
}

/// Where a resume meeting is (§12.3).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ResumePhase {
    /// A call is to be made (`issued`: it is out).
    Call {
        issued: bool,
    },
    /// A call failed below HTTP or got a 503: wait, then call again.
    SleepDue(f64),
    Sleeping,
}

/// The producer side of one transfer.
pub struct Producer<T> {
    cfg: SendConfig,
    headers: Vec<(&'static str, String)>,
    state: State<T>,
    data_url: Option<String>,
    learned: Option<(String, bool)>,
    /// The consumer's rendezvous hello said it sends receipts (§12.1).
    peer_sends_receipts: bool,
    /// ... and that it decrypts (`receipt=decrypted`).
    peer_decrypts: bool,
    /// ... and that it resumes (§12.3).
    peer_resumes: bool,
    /// The relay delivered every byte (its success line came): past the point where a
    /// failure notice helps a resuming consumer (§12.3).
    delivered: bool,
    /// The rendezvous met a consumer (§5): it now waits for this producer.
    met: bool,
    /// The relay reported the transfer's success (§3.2).
    relay_succeeded: bool,
    /// The transfer failed because its source did (§11.2 step 5).
    source_failed: bool,
    /// The `DELETE` that abandons the segmented upload in progress (§4 "Abandoning"), once
    /// its part 0 was accepted.
    abandon: Option<Request>,
    /// An upload broke and the sides met to resume (§12.3): the consumer is in the resume
    /// protocol, where the failure notice reaches it, not on the data URL.
    broke: bool,
    /// The data URL of the rendezvous (resumed uploads go to its channel, §12.3).
    stream_url: Option<String>,
    /// The transport of the last upload.
    transport: Transport,
    /// Breaks resumed after.
    resumes: u32,
    /// What the producer sent, once its source ended ([`Producer::attest`], §12.2).
    sent: Option<Commitment>,
    /// The adapter's clock (milliseconds) and replay window (`low`, `high`), from
    /// [`Producer::observe`].
    now_ms: f64,
    window: (u64, u64),
    /// The window a stall call that is out offered (§12.4).
    stall_offer: Option<(u64, u64)>,
}

/// No receipt came (§12.2 verdicts): `UNCONFIRMED`, with the network failure if there was one.
fn no_receipt(timeout_s: f64, failure: Option<Failure>) -> Error {
    let msg = "the relay delivered every byte, but the receiver sent no receipt";
    match failure {
        None => Error::new(
            ErrorCode::Unconfirmed,
            format!("{msg} within {timeout_s} s (PROTOCOL.md §12.2; raise receiptTimeout, or ask the receiving side)"),
        ),
        Some(f) => f.into_error(
            ErrorCode::Unconfirmed,
            &format!("{msg}: waiting for it failed"),
        ),
    }
}

/// The resume time ran out (§12.3): the break's error, saying how long it tried.
fn gave_up(mut e: Error, clock: ResumeClock) -> Error {
    e.message = format!(
        "{} (and the receiver did not come back within {} s to resume, PROTOCOL.md §12.3)",
        e.message, clock.seconds
    );
    e
}

/// A request step is handed to the adapter once; a poll before its answer is a misuse.
fn issue_once(issued: &mut bool, during: &str, step: impl FnOnce() -> Step) -> Step {
    if std::mem::replace(issued, true) {
        return Step::Failed(misuse(&format!("poll {during}")));
    }
    step()
}

fn misuse(what: &str) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!("internal error in the SDK's producer: {what}"),
    )
}

impl<T: ByteChunk> Producer<T> {
    pub fn new(cfg: SendConfig) -> Result<Self, Error> {
        // Validate the path now, before anything waits.
        cfg.relay.data_url(&cfg.path)?;
        let headers = producer_headers(cfg.token.as_deref(), &cfg.meta, cfg.encrypted);
        Ok(Producer {
            cfg,
            headers,
            state: State::Start,
            data_url: None,
            learned: None,
            peer_sends_receipts: false,
            peer_decrypts: false,
            peer_resumes: false,
            delivered: false,
            met: false,
            relay_succeeded: false,
            source_failed: false,
            abandon: None,
            broke: false,
            stream_url: None,
            transport: Transport::Stream,
            resumes: 0,
            sent: None,
            now_ms: 0.0,
            window: (0, 0),
            stall_offer: None,
        })
    }

    /// The adapter's clock in milliseconds and its replay window's `low` and `high` wire
    /// offsets (§12.3); called before every [`poll`](Self::poll) when resume is on.
    pub fn observe(&mut self, now_ms: f64, low: u64, high: u64) {
        self.now_ms = now_ms;
        self.window = (low, high);
    }

    /// True while a break is being resumed (§12.3): progress says "reconnecting".
    pub fn is_reconnecting(&self) -> bool {
        matches!(self.state, State::Resuming { .. } | State::Rewind(_))
    }

    /// Breaks resumed after so far (§12.3).
    pub fn resumed(&self) -> u32 {
        self.resumes
    }

    /// True once the rendezvous said both sides resume (§12.3): the adapter keeps a replay
    /// window of what it hands to the upload.
    pub fn resumes(&self) -> bool {
        self.peer_resumes && self.cfg.resume_s.is_some() && self.cfg.receipt.is_some()
    }

    fn resume_plan(&self) -> Option<ResumePlan> {
        let c = &self.cfg;
        Some(ResumePlan {
            relay: c.relay.clone(),
            path: c.path.clone(),
            token: c.token.clone(),
            transfer: c.receipt.as_ref()?.transfer.clone(),
        })
    }

    /// When the transfer failed with `e` for another reason than the break (its source, its
    /// application) while the consumer may be resuming: the call that tells it so (§12.3),
    /// for the adapter to make in the background (any answer will do).
    ///
    /// Also without resume when this producer promised its end (§12.2) and failed for its own
    /// reason ([`Producer::failed_locally`]): a consumer whose body ended cleanly anyway (a
    /// runtime that ends a stopped upload cleanly) meets it with its receipt call.
    pub fn failure_notice(&self, e: &Error) -> Option<Request> {
        // After the relay's success the receipt call already offers the resume, and a
        // consumer that had not come by the end of it is not resuming.
        let told = self.resumes() || (self.states_end() && self.failed_locally(e));
        if !told
            || self.stream_url.is_none()
            || self.delivered
            || e.code == ErrorCode::PeerDisconnected
        {
            return None;
        }
        let hello = ResumeHello::Failed {
            code: e.code.as_str().to_string(),
        };
        self.resume_plan()?
            .call(hello, FAILURE_NOTICE_TIMEOUT_S)
            .ok()
            .map(Request::into_last_word)
    }

    /// When the transfer failed with `e` because of its source or the caller's abort, after
    /// the rendezvous met a consumer and before the relay reported success: the withdrawal
    /// (§3.10, §11.2 step 6) that tells that consumer, for the adapter to make (any answer
    /// will do; it waits for it at most [`WITHDRAW_WAIT_S`] s). The upload may never have
    /// reached the relay (Node's `fetch` sends no request head before the first body byte),
    /// and then nothing else ends the consumer's wait. Without a rendezvous no consumer was
    /// told of this producer: one waiting on the path waits for any producer, as it would have.
    /// A segmented upload that already opened (its part 0 accepted) is abandoned instead
    /// (§4 "Abandoning", with or without a rendezvous): its consumer is truncated at once
    /// rather than after the relay's gap timeout.
    pub fn withdrawal(&self, e: &Error) -> Option<Request> {
        if !self.failed_locally(e) || self.relay_succeeded {
            return None;
        }
        // a segmented upload holds the path (the relay refuses a withdrawal then): abandon it
        if let Some(abandon) = &self.abandon {
            return Some(abandon.clone());
        }
        if !self.met || self.broke || self.resumes > 0 {
            return None;
        }
        let url = self.data_url.clone()?;
        let request = Request {
            method: Method::Delete,
            timeout_ms: Some(WITHDRAW_WAIT_S * 1000.0),
            ..Request::get(url, auth_headers(self.cfg.token.as_deref()))
        };
        Some(request.into_last_word())
    }

    /// The transfer failed with `e` for a reason of the producer's own: its source failed or
    /// its application aborted (§11.2 step 5).
    fn failed_locally(&self, e: &Error) -> bool {
        self.source_failed || e.code == ErrorCode::Aborted
    }

    /// When the application aborted while this producer waited for the receipt, after the
    /// relay delivered every byte of its ended source: the call that still states its end
    /// (§12.2), since the consumer has every byte and its receipt call checks the end (any
    /// answer will do).
    fn end_notice(&self, e: &Error) -> Option<Request> {
        let rc = self.cfg.receipt.as_ref()?;
        if !self.delivered || e.code != ErrorCode::Aborted {
            return None;
        }
        let c = &self.cfg;
        receipt::channel_request(
            &c.relay,
            &c.path,
            &rc.transfer,
            ConnectMode::AwaitReader,
            FAILURE_NOTICE_TIMEOUT_S,
            c.token.as_deref(),
            Some(self.end_items()?),
        )
        .ok()
        .map(Request::into_last_word)
    }

    /// Every call due when the transfer failed with `e`, for the adapter to make together:
    /// the failure notice ([`Producer::failure_notice`]) and the withdrawal
    /// ([`Producer::withdrawal`]), or the producer's end ([`Producer::end_notice`]).
    pub fn last_words(&self, e: &Error) -> Vec<Request> {
        self.failure_notice(e)
            .into_iter()
            .chain(self.withdrawal(e))
            .chain(self.end_notice(e))
            .collect()
    }

    /// True once the relay said it delivered every byte: from then on no failure notice is
    /// due ([`Producer::failure_notice`] is `None`), the receipt call offers the resume.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn delivered(&self) -> bool {
        self.delivered
    }

    fn offer(&self) -> ResumeHello {
        ResumeHello::Offer {
            from: self.window.0,
            to: self.window.1,
        }
    }

    /// True once the rendezvous said the consumer sends receipts and this producer waits for
    /// one (§12.1): the adapter then commits to what it sends ([`receipt::Committer`]).
    pub fn expects_receipt(&self) -> bool {
        self.peer_sends_receipts && self.cfg.receipt.as_ref().is_some_and(|r| r.wait)
    }

    /// What the consumer's receipt will commit to (§12.2), once [`expects_receipt`] holds:
    /// the plaintext (an encrypted transfer to a consumer that decrypts: the count and the
    /// cipher's tag digest, with a MAC), else the bytes on the wire (their count and hash).
    ///
    /// [`expects_receipt`]: Self::expects_receipt
    pub fn receipt_commits_to_plaintext(&self) -> bool {
        self.cfg.encrypted && self.peer_decrypts
    }

    /// The transfer id of the rendezvous hello (§12.1), if any.
    pub fn transfer_id(&self) -> Option<&str> {
        self.cfg.receipt.as_ref().map(|r| r.transfer.as_str())
    }

    /// How the driver stops a streaming upload so that it is cut, never ended (§11.2 step 5):
    /// on a source that failed, the caller's abort, a stall that turns into a resume.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn stop_order(&self) -> StopOrder {
        self.cfg.upload_cut.stop_order()
    }

    /// The body of the part a [`Step::Part`] asked for.
    pub fn part_body(&self) -> &[T] {
        match &self.state {
            State::Segmented { seg, .. } => seg.current.as_ref().map_or(&[], |c| &c.body[..]),
            _ => &[],
        }
    }

    /// True once [`Producer::poll`] would return [`Step::Done`] or [`Step::Failed`]: an
    /// adapter reading a streaming upload's status log stops reading then.
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Finished(_))
    }

    /// What to do now. `memory` is the per-origin record of whether streaming uploads work
    /// (§10); it is read when the upload is planned and updated when the upload ends.
    pub fn poll(&mut self, memory: &mut OriginMemory) -> Step {
        loop {
            if let Some((o, works)) = self.learned.take() {
                memory.remember(&o, works);
            }
            match &mut self.state {
                State::Start => match self.begin() {
                    Ok(Begin::Rendezvous(r)) => {
                        let req = r.request().clone();
                        self.state = State::AwaitRendezvous(r);
                        return Step::Rendezvous(req);
                    }
                    Ok(Begin::Data(url)) => self.state = State::Plan(url),
                    Err(e) => self.fail(e),
                },
                State::AwaitRendezvous(_) => {
                    return Step::Failed(misuse("poll before the rendezvous answer"))
                }
                State::Plan(url) => {
                    let url = std::mem::take(url);
                    self.data_url = Some(url.clone());
                    if self.stream_url.is_none() {
                        self.stream_url = Some(url.clone());
                    }
                    let key = origin(&url);
                    match memory.plan(self.cfg.upload, self.cfg.runtime_streams, &key) {
                        Ok(Plan::Stream { fallback }) => {
                            self.transport = Transport::Stream;
                            self.state = State::Streaming {
                                request: Request::post(url, self.headers.clone()),
                                fallback,
                                log: StatusLog::new(),
                                issued: false,
                            };
                        }
                        Ok(Plan::Segmented) => {
                            self.transport = Transport::Segmented;
                            self.state = State::Segmented {
                                seg: Box::new(Segmented::new(
                                    url,
                                    self.headers.clone(),
                                    self.cfg.part_size,
                                )),
                                phase: SegPhase::Ready,
                            }
                        }
                        Err(e) => self.fail(e),
                    }
                }
                State::Streaming {
                    request, issued, ..
                } => {
                    return issue_once(issued, "during the streaming upload", || {
                        Step::Stream(request.clone())
                    })
                }
                State::Probing {
                    request, issued, ..
                } => return issue_once(issued, "during a probe", || Step::Probe(request.clone())),
                State::Segmented { seg, phase } => match *phase {
                    SegPhase::Ready => {
                        return match seg.next_part() {
                            Some(cur) => {
                                let req = cur.request.clone();
                                *phase = SegPhase::AwaitPart;
                                Step::Part(req)
                            }
                            None => {
                                *phase = SegPhase::AwaitSource;
                                Step::NeedSource
                            }
                        }
                    }
                    SegPhase::SleepDue(ms) => {
                        *phase = SegPhase::Sleeping;
                        return Step::Sleep(ms);
                    }
                    _ => return Step::Failed(misuse("poll while waiting for an answer")),
                },
                State::AwaitReceipt { issued, .. } => {
                    if std::mem::replace(issued, true) {
                        return Step::Failed(misuse("poll while waiting for the receipt"));
                    }
                    match self.receipt_wait_call() {
                        Ok(req) => return Step::Receipt(req),
                        Err(e) => self.fail(e),
                    }
                }
                State::Resuming { clock, phase, .. } => match *phase {
                    ResumePhase::Call { issued: false } => {
                        let Some(t) = clock.call_timeout(self.now_ms) else {
                            let State::Resuming { error, clock, .. } =
                                std::mem::replace(&mut self.state, State::Finished(None))
                            else {
                                unreachable!()
                            };
                            self.state = State::Finished(Some(Err(gave_up(error, clock))));
                            continue;
                        };
                        *phase = ResumePhase::Call { issued: true };
                        let end = self.end_items();
                        let call = self
                            .resume_plan()
                            .map(|p| p.call_with_end(self.offer(), end.as_deref(), t));
                        match call {
                            Some(Ok(req)) => return Step::Receipt(req),
                            Some(Err(e)) => self.fail_final(e),
                            None => self.fail_final(misuse("resume without a transfer id")),
                        }
                    }
                    ResumePhase::SleepDue(ms) => {
                        *phase = ResumePhase::Sleeping;
                        return Step::Sleep(ms);
                    }
                    _ => return Step::Failed(misuse("poll while waiting for an answer")),
                },
                State::Rewind(offset) => {
                    let offset = *offset;
                    let (Some(plan), Some(rc)) = (self.resume_plan(), &self.cfg.receipt) else {
                        self.fail_final(misuse("resume without a transfer"));
                        continue;
                    };
                    let url = match plan.data_url() {
                        Ok(url) => url,
                        Err(e) => {
                            self.fail_final(e);
                            continue;
                        }
                    };
                    // The consumer has the metadata: a resumed upload says only where it starts.
                    let mut headers = auth_headers(self.cfg.token.as_deref());
                    headers.push(channel_key(&rc.transfer));
                    headers.push((X_PIPING, resume_value(offset)));
                    self.headers = headers;
                    self.resumes += 1;
                    self.state = State::Plan(url);
                    return Step::ResumeFrom(offset);
                }
                State::Finished(outcome) => {
                    return match outcome.take() {
                        Some(Ok(r)) => Step::Done(r),
                        Some(Err(e)) => Step::Failed(e),
                        None => Step::Failed(misuse("poll after the end")),
                    };
                }
            }
        }
    }

    fn begin(&self) -> Result<Begin, Error> {
        let c = &self.cfg;
        let mode = ConnectMode::AwaitReader;
        let begin = Begin::new(
            &c.relay,
            &c.path,
            mode,
            c.rendezvous,
            c.timeout_s,
            c.token.as_deref(),
        )?;
        Ok(match (begin, &c.receipt) {
            (Begin::Rendezvous(r), Some(rc)) => Begin::Rendezvous(r.with_hello(producer_hello(
                &rc.transfer,
                rc.wait,
                c.resume_s.is_some(),
            ))),
            (b, _) => b,
        })
    }

    /// The upload failed with `e`: a break resumes (§12.3) when both sides said so and `e`
    /// is a cut (`PEER_DISCONNECTED`, `NETWORK`) of an upload under way; anything else ends
    /// the transfer.
    fn fail(&mut self, e: Error) {
        // A segmented upload whose part 0 never got through has not reached the consumer
        // (it still waits on the stream path): nothing to resume.
        let uploading = match &self.state {
            State::Streaming { .. } | State::Probing { .. } => true,
            State::Segmented { seg, .. } => seg.k > 0,
            _ => false,
        };
        let cut = matches!(e.code, ErrorCode::PeerDisconnected | ErrorCode::Network);
        match self.cfg.resume_s {
            Some(seconds) if uploading && cut && self.resumes() => {
                self.broke = true;
                self.state = State::Resuming {
                    clock: ResumeClock::start(self.now_ms, seconds),
                    phase: ResumePhase::Call { issued: false },
                    error: e,
                    report: None,
                };
            }
            _ => self.fail_final(e),
        }
    }

    /// Ends the transfer with `e` (no resume).
    fn fail_final(&mut self, e: Error) {
        self.state = State::Finished(Some(Err(e)));
    }

    fn succeed(&mut self, transport: Transport, relay_state: String) {
        self.relay_succeeded = true;
        let report = SendReport {
            transport,
            relay_state,
            receipt: None,
            resumes: self.resumes,
        };
        if !self.expects_receipt() {
            self.state = State::Finished(Some(Ok(report)));
            return;
        }
        self.delivered = true;
        self.state = State::AwaitReceipt {
            report,
            issued: false,
        };
    }

    /// The call that waits for the receipt on the transfer's channel (§12.2): it offers the
    /// resume to a consumer whose side broke after the relay's success (§12.3), and states the
    /// producer's end (§12.2).
    fn receipt_wait_call(&self) -> Result<Request, Error> {
        let c = &self.cfg;
        let Some(rc) = &c.receipt else {
            return Err(misuse("a receipt wait without a transfer"));
        };
        let offer = self.resumes().then(|| self.offer().text());
        let hello = match (offer, self.end_items()) {
            (Some(o), Some(e)) => Some(format!("{o}; {e}")),
            (o, e) => o.or(e),
        };
        receipt::channel_request(
            &c.relay,
            &c.path,
            &rc.transfer,
            ConnectMode::AwaitReader,
            rc.timeout_s,
            c.token.as_deref(),
            hello,
        )
    }

    /// The source ended, and `sent` is what the producer sent, as a receipt is checked against
    /// (§12.2): from now on its calls on the transfer's channel state its end, when it
    /// promised to ([`Producer::states_end`]). The first call counts.
    pub fn attest(&mut self, sent: Commitment) {
        if self.sent.is_none() {
            self.sent = Some(sent);
        }
    }

    /// True once the rendezvous said the consumer sends receipts and this producer waits for
    /// one: its hello said `attest` then, and it states its end on the channel (§12.2).
    pub fn states_end(&self) -> bool {
        self.expects_receipt()
    }

    /// True when the driver should tell [`Producer::attest`] what was sent once its source
    /// ended: the producer states its end and does not know it yet.
    pub fn needs_end(&self) -> bool {
        self.states_end() && self.sent.is_none()
    }

    /// The items that state the producer's end (§12.2), once it knows it.
    fn end_items(&self) -> Option<String> {
        self.sent
            .as_ref()
            .filter(|_| self.states_end())
            .map(receipt::end_items)
    }

    /// The stall watch of a streaming upload (§12.4), on the clock of the last
    /// [`Producer::observe`]: `blocked_ms` is how long the upload's body has waited for the
    /// HTTP client to ask for more (after the body's end: since the end; 0 while the client
    /// asks). Once it waited [`STALL_AFTER_S`](crate::protocol::hello::STALL_AFTER_S), the
    /// call that asks whether the consumer waits too, offering the window of the last
    /// `observe`; the driver hands the upload nothing more until it passes the answer to
    /// [`Producer::on_stall_answer`]. The call repeats for as long as the body stays blocked.
    pub fn poll_stall(&mut self, blocked_ms: f64) -> StallStep {
        if !self.resumes() {
            return StallStep::Off;
        }
        let now = self.now_ms;
        if let Some(at) = stall::not_yet(now, now - blocked_ms) {
            return StallStep::WakeAt(at);
        }
        match self.stall_call() {
            Some(req) => StallStep::Call(req),
            None => StallStep::WakeAt(now + STALL_RECHECK_MS),
        }
    }

    /// The call of [`Producer::poll_stall`]; `None`: no such call now (the sides don't
    /// resume, no streaming upload is under way, or one is out).
    fn stall_call(&mut self) -> Option<Request> {
        let streaming = matches!(self.state, State::Streaming { issued: true, .. });
        if !streaming || !self.resumes() || self.stall_offer.is_some() {
            return None;
        }
        let end = self.end_items();
        let req = self
            .resume_plan()?
            .call_with_end(self.offer(), end.as_deref(), STALL_CALL_S)
            .ok()?;
        self.stall_offer = Some(self.window);
        Some(req)
    }

    /// The answer to a [`StallStep::Call`] (`None`: it failed below HTTP); `ours` and
    /// `key` as for [`Producer::on_receipt`]. True: the consumer was waiting too, so the
    /// upload stalled — stop it and poll (the transfer resumes, §12.4), or the consumer's
    /// receipt ended the transfer; false: nothing happened, go on.
    pub fn on_stall_answer(
        &mut self,
        answer: Option<(u16, &dyn Headers)>,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
    ) -> bool {
        let Some((from, to)) = self.stall_offer.take() else {
            return false;
        };
        let Some((200, headers)) = answer else {
            return false;
        };
        let Some(text) = headers.get(PEER_HELLO) else {
            return false;
        };
        match self.state {
            State::Streaming { .. } => {}
            // The upload ended while the call was out (the relay's success line, or a
            // break): the consumer's answer is the one the next call would have got.
            State::AwaitReceipt { .. } | State::Resuming { .. } => {
                self.on_receipt(200, headers, "", ours, key);
                return true;
            }
            _ => return false,
        }
        if let Some(ResumeHello::Ask { offset }) = ResumeHello::parse(&text) {
            match agree(from, to, offset, false) {
                Ok(()) => self.state = State::Rewind(offset),
                Err(e) => self.fail_final(e),
            }
            return true;
        }
        // A receipt: the consumer cancelled or failed meanwhile (§12.2).
        let outcome = self.verify_receipt(&text, ours, key).map(|r| SendReport {
            transport: self.transport,
            relay_state: String::new(),
            receipt: Some(r),
            resumes: self.resumes,
        });
        self.state = State::Finished(Some(outcome));
        true
    }

    /// The producer's verdict on a receipt (§12.2): [`receipt::verify`], and an encrypted
    /// transfer is delivered only on an authenticated receipt unless the caller accepts one
    /// for the ciphertext (a consumer without keys — anyone who knows the path could be it).
    fn verify_receipt(
        &self,
        text: &str,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
    ) -> Result<ReceiptReport, Error> {
        let transfer = self.transfer_id().unwrap_or_default();
        let r = receipt::verify(text, transfer, ours, key)?;
        let ciphertext_ok = self.cfg.receipt.as_ref().is_some_and(|rc| rc.ciphertext);
        if self.cfg.encrypted && !r.authenticated && !ciphertext_ok {
            return Err(Error::new(
                ErrorCode::Unconfirmed,
                format!(
                    "the receiver holds no key: it stored the {} bytes of ciphertext without \
                     decrypting them, and its receipt (PROTOCOL.md §12.2) can't show the \
                     recipient can read them; the delivery is not confirmed",
                    r.bytes
                ),
            ));
        }
        Ok(r)
    }

    /// The answer to a [`Step::Receipt`] call: `ours` is what was sent (plaintext bytes and
    /// their digest, or the cipher's tag digest), `key` the receipt key of an encrypted
    /// transfer (§12.2).
    pub fn on_receipt(
        &mut self,
        status: u16,
        headers: &dyn Headers,
        body: &str,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
    ) {
        let text = headers.get(PEER_HELLO);
        if status == 200 {
            if let Some(ResumeHello::Ask { offset }) = text.as_deref().and_then(ResumeHello::parse)
            {
                return self.on_resume_ask(offset);
            }
        }
        if let State::Resuming { report, error, .. } = &mut self.state {
            let report = report.take();
            let error = error.clone();
            return self.on_resume_answer(status, text, body, ours, key, report, error);
        }
        let State::AwaitReceipt { report, .. } = &mut self.state else {
            return self.fail_final(misuse("a receipt nobody asked for"));
        };
        let mut report = report.clone();
        let Some(timeout) = self.cfg.receipt.as_ref().map(|rc| rc.timeout_s) else {
            return self.fail(misuse("a receipt without a transfer"));
        };
        let outcome = match (status, text) {
            (200, Some(text)) => self.verify_receipt(&text, ours, key).map(|r| {
                report.receipt = Some(r);
                report
            }),
            (200, None) => Err(Error::new(
                ErrorCode::Unconfirmed,
                "the receipt call was answered without a receipt (is the relay an httpipe relay, PROTOCOL.md §5.1?); the delivery is not confirmed",
            )),
            (408, _) => Err(no_receipt(timeout, None)),
            _ => Err(classify_response(status, body, "waiting for the receipt")),
        };
        self.state = State::Finished(Some(outcome));
    }

    /// The consumer asked to resume at `offset` (§12.3): the same verdict as the consumer's.
    fn on_resume_ask(&mut self, offset: u64) {
        let (low, high) = self.window;
        if !self.resumes() {
            return self.fail_final(misuse("a resume nobody offered"));
        }
        match agree(low, high, offset, false) {
            Ok(()) => self.state = State::Rewind(offset),
            Err(e) => self.fail_final(e),
        }
    }

    /// A resume call was answered with something other than the consumer's ask.
    #[allow(clippy::too_many_arguments)]
    fn on_resume_answer(
        &mut self,
        status: u16,
        text: Option<String>,
        body: &str,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
        report: Option<SendReport>,
        error: Error,
    ) {
        match (status, text) {
            // The consumer has everything and says so: the break cut only our side.
            (200, Some(text)) => {
                let outcome = self.verify_receipt(&text, ours, key).map(|r| SendReport {
                    receipt: Some(r),
                    resumes: self.resumes,
                    ..report.clone().unwrap_or(SendReport {
                        transport: self.transport,
                        relay_state: String::new(),
                        receipt: None,
                        resumes: self.resumes,
                    })
                });
                self.state = State::Finished(Some(outcome));
            }
            (200, None) => self.fail_final(Error::new(
                ErrorCode::RelayError,
                "the resume call was answered without the receiver's hello (is the relay an httpipe relay, PROTOCOL.md §5.1?)",
            )),
            (408, _) => self.resume_again(None, report, error),
            (s, _) if unavailable_now(s) => self.resume_again(Some(RESUME_RETRY_MS), report, error),
            _ => self.fail_final(classify_response(
                status,
                body,
                "meeting the receiver again after a break (PROTOCOL.md §12.3)",
            )),
        }
    }

    /// Call again, after `sleep_ms` if given (the resume time decides at the next poll).
    fn resume_again(&mut self, sleep_ms: Option<f64>, report: Option<SendReport>, error: Error) {
        if let State::Resuming {
            phase, report: r, ..
        } = &mut self.state
        {
            *phase = match sleep_ms {
                Some(ms) => ResumePhase::SleepDue(ms),
                None => ResumePhase::Call { issued: false },
            };
            *r = report;
            return;
        }
        self.fail_final(error);
    }

    fn stream_what(&self) -> String {
        format!(
            "streaming upload to {}",
            self.data_url.as_deref().unwrap_or("")
        )
    }

    /// The answer to a [`Step::Rendezvous`], [`Step::Part`] or [`Step::Probe`] request.
    pub fn on_response(&mut self, status: u16, headers: &dyn Headers, body: &str) {
        let what = self.stream_what();
        match &mut self.state {
            State::AwaitRendezvous(r) => match r.on_response(status, body) {
                Ok(url) => {
                    let peer = headers
                        .get(PEER_HELLO)
                        .map(|h| PeerHello::parse(&h))
                        .unwrap_or_default();
                    self.peer_sends_receipts = peer.receipt;
                    self.peer_decrypts = peer.decrypts;
                    self.peer_resumes = peer.resume;
                    self.met = true;
                    self.state = State::Plan(url)
                }
                Err(e) => self.fail(e),
            },
            State::Segmented { seg, phase } if *phase == SegPhase::AwaitPart => {
                *phase = SegPhase::Ready;
                let outcome = seg.on_response(status, headers, body);
                // the latest upload (a resumed transfer opens a new one)
                if let Some(id) = &seg.upload_id {
                    self.abandon = Some(seg.abandonment(id));
                }
                match outcome {
                    Ok(None) => {}
                    Ok(Some(state)) => {
                        if let Some(o) = seg.fell_back_from.take() {
                            self.learned = Some((o, false));
                        }
                        self.succeed(Transport::Segmented, state);
                    }
                    Err(e) => self.fail(e),
                }
            }
            State::Probing { cause, .. } => {
                let said = cause
                    .as_ref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default();
                let e = Error::new(
                    ErrorCode::PeerDisconnected,
                    format!("{what}: the relay closed the upload while it is still up: the consumer disconnected{said}"),
                )
                .with_shared_source(cause.take());
                self.fail(e);
            }
            _ => self.fail(misuse("an answer nobody asked for")),
        }
    }

    /// The [`Step::Rendezvous`], [`Step::Part`], [`Step::Probe`] or [`Step::Receipt`]
    /// request failed below HTTP.
    pub fn on_failure(&mut self, f: Failure) {
        let what = self.stream_what();
        let resumes = self.resumes();
        match &mut self.state {
            State::Resuming { phase, .. } => {
                if f.stop != StopReason::None {
                    let e = f.into_error(ErrorCode::Network, "resuming after a break");
                    return self.fail_final(e);
                }
                *phase = ResumePhase::SleepDue(RESUME_RETRY_MS);
            }
            State::AwaitReceipt { report, .. } if f.stop == StopReason::None && resumes => {
                // The relay may be restarting: call again (§12.3), within the receipt time.
                let timeout = self.cfg.receipt.as_ref().map_or(0.0, |r| r.timeout_s);
                let report = Some(report.clone());
                self.state = State::Resuming {
                    clock: ResumeClock::start(self.now_ms, timeout),
                    phase: ResumePhase::SleepDue(RESUME_RETRY_MS),
                    error: no_receipt(timeout, Some(f)),
                    report,
                };
            }
            State::AwaitReceipt { .. } => {
                let timeout = self.cfg.receipt.as_ref().map_or(0.0, |r| r.timeout_s);
                let e = match f.stop {
                    StopReason::Timeout => no_receipt(timeout, None),
                    StopReason::None => no_receipt(timeout, Some(f)),
                    // the caller's abort stays ABORTED
                    _ => f.into_error(ErrorCode::Unconfirmed, "waiting for the receipt"),
                };
                self.fail(e);
            }
            State::AwaitRendezvous(r) => {
                let e = r.on_failure(f);
                self.fail(e);
            }
            State::Segmented { seg, phase } if *phase == SegPhase::AwaitPart => {
                match seg.on_failure(f) {
                    Ok(ms) => *phase = SegPhase::SleepDue(ms),
                    Err(e) => self.fail(e),
                }
            }
            State::Probing {
                tries,
                issued,
                cause,
                ..
            } => {
                *tries += 1;
                if *tries < PROBE_TRIES && f.stop == StopReason::None {
                    *issued = false;
                } else {
                    let e = Failure {
                        cause: cause.take().or(f.cause),
                        ..f
                    }
                    .into_error(
                        ErrorCode::Network,
                        &format!("{what} (and the relay did not answer afterwards)"),
                    );
                    self.fail(e);
                }
            }
            _ => self.fail(misuse("a failure nobody asked for")),
        }
    }

    /// The retry wait of a [`Step::Sleep`] is over: the part is sent again.
    pub fn on_slept(&mut self) {
        if let State::Resuming { phase, .. } = &mut self.state {
            if *phase == ResumePhase::Sleeping {
                *phase = ResumePhase::Call { issued: false };
                return;
            }
        }
        if let State::Segmented { phase, .. } = &mut self.state {
            if *phase == SegPhase::Sleeping {
                *phase = SegPhase::Ready;
                return;
            }
        }
        self.fail(misuse("on_slept without a sleep"));
    }

    fn with_source(&mut self, f: impl FnOnce(&mut Segmented<T>)) {
        match &mut self.state {
            State::Segmented { seg, phase } if *phase == SegPhase::AwaitSource => {
                *phase = SegPhase::Ready;
                f(seg);
            }
            State::Finished(_) => {}
            _ => self.fail(misuse("source nobody asked for")),
        }
    }

    /// A source chunk for a [`Step::NeedSource`].
    pub fn on_chunk(&mut self, chunk: T) {
        self.with_source(|seg| {
            if let Some(c) = seg.cutter.as_mut() {
                c.push(chunk);
            }
        });
    }

    /// The source ended cleanly (answer to [`Step::NeedSource`]).
    pub fn on_source_end(&mut self) {
        self.with_source(Segmented::source_end);
    }

    /// The source failed: nothing more is sent, the transfer fails with `e` (the consumer
    /// sees truncation, never a clean end).
    pub fn on_source_error(&mut self, e: Error) {
        self.source_failed = true;
        self.fail_final(e);
    }

    /// A [`Step::Stream`] request was answered with a status other than 200 and this body.
    pub fn on_stream_refused(&mut self, status: u16, body: &str) {
        let what = self.stream_what();
        self.fail(classify_response(status, body, &what));
    }

    /// A piece of the streaming upload's status log (§3.2). Returns
    /// [`Verdict::PeerDisconnected`] at once when the consumer left; the adapter then stops
    /// the upload and polls (which reports `PEER_DISCONNECTED`).
    pub fn on_stream_log(&mut self, bytes: &[u8]) -> Verdict {
        let what = self.stream_what();
        if let State::Streaming { log, .. } = &mut self.state {
            if log.push(bytes) == Verdict::PeerDisconnected {
                self.fail(Error::new(
                    ErrorCode::PeerDisconnected,
                    format!("{what}: the consumer disconnected before the end of the stream"),
                ));
                return Verdict::PeerDisconnected;
            }
        }
        Verdict::Pending
    }

    /// The streaming upload's response ended cleanly: the status log decides.
    pub fn on_stream_end(&mut self) {
        let what = self.stream_what();
        let state = std::mem::replace(&mut self.state, State::Finished(None));
        match state {
            State::Streaming { log, .. } => match log.finish(&what) {
                Ok(line) => {
                    if let Some(url) = &self.data_url {
                        self.learned = Some((origin(url), true));
                    }
                    self.succeed(Transport::Stream, line);
                }
                Err(e) => self.fail(e),
            },
            other => {
                self.state = other;
                if !self.is_finished() {
                    self.fail(misuse("stream end without a stream"));
                }
            }
        }
    }

    /// The streaming upload failed (`fetch` rejected, or its response body broke).
    ///
    /// - the source's own error is what is reported;
    /// - a stop (abort, timeout) or a non-network failure is reported as such;
    /// - if the response had started, or more than [`REPLAY_LIMIT`] bytes left, the upload was
    ///   cut off midway: the relay is probed ([`Step::Probe`]) — if it still answers, it cut
    ///   the upload because the consumer left (`PEER_DISCONNECTED`), else `NETWORK`;
    /// - otherwise nothing is lost: with `upload: 'auto'` on an origin not known to stream,
    ///   the same bytes go again as a segmented upload (§10), and the origin is remembered as
    ///   "can't stream" once that succeeds; without a fallback, `NETWORK`.
    pub fn on_stream_failed(&mut self, f: StreamFailure<T>) {
        let what = self.stream_what();
        let fallback = match &self.state {
            State::Streaming { fallback, .. } => *fallback,
            State::Finished(_) => return,
            _ => {
                self.fail(misuse("stream failure without a stream"));
                return;
            }
        };
        if let Some(e) = f.source_error {
            self.source_failed = true;
            return self.fail_final(e);
        }
        let failure = f.failure;
        if failure.coded.is_some() || failure.stop != StopReason::None || !failure.network {
            return self.fail(failure.into_error(ErrorCode::Network, &what));
        }
        let replay = match f.replay {
            Some(r) if !f.response_started => r,
            // A cut upload resumes (§12.3): whether the consumer left or the network broke,
            // the meeting on the channel tells.
            _ if self.resumes() => return self.fail(failure.into_error(ErrorCode::Network, &what)),
            _ => {
                let origin = origin(self.data_url.as_deref().unwrap_or(""));
                self.state = State::Probing {
                    request: Request {
                        timeout_ms: Some(PROBE_TIMEOUT_MS),
                        ..Request::get(format!("{origin}/version"), Vec::new())
                    },
                    tries: 0,
                    cause: failure.cause,
                    issued: false,
                };
                return;
            }
        };
        if !fallback {
            return self.fail(failure.into_error(ErrorCode::Network, &what));
        }
        let url = self.data_url.clone().unwrap_or_default();
        let mut seg = Segmented::new(url.clone(), self.headers.clone(), self.cfg.part_size);
        seg.fell_back_from = Some(origin(&url));
        if let Some(c) = seg.cutter.as_mut() {
            for chunk in replay {
                c.push(chunk);
            }
        }
        self.state = State::Segmented {
            seg: Box::new(seg),
            phase: SegPhase::Ready,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::error::Cause;
    use crate::client::request::NoHeaders;

    const OK_LOG: &str = "[INFO] Start sending to 1 receiver(s)!\n[STATE:TRANSFER_SUCCESSFUL]\n";

    fn cfg(upload: UploadMode, runtime_streams: bool, rendezvous: bool) -> SendConfig {
        SendConfig {
            relay: RelayBase::parse("http://h:1").unwrap(),
            path: "/p".into(),
            token: Some("tok".into()),
            rendezvous,
            timeout_s: None,
            upload,
            part_size: 4,
            meta: Metadata {
                content_type: Some("text/plain".into()),
                filename: None,
                size: Some(10),
            },
            encrypted: false,
            runtime_streams: if runtime_streams {
                RuntimeStreams::Yes
            } else {
                RuntimeStreams::No
            },
            upload_cut: UploadCut::BodyError,
            receipt: None,
            resume_s: None,
        }
    }

    fn with_receipt(mut c: SendConfig) -> SendConfig {
        c.receipt = Some(ReceiptConfig {
            transfer: "TID".into(),
            wait: true,
            timeout_s: 5.0,
            ciphertext: false,
        });
        c
    }

    /// Rendezvous (the consumer's hello `peer`), then a streaming upload the relay confirms.
    fn streamed_to_success(p: &mut Producer<Vec<u8>>, mem: &mut OriginMemory, peer: Option<&str>) {
        let Step::Rendezvous(r) = p.poll(mem) else {
            panic!()
        };
        assert!(r.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe=1; transfer=TID; receipt; attest".into()
        )));
        let h: Vec<(&str, &str)> = peer.map(|v| vec![(PEER_HELLO, v)]).unwrap_or_default();
        p.on_response(200, &h, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(mem) else {
            panic!()
        };
        p.on_stream_log(OK_LOG.as_bytes());
        p.on_stream_end();
    }

    /// §3.10: a transfer that fails by its source or the caller's abort after the rendezvous
    /// and before the relay's success withdraws (`DELETE` on the data URL, with the token, as a
    /// last word bounded by WITHDRAW_WAIT_S); no withdrawal before the rendezvous answered or
    /// without one, for a failure the relay reported, or after the relay's success.
    #[test]
    fn a_source_failure_before_success_withdraws() {
        let mut mem = OriginMemory::new();
        let source = Error::new(ErrorCode::Unsupported, "the source failed");
        // before the rendezvous answered: no consumer waits
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, true)).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(p
            .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
            .is_none());

        // the source fails before its first byte went out
        p.on_response(200, &NoHeaders, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: Failure::stopped(StopReason::None, None),
            replay: Some(Vec::new()),
            response_started: false,
            source_error: Some(source.clone()),
        });
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        let w = p.withdrawal(&e).expect("a withdrawal");
        assert_eq!(w.method, Method::Delete);
        assert_eq!(w.url, "http://h:1/p");
        assert!(w.headers.contains(&("Authorization", "Bearer tok".into())));
        assert_eq!(w.timeout_ms, Some(WITHDRAW_WAIT_S * 1000.0));
        assert!(w.last_word);
        assert_eq!(p.last_words(&e).len(), 1);

        // the caller's abort while streaming withdraws too; the consumer leaving does not
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, true)).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &NoHeaders, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(p
            .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
            .is_some());
        let left = Error::new(ErrorCode::PeerDisconnected, "left");
        assert!(p.withdrawal(&left).is_none());

        // without a rendezvous no consumer was told of this producer
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(p
            .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
            .is_none());

        // after the relay's success (waiting for the receipt), nothing to withdraw
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        assert!(p
            .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
            .is_none());
    }

    fn hello_of(r: &Request) -> Option<&str> {
        r.headers
            .iter()
            .find(|(n, _)| *n == crate::protocol::headers::HELLO)
            .map(|(_, v)| v.as_str())
    }

    /// §12.2 "The producer's end": once the driver said what was sent, every call on the
    /// transfer's channel states it (the receipt wait, a resume call after a break at the end);
    /// never a failure notice; nothing to a consumer that sends no receipts.
    #[test]
    fn the_producer_states_its_end_on_the_channel() {
        let mut mem = OriginMemory::new();
        let mut k = receipt::Committer::new();
        k.update(b"hello");
        let sent = k.commitment();
        let end = receipt::end_items(&sent);
        // the receipt wait after the relay's success
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        assert!(p.states_end() && p.needs_end());
        p.attest(sent.clone());
        assert!(!p.needs_end());
        let Step::Receipt(wait) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(hello_of(&wait), Some(end.as_str()));
        assert!(end.starts_with("httpipe-end=1; bytes=5; digest="), "{end}");
        // the application aborts while it waits: its end goes as a last word all the same
        let aborted = Error::new(ErrorCode::Aborted, "stop");
        let words = p.last_words(&aborted);
        assert_eq!(words.len(), 1);
        assert_eq!(hello_of(&words[0]), Some(end.as_str()));
        assert!(words[0].last_word && words[0].url.contains("mode=await-reader"));

        // a driver that did not say (an older one): the wait states nothing
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        let Step::Receipt(wait) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(hello_of(&wait), None);
        assert!(p.end_notice(&aborted).is_none());

        // a consumer that sends no receipts meets no call, and is told no end
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1"));
        assert!(!p.states_end() && !p.needs_end());
        let Step::Done(_) = p.poll(&mut mem) else {
            panic!()
        };

        // both resume: a break after the body ended offers the resume and states the end
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = Some(10.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(
            200,
            &vec![(PEER_HELLO, "httpipe=1; receipt; resume")],
            "http://h:1/p\n",
        );
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.observe(1000.0, 0, 5);
        p.attest(sent.clone());
        p.on_stream_failed(StreamFailure {
            failure: Failure::network(Cause {
                name: String::new(),
                message: "reset".into(),
            }),
            replay: None,
            response_started: true,
            source_error: None,
        });
        let Step::Receipt(call) = p.poll(&mut mem) else {
            panic!()
        };
        let offer = format!("httpipe-resume=1; from=0; to=5; {end}");
        assert_eq!(hello_of(&call), Some(offer.as_str()));
        // ... and its failure notice states no end
        let notice = p.failure_notice(&aborted).unwrap();
        assert_eq!(hello_of(&notice), Some("httpipe-resume=1; failed=ABORTED"));
    }

    /// §11.2 step 6, §12.2: a producer that promised its end and fails for its own reason
    /// tells the consumer on the channel even without resume (a consumer whose body ended
    /// cleanly meets it with its receipt call); a cut or the consumer leaving does not.
    #[test]
    fn a_producer_that_states_its_end_sends_its_failure_notice_without_resume() {
        let mut mem = OriginMemory::new();
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(
            200,
            &vec![(PEER_HELLO, "httpipe=1; receipt")],
            "http://h:1/p\n",
        );
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(!p.resumes());
        let aborted = Error::new(ErrorCode::Aborted, "stop");
        let notice = p.failure_notice(&aborted).expect("a notice without resume");
        assert_eq!(hello_of(&notice), Some("httpipe-resume=1; failed=ABORTED"));
        assert_eq!(
            p.last_words(&aborted).len(),
            2,
            "the notice and the withdrawal"
        );
        let cut = Error::new(ErrorCode::Network, "reset");
        assert!(p.failure_notice(&cut).is_none());
        let left = Error::new(ErrorCode::PeerDisconnected, "left");
        assert!(p.failure_notice(&left).is_none());
        // the source's failure (whatever its code)
        p.on_stream_failed(StreamFailure {
            failure: Failure::stopped(StopReason::Internal, None),
            replay: None,
            response_started: false,
            source_error: Some(Error::new(ErrorCode::Truncated, "upstream cut")),
        });
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        let notice = p
            .failure_notice(&e)
            .expect("a notice for the source's failure");
        assert_eq!(
            hello_of(&notice),
            Some("httpipe-resume=1; failed=TRUNCATED")
        );
        // an older consumer (no receipts): nothing on the channel
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
        p.poll(&mut mem);
        p.on_response(200, &NoHeaders, "http://h:1/p\n");
        p.poll(&mut mem);
        assert!(p.failure_notice(&aborted).is_none());
    }

    /// §12.3: a cut streaming upload meets the consumer on the channel with its window, goes
    /// on at the consumer's offset on the Data API channel, and counts the resume.
    #[test]
    fn a_cut_upload_resumes_at_the_consumers_offset() {
        let mut mem = OriginMemory::new();
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = Some(10.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(r) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(r.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe=1; transfer=TID; receipt; attest; resume".into()
        )));
        let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
        // the answer names a cluster node (§13.3) ...
        p.on_response(200, &h, "http://10.0.0.11:8080/p\n");
        assert!(p.resumes());
        let Step::Stream(first) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(first.url, "http://10.0.0.11:8080/p");
        // while it streams, a failure of its own is told on the channel, as a last word
        let aborted = Error::new(ErrorCode::Aborted, "gone");
        let notice = p
            .failure_notice(&aborted)
            .expect("a notice while streaming");
        assert!(notice.last_word);
        assert!(notice.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; failed=ABORTED".into()
        )));
        p.observe(1000.0, 100, 500);
        let cut = Failure::network(Cause {
            name: String::new(),
            message: "reset".into(),
        });
        p.on_stream_failed(StreamFailure {
            failure: cut,
            replay: None,
            response_started: true,
            source_error: None,
        });
        let Step::Receipt(call) = p.poll(&mut mem) else {
            panic!("the producer meets the consumer on the channel")
        };
        assert_eq!(
            call.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=10",
                crate::protocol::channel::channel_id("TID")
            )
        );
        assert!(call.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; from=100; to=500".into()
        )));
        // nobody yet (408): call again; then the consumer asks for byte 300
        let none = receipt::Committer::new().commitment();
        p.on_receipt(408, &NoHeaders, "", &none, None);
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!()
        };
        // a balancer whose upstream died answers 502 / 504: not now, call again (§13.4)
        for gateway in [502, 504] {
            p.on_receipt(gateway, &NoHeaders, "Bad Gateway", &none, None);
            let Step::Sleep(ms) = p.poll(&mut mem) else {
                panic!("{gateway} is repeated")
            };
            assert_eq!(ms, RESUME_RETRY_MS);
            p.on_slept();
            let Step::Receipt(_) = p.poll(&mut mem) else {
                panic!()
            };
        }
        let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
        p.on_receipt(200, &ask, "", &none, None);
        let Step::ResumeFrom(300) = p.poll(&mut mem) else {
            panic!()
        };
        let Step::Stream(up) = p.poll(&mut mem) else {
            panic!()
        };
        // ... which may have died: the resumed upload goes to the relay's own URL (§12.3)
        assert_eq!(
            up.url,
            format!(
                "http://h:1/p?channel={}",
                crate::protocol::channel::channel_id("TID")
            )
        );
        // resumed: the consumer hears a failure from the notice, not a withdrawal (§3.10)
        assert!(p.withdrawal(&aborted).is_none());
        assert!(p.failure_notice(&aborted).is_some());
        assert!(up
            .headers
            .contains(&(X_PIPING, "httpipe-resume=300".into())));
        assert!(!up.headers.iter().any(|(n, _)| *n == CONTENT_TYPE));
        p.on_stream_log(OK_LOG.as_bytes());
        p.on_stream_end();
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!()
        };
        // delivered by the relay: the receipt call offers the resume, no notice is due
        assert!(p.delivered());
        assert_eq!(p.failure_notice(&aborted), None);
        let mut k = receipt::Committer::new();
        k.update(b"x");
        let ours = k.commitment();
        let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
        p.on_receipt(200, &vec![(PEER_HELLO, text.as_str())], "", &ours, None);
        let Step::Done(rep) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(rep.resumes, 1);
        // an offset older than the window fails, with the numbers
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = Some(10.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &h, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.observe(0.0, 100, 500);
        p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!()
        };
        let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=50")];
        p.on_receipt(200, &ask, "", &none, None);
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(e.message.contains("100..500"), "{e}");
        // the resume time runs out
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = Some(3.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &h, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.observe(0.0, 0, 10);
        p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_failure(Failure::network(Cause {
            name: String::new(),
            message: "refused".into(),
        }));
        let Step::Sleep(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_slept();
        p.observe(2500.0, 0, 10);
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(e.message.contains("within 3 s to resume"), "{e}");
    }

    /// §12.4: a blocked streaming upload asks on the channel; nothing (408, a failed call)
    /// changes nothing; the consumer waiting too turns it into a resume at its offset, with
    /// the verdict taken on the window the call offered.
    #[test]
    fn a_stalled_upload_resumes_when_the_consumer_waits_too() {
        let mut mem = OriginMemory::new();
        let none = receipt::Committer::new().commitment();
        let start = |mem: &mut OriginMemory, resume: bool| {
            let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
            c.resume_s = resume.then_some(10.0);
            let mut p = Producer::<Vec<u8>>::new(c).unwrap();
            assert!(p.stall_call().is_none(), "not before the upload");
            let Step::Rendezvous(_) = p.poll(mem) else {
                panic!()
            };
            let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
            p.on_response(200, &h, "http://h:1/p\n");
            let Step::Stream(_) = p.poll(mem) else {
                panic!()
            };
            p
        };
        assert!(
            start(&mut mem, false).stall_call().is_none(),
            "no resume, no call"
        );
        let mut p = start(&mut mem, true);
        p.observe(0.0, 100, 500);
        let call = p.stall_call().expect("a stall call");
        assert_eq!(
            call.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=2",
                crate::protocol::channel::channel_id("TID")
            )
        );
        assert!(call.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; from=100; to=500".into()
        )));
        assert!(p.stall_call().is_none(), "one at a time");
        assert!(!p.on_stall_answer(Some((408, &NoHeaders)), &none, None));
        assert!(p.stall_call().is_some());
        assert!(!p.on_stall_answer(None, &none, None), "a failed call");
        // the consumer waits too: resume at its offset, on the window offered
        assert!(p.stall_call().is_some());
        p.observe(0.0, 400, 900);
        let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
        assert!(p.on_stall_answer(Some((200, &ask)), &none, None));
        let Step::ResumeFrom(300) = p.poll(&mut mem) else {
            panic!("resumes at the consumer's offset")
        };
        assert_eq!(p.resumed(), 1);
        let Step::Stream(up) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(
            up.url,
            format!(
                "http://h:1/p?channel={}",
                crate::protocol::channel::channel_id("TID")
            )
        );
        // an offset outside the offered window fails with the numbers
        let mut p = start(&mut mem, true);
        p.observe(0.0, 100, 500);
        assert!(p.stall_call().is_some());
        let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=50")];
        assert!(p.on_stall_answer(Some((200, &ask)), &none, None));
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(e.message.contains("100..500"), "{e}");
        // the upload ended (the relay's success) while the call was out: the consumer's
        // receipt it met is the receipt
        let mut p = start(&mut mem, true);
        assert!(p.stall_call().is_some());
        p.on_stream_log(OK_LOG.as_bytes());
        p.on_stream_end();
        let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &none, None);
        assert!(p.on_stall_answer(Some((200, &vec![(PEER_HELLO, text.as_str())])), &none, None));
        let Step::Done(rep) = p.poll(&mut mem) else {
            panic!("the receipt that met the stall call confirms the delivery")
        };
        assert_eq!(rep.receipt.map(|r| r.bytes), Some(0));
        // a cancelled receipt meanwhile ends the send
        let mut p = start(&mut mem, true);
        assert!(p.stall_call().is_some());
        let text = receipt::receipt_text("TID", receipt::Outcome::Cancelled, &none, None);
        assert!(p.on_stall_answer(Some((200, &vec![(PEER_HELLO, text.as_str())])), &none, None));
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
    }

    /// §12.4 timing, on a fake clock: no watch without resume; a body blocked less than
    /// STALL_AFTER_S sleeps until then; then the call, repeated while the body stays
    /// blocked; a call out (or no upload yet) looks again a second later.
    #[test]
    fn the_stall_watch_asks_after_ten_blocked_seconds_and_repeats() {
        let mut mem = OriginMemory::new();
        let start = |mem: &mut OriginMemory, resume: bool| {
            let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
            c.resume_s = resume.then_some(60.0);
            let mut p = Producer::<Vec<u8>>::new(c).unwrap();
            let Step::Rendezvous(_) = p.poll(mem) else {
                panic!()
            };
            let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
            p.on_response(200, &h, "http://h:1/p\n");
            p
        };
        let mut off = start(&mut mem, false);
        assert!(matches!(off.poll_stall(60_000.0), StallStep::Off));
        let mut p = start(&mut mem, true);
        // before the upload: nothing to ask about yet, look again later
        p.observe(20_000.0, 0, 0);
        assert!(matches!(p.poll_stall(20_000.0), StallStep::WakeAt(t) if t == 21_000.0));
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.observe(20_000.0, 0, 64);
        assert!(matches!(p.poll_stall(0.0), StallStep::WakeAt(t) if t == 30_000.0));
        p.observe(26_000.0, 0, 64);
        assert!(matches!(p.poll_stall(4_000.0), StallStep::WakeAt(t) if t == 32_000.0));
        p.observe(32_000.0, 0, 64);
        let StallStep::Call(call) = p.poll_stall(10_000.0) else {
            panic!("blocked 10 s: the stall call")
        };
        assert!(call.url.contains("mode=await-reader"), "{}", call.url);
        // one at a time
        assert!(matches!(p.poll_stall(10_500.0), StallStep::WakeAt(t) if t == 33_000.0));
        let none = receipt::Committer::new().commitment();
        assert!(!p.on_stall_answer(Some((408, &NoHeaders)), &none, None));
        // still blocked after the 408: ask again at once
        p.observe(34_000.0, 0, 64);
        assert!(matches!(p.poll_stall(12_000.0), StallStep::Call(_)));
    }

    #[test]
    fn a_receipt_confirms_the_delivery() {
        let mut mem = OriginMemory::new();
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        let Step::Receipt(req) = p.poll(&mut mem) else {
            panic!("the producer waits for the receipt")
        };
        assert_eq!(
            req.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=5",
                crate::protocol::channel::channel_id("TID")
            )
        );
        let mut c = receipt::Committer::new();
        c.update(b"0123456789");
        let ours = c.commitment();
        let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
        let h = vec![(PEER_HELLO, text.as_str())];
        p.on_receipt(200, &h, "http://h:1/p\n", &ours, None);
        let Step::Done(rep) = p.poll(&mut mem) else {
            panic!()
        };
        let r = rep.receipt.expect("a receipt");
        assert_eq!(r.bytes, 10);
        assert!(!r.authenticated);
    }

    /// Regression (#26): an encrypted send resolved on the receipt of a reader without keys
    /// (anyone who knows the path, or the relay) for the ciphertext it stored.
    #[test]
    fn an_encrypted_send_needs_an_authenticated_receipt() {
        for accept_ciphertext in [false, true] {
            let mut mem = OriginMemory::new();
            let mut c = with_receipt(cfg(UploadMode::Auto, true, true));
            c.encrypted = true;
            if let Some(r) = c.receipt.as_mut() {
                r.ciphertext = accept_ciphertext;
            }
            let mut p = Producer::<Vec<u8>>::new(c).unwrap();
            // the consumer's hello: receipts, but it does not decrypt
            streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
            assert!(!p.receipt_commits_to_plaintext());
            let Step::Receipt(_) = p.poll(&mut mem) else {
                panic!("the producer waits for the receipt")
            };
            let mut wire = receipt::Committer::new();
            wire.update(b"age-rt ciphertext");
            let ours = wire.commitment();
            let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
            let h = vec![(PEER_HELLO, text.as_str())];
            p.on_receipt(200, &h, "", &ours, None);
            match (p.poll(&mut mem), accept_ciphertext) {
                (Step::Failed(e), false) => {
                    assert_eq!(e.code, ErrorCode::Unconfirmed);
                    assert!(e.message.contains("holds no key"), "{e}");
                }
                (Step::Done(rep), true) => {
                    let r = rep.receipt.expect("a receipt");
                    assert!(!r.authenticated);
                    assert_eq!(r.bytes, 17);
                }
                (s, _) => panic!("{accept_ciphertext}: {s:?}"),
            }
        }
    }

    #[test]
    fn without_a_receipt_promise_the_relay_verdict_stands() {
        for peer in [None, Some("httpipe=1"), Some("receipt")] {
            let mut mem = OriginMemory::new();
            let mut p =
                Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
            streamed_to_success(&mut p, &mut mem, peer);
            let Step::Done(rep) = p.poll(&mut mem) else {
                panic!("{peer:?}")
            };
            assert_eq!(rep.receipt, None);
        }
    }

    /// A producer whose upload the relay confirmed, waiting for a promised receipt.
    fn awaiting_receipt() -> (Producer<Vec<u8>>, OriginMemory) {
        let mut mem = OriginMemory::new();
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!("the producer waits for the receipt")
        };
        (p, mem)
    }

    #[test]
    fn a_missing_or_bad_receipt_is_unconfirmed() {
        let ours = receipt::Committer::new().commitment();
        let cases: Vec<(u16, Option<&str>, ErrorCode)> = vec![
            (408, None, ErrorCode::Unconfirmed),
            (200, None, ErrorCode::Unconfirmed),
            (
                200,
                Some("httpipe-receipt=1; status=ok; bytes=3; digest=AAAA"),
                ErrorCode::Unconfirmed,
            ),
            (
                200,
                Some("httpipe-receipt=1; status=cancelled; bytes=0; digest=AAAA"),
                ErrorCode::PeerDisconnected,
            ),
            (403, None, ErrorCode::Forbidden),
        ];
        for (status, text, code) in cases {
            let (mut p, mut mem) = awaiting_receipt();
            let h: Vec<(&str, &str)> = text.map(|t| vec![(PEER_HELLO, t)]).unwrap_or_default();
            p.on_receipt(status, &h, "", &ours, None);
            let Step::Failed(e) = p.poll(&mut mem) else {
                panic!("{status} {text:?}")
            };
            assert_eq!(e.code, code, "{status} {text:?}: {}", e.message);
        }
        // the local backstop fired, or the network broke
        for f in [Failure::stopped(StopReason::Timeout, None), net()] {
            let (mut p, mut mem) = awaiting_receipt();
            p.on_failure(f);
            let Step::Failed(e) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(e.code, ErrorCode::Unconfirmed, "{}", e.message);
        }
    }

    fn net() -> Failure {
        Failure::network(Cause {
            name: "TypeError".into(),
            message: "fetch failed".into(),
        })
    }

    fn id_header() -> Vec<(&'static str, &'static str)> {
        vec![("x-httpipe-upload", "UP")]
    }

    /// Drives a segmented upload of `data` (in chunks of 3) answering every part with 200;
    /// returns the part URLs and bodies sent.
    fn drive_segmented(
        p: &mut Producer<Vec<u8>>,
        mem: &mut OriginMemory,
        data: &[u8],
    ) -> (Vec<(String, Vec<u8>)>, Step) {
        let mut source = data.chunks(3).map(<[u8]>::to_vec);
        let mut sent = Vec::new();
        loop {
            match p.poll(mem) {
                Step::NeedSource => match source.next() {
                    Some(c) => p.on_chunk(c),
                    None => p.on_source_end(),
                },
                Step::Part(req) => {
                    let body: Vec<u8> = p.part_body().concat();
                    let last = req.url.contains("final=1");
                    sent.push((req.url, body));
                    let log = if last { OK_LOG } else { "" };
                    p.on_response(200, &id_header(), log);
                }
                other => return (sent, other),
            }
        }
    }

    #[test]
    fn rendezvous_then_streaming_success_is_remembered() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, true)).unwrap();
        let Step::Rendezvous(r) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(r.url, "http://h:1/connect/v0/p?mode=await-reader");
        p.on_response(200, &NoHeaders, "http://h:1/p\n");
        let Step::Stream(req) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(req.url, "http://h:1/p");
        assert!(req.headers.contains(&(X_PIPING, "httpipe-size=10".into())));
        assert_eq!(p.on_stream_log(b"[INFO] x\n"), Verdict::Pending);
        p.on_stream_log(b"[STATE:TRANSFER_SUCCESSFUL]\n");
        p.on_stream_end();
        let Step::Done(rep) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(rep.transport, Transport::Stream);
        assert_eq!(rep.relay_state, "[STATE:TRANSFER_SUCCESSFUL]");
        assert_eq!(
            mem.plan(UploadMode::Auto, RuntimeStreams::Yes, "http://h:1")
                .unwrap(),
            Plan::Stream { fallback: false }
        );
    }

    #[test]
    fn fallback_after_a_failure_before_any_byte_left_replays_the_same_bytes() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: net(),
            replay: Some(vec![b"hel".to_vec(), b"lo".to_vec()]),
            response_started: false,
            source_error: None,
        });
        let mut source = vec![b" world".to_vec()].into_iter();
        let mut sent = Vec::new();
        let done = loop {
            match p.poll(&mut mem) {
                Step::NeedSource => match source.next() {
                    Some(c) => p.on_chunk(c),
                    None => p.on_source_end(),
                },
                Step::Part(req) => {
                    let last = req.url.contains("final=1");
                    sent.push(p.part_body().concat());
                    p.on_response(200, &id_header(), if last { OK_LOG } else { "" });
                }
                other => break other,
            }
        };
        let Step::Done(rep) = done else {
            panic!("{done:?}")
        };
        assert_eq!(rep.transport, Transport::Segmented);
        assert_eq!(sent.concat(), b"hello world");
        assert_eq!(
            mem.plan(UploadMode::Auto, RuntimeStreams::Yes, "http://h:1")
                .unwrap(),
            Plan::Segmented
        );
    }

    #[test]
    fn no_fallback_when_streaming_was_asked_for() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: net(),
            replay: Some(vec![]),
            response_started: false,
            source_error: None,
        });
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Network);
    }

    #[test]
    fn a_cut_after_bytes_left_probes_the_relay() {
        for (alive, code) in [
            (true, ErrorCode::PeerDisconnected),
            (false, ErrorCode::Network),
        ] {
            let mut mem = OriginMemory::new();
            let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
            let Step::Stream(_) = p.poll(&mut mem) else {
                panic!()
            };
            p.on_stream_failed(StreamFailure {
                failure: net(),
                replay: None,
                response_started: false,
                source_error: None,
            });
            let Step::Probe(req) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(req.url, "http://h:1/version");
            assert_eq!(req.timeout_ms, Some(PROBE_TIMEOUT_MS));
            if alive {
                p.on_failure(net()); // the first probe may hit a dead pooled connection
                let Step::Probe(_) = p.poll(&mut mem) else {
                    panic!()
                };
                p.on_response(200, &NoHeaders, "httpipe-relay 0.1.0\n");
            } else {
                for _ in 0..PROBE_TRIES - 1 {
                    p.on_failure(net());
                    let Step::Probe(_) = p.poll(&mut mem) else {
                        panic!()
                    };
                }
                p.on_failure(net());
            }
            let Step::Failed(e) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(e.code, code, "{e}");
        }
    }

    #[test]
    fn a_broken_status_log_probes_even_with_the_replay_kept() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: net(),
            replay: Some(vec![]),
            response_started: true,
            source_error: None,
        });
        assert!(matches!(p.poll(&mut mem), Step::Probe(_)));
    }

    #[test]
    fn stops_and_source_errors_are_reported_as_such() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: Failure::stopped(StopReason::User, None),
            replay: Some(vec![]),
            response_started: false,
            source_error: None,
        });
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Aborted);

        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: net(),
            replay: Some(vec![]),
            response_started: false,
            source_error: Some(Error::usage("bad chunk")),
        });
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.message, "bad chunk");
    }

    #[test]
    fn the_consumer_leaving_mid_stream_is_seen_at_once() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(
            p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n"),
            Verdict::PeerDisconnected
        );
        assert!(p.is_finished());
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
    }

    #[test]
    fn refusals_of_the_streaming_upload() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_refused(400, "[ERROR] Another sender has been connected on '/p'.\n");
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::RelayError);
        assert!(e.message.contains("Another sender"));
    }

    #[test]
    fn segmented_parts_small_first_then_final_with_metadata_on_part_zero_only() {
        let mut mem = OriginMemory::new();
        let mut c = cfg(UploadMode::Segmented, true, false);
        c.part_size = 4;
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let (sent, end) = drive_segmented(&mut p, &mut mem, b"0123456789");
        let Step::Done(rep) = end else {
            panic!("{end:?}")
        };
        assert_eq!(rep.transport, Transport::Segmented);
        let urls: Vec<&str> = sent.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://h:1/p?part=0",
                "http://h:1/p?part=1&upload=UP",
                "http://h:1/p?part=2&upload=UP&final=1"
            ]
        );
        let bodies: Vec<&[u8]> = sent.iter().map(|(_, b)| &b[..]).collect();
        assert_eq!(bodies, [&b"0123"[..], b"4567", b"89"]);
    }

    #[test]
    fn an_empty_source_opens_with_part_zero_and_ends_with_an_empty_final_part() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
        let (sent, end) = drive_segmented(&mut p, &mut mem, b"");
        assert!(matches!(end, Step::Done(_)));
        let urls: Vec<&str> = sent.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://h:1/p?part=0",
                "http://h:1/p?part=1&upload=UP&final=1"
            ]
        );
    }

    fn segmented_at_part_one() -> (Producer<Vec<u8>>, OriginMemory) {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
        let Step::NeedSource = p.poll(&mut mem) else {
            panic!()
        };
        p.on_chunk(b"01234567".to_vec());
        let Step::Part(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &id_header(), "");
        let Step::Part(req) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(req.url.contains("part=1"));
        (p, mem)
    }

    /// Regression (#25, found by the WebKit tests): a segmented upload aborted midway left its
    /// consumer waiting ~120 s (the withdrawal is refused while the upload holds the path, the
    /// gap timeout is 60 s); now its last word abandons the upload (§4), with the token.
    #[test]
    fn a_segmented_upload_that_fails_locally_is_abandoned() {
        let (mut p, _mem) = segmented_at_part_one();
        p.on_source_error(Error::new(ErrorCode::Unsupported, "the source failed"));
        let e = Error::new(ErrorCode::Unsupported, "the source failed");
        let req = p.withdrawal(&e).expect("the abandonment");
        assert_eq!(req.method, Method::Delete);
        assert_eq!(req.url, "http://h:1/p?upload=UP");
        assert!(req.headers.contains(&(AUTHORIZATION, "Bearer tok".into())));
        // a failure of the network is no local failure: nothing to say
        let (p, _mem) = segmented_at_part_one();
        assert!(p
            .withdrawal(&Error::new(ErrorCode::Network, "cut"))
            .is_none());
    }

    #[test]
    fn a_part_is_retried_on_network_errors_with_backoff_then_fails() {
        let (mut p, mut mem) = segmented_at_part_one();
        for n in 1..PART_TRIES {
            p.on_failure(net());
            let Step::Sleep(ms) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(ms, PART_RETRY_BACKOFF_MS * n as f64);
            p.on_slept();
            let Step::Part(req) = p.poll(&mut mem) else {
                panic!()
            };
            assert!(req.url.contains("part=1"), "the same part again");
            assert_eq!(p.part_body().concat(), b"4567");
        }
        p.on_failure(net());
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Network);
    }

    #[test]
    fn a_retried_part_that_is_then_accepted_goes_on() {
        let (mut p, mut mem) = segmented_at_part_one();
        p.on_failure(net());
        let Step::Sleep(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_slept();
        let Step::Part(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &NoHeaders, "");
        assert!(matches!(p.poll(&mut mem), Step::NeedSource));
    }

    #[test]
    fn part_zero_is_not_retried_and_aborts_are_not_retried() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
        let Step::NeedSource = p.poll(&mut mem) else {
            panic!()
        };
        p.on_chunk(b"0123".to_vec());
        let Step::Part(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_failure(net());
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Network);

        let (mut p, mut mem) = segmented_at_part_one();
        p.on_failure(Failure::stopped(StopReason::User, None));
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Aborted);
    }

    #[test]
    fn part_refusals_404_409_413() {
        for (status, code, words) in [
            (404, ErrorCode::PeerDisconnected, "dropped the upload"),
            (409, ErrorCode::RelayError, "another part number"),
            (413, ErrorCode::Unsupported, "smaller part size"),
            (401, ErrorCode::Unauthorized, "token"),
        ] {
            let (mut p, mut mem) = segmented_at_part_one();
            p.on_response(status, &NoHeaders, "[ERROR] nope\n");
            let Step::Failed(e) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(e.code, code, "{status}: {e}");
            assert!(e.message.contains(words), "{status}: {e}");
        }
    }

    #[test]
    fn part_refusals_are_read_from_the_relay_code_first() {
        // The code decides (§3.5), whatever the status says.
        for (status, relay_code, code, words) in [
            (
                400,
                "unknown-upload",
                ErrorCode::PeerDisconnected,
                "dropped the upload",
            ),
            (
                400,
                "part-length-mismatch",
                ErrorCode::RelayError,
                "another part number",
            ),
            (
                400,
                "part-too-large",
                ErrorCode::Unsupported,
                "smaller part size",
            ),
            (404, "not-found", ErrorCode::RelayError, "HTTP 404"),
        ] {
            let (mut p, mut mem) = segmented_at_part_one();
            let headers = vec![("X-Httpipe-Error", relay_code)];
            p.on_response(status, &headers, "[ERROR] nope\n");
            let Step::Failed(e) = p.poll(&mut mem) else {
                panic!()
            };
            assert_eq!(e.code, code, "{relay_code}: {e}");
            assert!(e.message.contains(words), "{relay_code}: {e}");
        }
    }

    #[test]
    fn part_zero_without_an_upload_id_means_no_segmented_support() {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
        let Step::NeedSource = p.poll(&mut mem) else {
            panic!()
        };
        p.on_chunk(b"0123".to_vec());
        let Step::Part(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &NoHeaders, "");
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Unsupported);
    }

    #[test]
    fn status_log_verdicts_of_parts() {
        // The consumer left: the next part's answer says so.
        let (mut p, mut mem) = segmented_at_part_one();
        p.on_response(200, &NoHeaders, "[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        // A final part whose log doesn't end in success is not success.
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
        let mut mem = OriginMemory::new();
        let mut n = 0;
        let end = loop {
            match p.poll(&mut mem) {
                Step::NeedSource => p.on_source_end(),
                Step::Part(_) => {
                    n += 1;
                    let log = if n == 2 { "[INFO] Sent\n" } else { "" };
                    p.on_response(200, &id_header(), log);
                }
                other => break other,
            }
        };
        let Step::Failed(e) = end else { panic!() };
        assert_eq!(e.code, ErrorCode::RelayError);
    }

    #[test]
    fn encrypted_sends_no_metadata_in_clear() {
        let mut c = cfg(UploadMode::Auto, true, false);
        c.encrypted = true;
        c.meta.filename = Some("secret.txt".into());
        let h = producer_headers(c.token.as_deref(), &c.meta, c.encrypted);
        assert_eq!(
            h,
            vec![
                (AUTHORIZATION, "Bearer tok".to_string()),
                (CONTENT_TYPE, OCTET_STREAM.to_string())
            ]
        );
    }

    #[test]
    fn a_bad_path_fails_before_anything_waits() {
        let mut c = cfg(UploadMode::Auto, true, true);
        c.path = "/a?b".into();
        assert!(Producer::<Vec<u8>>::new(c).is_err());
    }
}
