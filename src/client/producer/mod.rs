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
use super::presence::{PresenceChannel, PresenceKeeper};
use super::receipt::{self, Commitment, ReceiptReport};
use super::rendezvous::{auth_headers, peer_hello, Begin, Rendezvous};
use super::request::{Headers, Method, Request};
use super::resume::{agree, relay_reached, ResumeClock, ResumePlan};
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
    producer_hello, ResumeHello, FAILURE_NOTICE_TIMEOUT_S, RESUME_RETRY_MS, STALL_CALL_S,
};
use crate::protocol::upload::{HEADER as UPLOAD_HEADER, UPLOAD as UPLOAD_QUERY};

mod answers;
mod config;
mod finish;
mod last_words;
mod resume;
mod segmented;
mod stream;
#[cfg(test)]
mod tests;

pub use config::{producer_headers, Metadata, ReceiptConfig, SendConfig, SendReport};
use finish::no_receipt;
use resume::refused_as_busy;
use segmented::{SegPhase, Segmented};
pub use stream::FallbackReplay;

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

/// What the adapter must do next.
#[derive(Debug)]
pub enum Step {
    /// `GET` this Connect API request; answer with [`Producer::on_response`] (status, body)
    /// or [`Producer::on_failure`].
    Rendezvous(Request),
    /// `POST` this with the source as one streaming body; answer with
    /// [`Producer::on_stream_refused`] (a status other than 200, with its headers and body), then
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
        /// One of the calls got an HTTP answer ([`relay_reached`]): at the end, the receiver
        /// did not come back, not the relay.
        relay_answered: bool,
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
    /// failure notice helps a resuming consumer (§12.3). Of the upload in progress: a resume
    /// meeting clears it, as `relay_succeeded`.
    delivered: bool,
    /// The rendezvous met a consumer (§5): it now waits for this producer.
    met: bool,
    /// The relay reported the success (§3.2) of the upload in progress (a resume meeting
    /// starts another).
    relay_succeeded: bool,
    /// The transfer failed because its source did (§11.2 step 5).
    source_failed: bool,
    /// The `DELETE` that abandons the segmented upload in progress (§4 "Abandoning"), once
    /// its part 0 was accepted.
    abandon: Option<Request>,
    /// An upload broke and the sides are meeting to resume (§12.3): the consumer is in the
    /// resume protocol, where the failure notice reaches it, not on the data URL. Cleared when
    /// they agreed: the consumer then waits on the transfer's data channel for the resumed
    /// upload, where only a withdrawal reaches it (§3.10).
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
    /// The consumer said it gave up before its stream started ([`Producer::on_peer_left`]).
    peer_left: bool,
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
            peer_left: false,
        })
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
            let step = match &mut self.state {
                State::Start => self.start(),
                State::AwaitRendezvous(r) => Some(match r.issue() {
                    Some(req) => Step::Rendezvous(req),
                    None => Step::Failed(misuse("poll before the rendezvous answer")),
                }),
                State::Plan(url) => {
                    let url = std::mem::take(url);
                    self.plan(url, memory);
                    None
                }
                State::Streaming {
                    request, issued, ..
                } => Some(issue_once(issued, "during the streaming upload", || {
                    Step::Stream(request.clone())
                })),
                State::Probing {
                    request, issued, ..
                } => Some(issue_once(issued, "during a probe", || {
                    Step::Probe(request.clone())
                })),
                State::Segmented { seg, phase } => Some(segmented::poll(seg, phase)),
                State::AwaitReceipt { issued, .. } => {
                    if std::mem::replace(issued, true) {
                        return Step::Failed(misuse("poll while waiting for the receipt"));
                    }
                    match self.receipt_wait_call() {
                        Ok(req) => Some(Step::Receipt(req)),
                        Err(e) => {
                            self.fail(e);
                            None
                        }
                    }
                }
                State::Resuming { .. } => self.poll_resuming(),
                State::Rewind(offset) => {
                    let offset = *offset;
                    self.rewind(offset)
                }
                State::Finished(outcome) => Some(match outcome.take() {
                    Some(Ok(r)) => Step::Done(r),
                    Some(Err(e)) => Step::Failed(e),
                    None => Step::Failed(misuse("poll after the end")),
                }),
            };
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// The first step: the rendezvous (§5), or straight to the upload's plan.
    fn start(&mut self) -> Option<Step> {
        match self.begin() {
            Ok(Begin::Rendezvous(r)) => {
                self.state = State::AwaitRendezvous(*r);
                None
            }
            Ok(Begin::Data(url)) => {
                self.state = State::Plan(url);
                None
            }
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Streaming or segmented to `url`, as the runtime and the origin's memory say (§10).
    fn plan(&mut self, url: String, memory: &mut OriginMemory) {
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
                let seg = Segmented::new(url, self.headers.clone(), self.cfg.part_size);
                self.state = State::Segmented {
                    seg: Box::new(seg),
                    phase: SegPhase::Ready,
                }
            }
            Err(e) => self.fail(e),
        }
    }

    /// The producer's presence (§12.5), once its rendezvous met a consumer and it has a
    /// transfer id: the keeper whose calls the driver makes beside everything else until the
    /// verdict.
    pub fn presence(&self) -> Option<PresenceKeeper> {
        let rc = self.cfg.receipt.as_ref().filter(|_| self.met)?;
        let channel = PresenceChannel {
            relay: self.cfg.relay.clone(),
            path: self.cfg.path.clone(),
            token: self.cfg.token.clone(),
            transfer: rc.transfer.clone(),
        };
        PresenceKeeper::new(&channel).ok()
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
            (Begin::Rendezvous(r), Some(rc)) => Begin::Rendezvous(Box::new((*r).with_hello(
                producer_hello(&rc.transfer, rc.wait, c.encrypted, c.resume_s.is_some()),
            ))),
            (b, _) => b,
        })
    }

    /// The upload failed with `e`: a break resumes (§12.3) when both sides said so and `e`
    /// is a cut (`PEER_DISCONNECTED`, `NETWORK`) of an upload under way; anything else ends
    /// the transfer.
    fn fail(&mut self, e: Error) {
        let cut = matches!(e.code, ErrorCode::PeerDisconnected | ErrorCode::Network);
        self.fail_or_resume(e, cut);
    }

    /// Ends the transfer with `e`, or resumes (§12.3) when `broke` says it is a break of an
    /// upload under way and both sides resume.
    fn fail_or_resume(&mut self, e: Error, broke: bool) {
        // A segmented upload whose part 0 never got through has not reached the consumer
        // (it still waits on the stream path): nothing to resume. A resumed one's consumer
        // waits on the transfer's channel from the meeting on.
        let uploading = match &self.state {
            State::Streaming { .. } | State::Probing { .. } => true,
            State::Segmented { seg, .. } => seg.k > 0 || self.resumes > 0,
            _ => false,
        };
        match self.cfg.resume_s {
            Some(seconds) if uploading && broke && self.resumes() => {
                self.broke = true;
                self.state = State::Resuming {
                    clock: ResumeClock::start(self.now_ms, seconds),
                    phase: ResumePhase::Call { issued: false },
                    error: e,
                    report: None,
                    relay_answered: false,
                };
            }
            _ => self.fail_final(e),
        }
    }

    /// Ends the transfer with `e` (no resume).
    fn fail_final(&mut self, e: Error) {
        self.state = State::Finished(Some(Err(e)));
    }

    /// The consumer said it gave up before its stream started (§12.5: its negative receipt met
    /// the presence call, [`PresenceStep::PeerLeft`]): the transfer fails with `e` — also when
    /// the stop of its requests that followed already failed it (the adapter hands this in
    /// before it polls again) — unless it already succeeded; nobody is left for last words.
    ///
    /// [`PresenceStep::PeerLeft`]: super::presence::PresenceStep::PeerLeft
    pub fn on_peer_left(&mut self, e: Error) {
        if matches!(self.state, State::Finished(Some(Ok(_)))) {
            return;
        }
        self.peer_left = true;
        self.fail_final(e);
    }

    /// The operation was stopped (the caller's abort, its timeout) while none of its requests
    /// was out (a pause between tries): it fails with the stop, and its last words follow.
    pub fn on_stopped(&mut self, stop: StopReason) {
        let what = match &self.state {
            State::Finished(_) => return,
            State::Segmented { seg, .. } => seg.what(seg.k),
            _ => self.stream_what(),
        };
        self.fail_final(Failure::stopped(stop, None).into_error(ErrorCode::Aborted, &what));
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
}
