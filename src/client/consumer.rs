//! The consumer (`receive`) as a sans-IO state machine (`PROTOCOL.md` §3.3, §5, §11):
//! rendezvous, the `GET`, what the response head says, and what a broken body means.
//!
//! ```text
//! Start ─rendezvous?─▶ Rendezvous ─data URL─▶ Get ─200─▶ Stream(Incoming) ─▶ BodyCheck
//!                                              └─other─▶ ErrorBody ─▶ Failed
//! ```

use super::disposition;
use super::error::{
    classify_response, unavailable_now, withdrawn, Error, ErrorCode, Failure, StopReason,
};
use super::receipt::ReceiptPlan;
use super::rendezvous::{auth_headers, Begin, Rendezvous};
use super::request::{Headers, Request};
use super::resume::{agree, ResumeClock, ResumePlan};
use super::stall::{self, StallStep, STALL_AFTER_MS};
use super::urls::{ConnectMode, RelayBase};
use crate::crypto::{sniff, Sniff, SNIFF_BYTES};
use crate::protocol::channel::key_header as channel_key;
use crate::protocol::headers::resumed_at;
use crate::protocol::headers::{
    declared_size, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE, PEER_HELLO, X_PIPING,
};
use crate::protocol::hello::{
    consumer_hello, PeerHello, ResumeHello, RESUME_RETRY_MS, STALL_AFTER_S, STALL_CALL_S,
};

/// Everything a receive needs to know up front.
#[derive(Debug, Clone)]
pub struct ReceiveConfig {
    pub relay: RelayBase,
    pub path: String,
    pub token: Option<String>,
    /// Wait on the Connect API first (§5).
    pub rendezvous: bool,
    /// Seconds to wait for the producer (the rendezvous, or without it the response head).
    pub timeout_s: Option<f64>,
    /// The payload will be decrypted: the relay's metadata is not the plaintext's.
    pub encrypted: bool,
    /// The plaintext size the caller knows (progress total when decrypting).
    pub size: Option<u64>,
    /// Send delivery receipts (§12): say so in the rendezvous hello.
    pub receipt: bool,
    /// Resume after a break (§12.3): seconds to keep trying; `None`: no resume.
    pub resume_s: Option<f64>,
    /// Without keys, hand out an encrypted stream's ciphertext (§11.3 step 5); otherwise an
    /// age / age-rt stream fails `WRONG_KEY` (the body's [`BodyCheck::check_start`]).
    pub ciphertext: bool,
}

/// What the consumer learns when the stream starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The producer's `Content-Type` (plain transfers only).
    pub content_type: Option<String>,
    /// From `Content-Disposition`.
    pub filename: Option<String>,
    /// The producer's `Content-Length`, or its declared size (`X-Piping: httpipe-size=N`);
    /// plain transfers only.
    pub size: Option<u64>,
    /// The total for progress reports (plaintext bytes, when known).
    pub progress_total: Option<u64>,
}

/// What the adapter must do next.
#[derive(Debug)]
pub enum Step {
    /// `GET` this Connect API request; answer with [`Consumer::on_response`] / [`Consumer::on_failure`].
    Rendezvous(Request),
    /// `GET` the data URL; answer with [`Consumer::on_head`] (status and headers) or
    /// [`Consumer::on_failure`]. `timeout_ms` covers the wait for the response head only.
    Get(Request),
    /// The answer was a refusal: read its body (text, at most 64 KiB) and pass it to
    /// [`Consumer::on_error_body`].
    ReadErrorBody,
    /// The stream started: read the body through the [`BodyCheck`].
    Stream(Incoming, BodyCheck),
    Failed(Error),
}

enum State {
    Start,
    AwaitRendezvous(Rendezvous),
    Get(String),
    AwaitHead { what: String },
    Refused { status: u16, what: String },
    AwaitErrorBody { status: u16, what: String },
    Streaming(Option<(Incoming, BodyCheck)>),
    Failed(Option<Error>),
}

/// The consumer side of one transfer.
pub struct Consumer {
    cfg: ReceiveConfig,
    state: State,
    /// The producer's transfer id, when it waits for a receipt (§12.1).
    receipt_transfer: Option<String>,
    /// The producer states its end (`attest`, §12.2).
    peer_attests: bool,
    /// The producer's transfer id, when both sides resume (§12.3).
    resume_transfer: Option<String>,
    /// The data URL of the rendezvous.
    data_url: Option<String>,
}

impl Consumer {
    pub fn new(cfg: ReceiveConfig) -> Result<Self, Error> {
        cfg.relay.data_url(&cfg.path)?;
        Ok(Consumer {
            cfg,
            state: State::Start,
            receipt_transfer: None,
            peer_attests: false,
            resume_transfer: None,
            data_url: None,
        })
    }

    /// What to do now.
    pub fn poll(&mut self) -> Step {
        loop {
            match &mut self.state {
                State::Start => {
                    let c = &self.cfg;
                    let mode = ConnectMode::AwaitWriter;
                    let token = c.token.as_deref();
                    match Begin::new(&c.relay, &c.path, mode, c.rendezvous, c.timeout_s, token) {
                        Ok(Begin::Rendezvous(r)) => {
                            let r = r.with_hello(consumer_hello(
                                c.receipt,
                                c.encrypted,
                                c.resume_s.is_some(),
                            ));
                            let req = r.request().clone();
                            self.state = State::AwaitRendezvous(r);
                            return Step::Rendezvous(req);
                        }
                        Ok(Begin::Data(url)) => self.state = State::Get(url),
                        Err(e) => self.state = State::Failed(Some(e)),
                    }
                }
                State::Get(url) => {
                    let url = std::mem::take(url);
                    let mut req =
                        Request::get(url.clone(), auth_headers(self.cfg.token.as_deref()));
                    if !self.cfg.rendezvous {
                        // Without a rendezvous the GET itself waits for the producer.
                        req.timeout_ms = self.cfg.timeout_s.map(|t| t * 1000.0);
                    }
                    self.state = State::AwaitHead {
                        what: format!("receiving {url}"),
                    };
                    return Step::Get(req);
                }
                State::Refused { status, what } => {
                    self.state = State::AwaitErrorBody {
                        status: *status,
                        what: std::mem::take(what),
                    };
                    return Step::ReadErrorBody;
                }
                State::Streaming(s) => {
                    return match s.take() {
                        Some((i, c)) => Step::Stream(i, c),
                        None => Step::Failed(misuse("poll after the stream started")),
                    }
                }
                State::Failed(e) => {
                    return Step::Failed(
                        e.take().unwrap_or_else(|| misuse("poll after the failure")),
                    )
                }
                State::AwaitRendezvous(_)
                | State::AwaitHead { .. }
                | State::AwaitErrorBody { .. } => {
                    return Step::Failed(misuse("poll while waiting for an answer"))
                }
            }
        }
    }

    /// The answer to [`Step::Rendezvous`].
    pub fn on_response(&mut self, status: u16, headers: &dyn Headers, body: &str) {
        self.state = match &self.state {
            State::AwaitRendezvous(r) => match r.on_response(status, body) {
                Ok(url) => {
                    let peer = headers
                        .get(PEER_HELLO)
                        .map(|h| PeerHello::parse(&h))
                        .unwrap_or_default();
                    if self.cfg.receipt && peer.receipt {
                        self.receipt_transfer = peer.transfer.clone();
                        self.peer_attests = peer.attests;
                    }
                    if self.cfg.resume_s.is_some() && peer.resume {
                        self.resume_transfer = peer.transfer;
                    }
                    self.data_url = Some(url.clone());
                    State::Get(url)
                }
                Err(e) => State::Failed(Some(e)),
            },
            _ => State::Failed(Some(misuse("an answer nobody asked for"))),
        };
    }

    /// The transfer id, when the producer waits for this consumer's receipt (§12.1).
    #[cfg(test)]
    fn receipt_transfer(&self) -> Option<&str> {
        self.receipt_transfer.as_deref()
    }

    /// How to deliver this transfer's receipt (§12.2), when the producer waits for one.
    pub fn receipt_plan(&self) -> Option<ReceiptPlan> {
        Some(ReceiptPlan {
            relay: self.cfg.relay.clone(),
            path: self.cfg.path.clone(),
            token: self.cfg.token.clone(),
            transfer: self.receipt_transfer.clone()?,
            attest: self.peer_attests,
        })
    }

    /// The consumer's side of resume (§12.3), when both sides said they resume (and the
    /// stream began: it has a data URL).
    pub fn resumer(&self) -> Option<Resumer> {
        self.data_url.as_ref()?;
        Some(Resumer {
            plan: ResumePlan {
                relay: self.cfg.relay.clone(),
                path: self.cfg.path.clone(),
                token: self.cfg.token.clone(),
                transfer: self.resume_transfer.clone()?,
            },
            seconds: self.cfg.resume_s?,
            state: ResumeState::Idle,
            resumes: 0,
            stall_answered_ms: f64::NEG_INFINITY,
        })
    }

    /// The [`Step::Rendezvous`] or [`Step::Get`] request failed below HTTP.
    pub fn on_failure(&mut self, f: Failure) {
        self.state = match &self.state {
            State::AwaitRendezvous(r) => State::Failed(Some(r.on_failure(f))),
            State::AwaitHead { what } => {
                State::Failed(Some(f.into_error(ErrorCode::Network, what)))
            }
            _ => State::Failed(Some(misuse("a failure nobody asked for"))),
        };
    }

    /// The response head of [`Step::Get`].
    pub fn on_head(&mut self, status: u16, headers: &dyn Headers) {
        let State::AwaitHead { what } = &mut self.state else {
            self.state = State::Failed(Some(misuse("a head nobody asked for")));
            return;
        };
        let what = std::mem::take(what);
        if let Some(e) = withdrawn(headers, &what) {
            self.state = State::Failed(Some(e));
            return;
        }
        if status != 200 {
            self.state = State::Refused { status, what };
            return;
        }
        let encrypted = self.cfg.encrypted;
        let length = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.trim().parse::<u64>().ok());
        // A streaming upload has no Content-Length: the producer declares its size in X-Piping.
        let declared = length.or_else(|| headers.get(X_PIPING).and_then(|v| declared_size(&v)));
        let incoming = Incoming {
            content_type: headers.get(CONTENT_TYPE).filter(|_| !encrypted),
            filename: headers
                .get(CONTENT_DISPOSITION)
                .and_then(|v| disposition::parse(&v)),
            size: declared.filter(|_| !encrypted),
            progress_total: if encrypted { self.cfg.size } else { declared },
        };
        let check = BodyCheck {
            what,
            length,
            seen: 0,
            // §11.3 step 5: a consumer without keys asks what the stream's start is
            start: (!encrypted && !self.cfg.ciphertext).then(Vec::new),
        };
        self.state = State::Streaming(Some((incoming, check)));
    }

    /// The body of a refusal (after [`Step::ReadErrorBody`]).
    pub fn on_error_body(&mut self, body: &str) {
        self.state = match &self.state {
            State::AwaitErrorBody { status, what } => {
                State::Failed(Some(classify_response(*status, body, what)))
            }
            _ => State::Failed(Some(misuse("an error body nobody asked for"))),
        };
    }
}

/// What the adapter's body stream does next while it resumes (§12.3).
#[derive(Debug)]
pub enum ResumeStep {
    /// `GET` this Connect call on the transfer's channel; answer with
    /// [`Resumer::on_call`] or [`Resumer::on_call_failure`].
    Call(Request),
    /// Wait, then [`Resumer::on_slept`].
    Sleep(f64),
    /// `GET` the resumed data; answer with [`Resumer::on_head`] or [`Resumer::on_get_failure`].
    Get(Request),
    /// The stream goes on from this wire offset: read the new body through this check (its
    /// failures are breaks again, [`Resumer::on_break`]).
    Resumed(BodyCheck, u64),
    /// Give up with this error.
    Failed(Error),
}

#[derive(Debug)]
enum ResumeState {
    Idle,
    Meeting {
        clock: ResumeClock,
        offset: u64,
        error: Error,
    },
    Getting {
        clock: ResumeClock,
        offset: u64,
        error: Error,
    },
    /// A stall call is out (§12.4) for a consumer holding `offset` wire bytes.
    Stalled {
        offset: u64,
    },
}

/// The consumer's side of resume (§12.3): after a break it meets the producer on the
/// transfer's channel with the offset it holds, and `GET`s the rest on the Data API channel.
#[derive(Debug)]
pub struct Resumer {
    plan: ResumePlan,
    seconds: f64,
    state: ResumeState,
    /// Breaks resumed after.
    pub resumes: u32,
    /// When the last stall call was answered without a meeting (§12.4: the next one comes
    /// after another `STALL_AFTER_S` without a byte).
    stall_answered_ms: f64,
}

/// Seconds a resumed `GET` waits for the producer's upload to arrive.
const RESUMED_GET_TIMEOUT_S: f64 = 30.0;

impl Resumer {
    /// The body broke with `f` while the consumer holds `offset` wire bytes (`None`: it can't
    /// resume, e.g. armored input). A stop (abort) is no break; the error stays `check`'s.
    pub fn on_break(
        &mut self,
        f: Failure,
        check: &BodyCheck,
        offset: Option<u64>,
        now_ms: f64,
    ) -> ResumeStep {
        let stop = f.stop != StopReason::None || f.coded.is_some();
        let error = check.on_failure(f);
        match offset {
            Some(offset) if !stop => self.meet(error, offset, now_ms, None),
            _ => ResumeStep::Failed(error),
        }
    }

    fn meet(
        &mut self,
        error: Error,
        offset: u64,
        now_ms: f64,
        clock: Option<ResumeClock>,
    ) -> ResumeStep {
        let clock = clock.unwrap_or_else(|| ResumeClock::start(now_ms, self.seconds));
        let Some(t) = clock.call_timeout(now_ms) else {
            self.state = ResumeState::Idle;
            let mut e = error;
            e.message = format!(
                "{} (and the sender did not come back within {} s to resume, PROTOCOL.md §12.3)",
                e.message, clock.seconds
            );
            return ResumeStep::Failed(e);
        };
        let req = self.plan.call(ResumeHello::Ask { offset }, t);
        self.state = ResumeState::Meeting {
            clock,
            offset,
            error,
        };
        match req {
            Ok(r) => ResumeStep::Call(r),
            Err(e) => ResumeStep::Failed(e),
        }
    }

    fn take(&mut self) -> Option<(ResumeClock, u64, Error)> {
        match std::mem::replace(&mut self.state, ResumeState::Idle) {
            ResumeState::Meeting {
                clock,
                offset,
                error,
            }
            | ResumeState::Getting {
                clock,
                offset,
                error,
            } => Some((clock, offset, error)),
            ResumeState::Idle | ResumeState::Stalled { .. } => None,
        }
    }

    /// The answer to [`ResumeStep::Call`].
    pub fn on_call(
        &mut self,
        status: u16,
        headers: &dyn Headers,
        body: &str,
        now_ms: f64,
    ) -> ResumeStep {
        let Some((clock, offset, error)) = self.take() else {
            return ResumeStep::Failed(misuse("a resume answer nobody asked for"));
        };
        let what = "meeting the sender again after a break (PROTOCOL.md §12.3)";
        match status {
            200 => match headers
                .get(PEER_HELLO)
                .as_deref()
                .and_then(ResumeHello::parse)
            {
                Some(hello) => self.met(hello, clock, offset, error, what),
                None => ResumeStep::Failed(Error::new(
                    ErrorCode::RelayError,
                    format!("{what}: the answer carries no resume offer from the sender"),
                )),
            },
            408 => self.meet(error, offset, now_ms, Some(clock)),
            s if unavailable_now(s) => {
                self.state = ResumeState::Meeting {
                    clock,
                    offset,
                    error,
                };
                ResumeStep::Sleep(RESUME_RETRY_MS)
            }
            _ => ResumeStep::Failed(classify_response(status, body, what)),
        }
    }

    /// The producer's hello at a meeting (§12.3): its offer (the verdict, then the resumed
    /// `GET`) or its failure notice.
    fn met(
        &mut self,
        hello: ResumeHello,
        clock: ResumeClock,
        offset: u64,
        error: Error,
        what: &str,
    ) -> ResumeStep {
        match hello {
            ResumeHello::Offer { from, to } => {
                if let Err(e) = agree(from, to, offset, true) {
                    return ResumeStep::Failed(e);
                }
                let url = match self.plan.data_url() {
                    Ok(url) => url,
                    Err(e) => return ResumeStep::Failed(e),
                };
                let mut headers = auth_headers(self.plan.token.as_deref());
                headers.push(channel_key(&self.plan.transfer));
                let mut req = Request::get(url, headers);
                req.timeout_ms = Some(RESUMED_GET_TIMEOUT_S * 1000.0);
                self.state = ResumeState::Getting {
                    clock,
                    offset,
                    error,
                };
                ResumeStep::Get(req)
            }
            ResumeHello::Failed { code } => ResumeStep::Failed(Error::new(
                ErrorCode::Truncated,
                format!("the sender failed with {code} after {offset} bytes: the stream is cut short (PROTOCOL.md §12.3)"),
            )),
            ResumeHello::Ask { .. } => ResumeStep::Failed(Error::new(
                ErrorCode::RelayError,
                format!("{what}: the answer carries no resume offer from the sender"),
            )),
        }
    }

    /// The stall watch of the body being read (§12.4): the current read began waiting for a
    /// byte at `waiting_since_ms` (driver's clock) while the consumer holds `offset` wire
    /// bytes (`None`: it can't say now, e.g. a decryptor mid-record). Once the read waited
    /// [`STALL_AFTER_S`] (counted again from a stall call's answer), the call that asks
    /// whether the producer waits too; the driver takes nothing from the body until it passes
    /// the answer to [`Resumer::on_stall_answer`].
    pub fn poll_stall(
        &mut self,
        now_ms: f64,
        waiting_since_ms: f64,
        offset: Option<u64>,
    ) -> StallStep {
        if !matches!(self.state, ResumeState::Idle) {
            return StallStep::Off;
        }
        let since = waiting_since_ms.max(self.stall_answered_ms);
        if let Some(at) = stall::not_yet(now_ms, since) {
            return StallStep::WakeAt(at);
        }
        let Some(offset) = offset else {
            return StallStep::WakeAt(now_ms + STALL_AFTER_MS);
        };
        match self.stall_call(offset) {
            Ok(req) => StallStep::Call(req),
            Err(_) => StallStep::Off,
        }
    }

    /// The call of [`Resumer::poll_stall`] for a consumer holding `offset` wire bytes.
    fn stall_call(&mut self, offset: u64) -> Result<Request, Error> {
        if !matches!(self.state, ResumeState::Idle) {
            return Err(misuse("a stall call while resuming"));
        }
        let req = self.plan.call(ResumeHello::Ask { offset }, STALL_CALL_S)?;
        self.state = ResumeState::Stalled { offset };
        Ok(req)
    }

    /// The answer to a [`StallStep::Call`] (`None`: it failed below HTTP). `None` back:
    /// no meeting, read on from the same body; else the connection stalled and the stream
    /// goes on as after a break from the step (stop reading the stalled body first).
    pub fn on_stall_answer(
        &mut self,
        answer: Option<(u16, &dyn Headers)>,
        now_ms: f64,
    ) -> Option<ResumeStep> {
        let ResumeState::Stalled { offset } = std::mem::replace(&mut self.state, ResumeState::Idle)
        else {
            return Some(ResumeStep::Failed(misuse(
                "a stall answer nobody asked for",
            )));
        };
        self.stall_answered_ms = now_ms;
        let (200, headers) = answer? else {
            return None;
        };
        let hello = headers
            .get(PEER_HELLO)
            .as_deref()
            .and_then(ResumeHello::parse)?;
        let clock = ResumeClock::start(now_ms, self.seconds);
        let error = Error::new(
            ErrorCode::Truncated,
            format!(
                "the stream stalled after {offset} bytes: nothing arrived for {STALL_AFTER_S} s while the sender waited too (PROTOCOL.md §12.4)"
            ),
        );
        Some(self.met(
            hello,
            clock,
            offset,
            error,
            "meeting the sender after a stall (PROTOCOL.md §12.4)",
        ))
    }

    /// The [`ResumeStep::Call`] failed below HTTP: call again after a pause (the relay may be
    /// restarting), unless it was a stop.
    pub fn on_call_failure(&mut self, f: Failure) -> ResumeStep {
        let Some((clock, offset, error)) = self.take() else {
            return ResumeStep::Failed(misuse("a resume failure nobody asked for"));
        };
        if f.stop != StopReason::None {
            return ResumeStep::Failed(f.into_error(ErrorCode::Network, "resuming after a break"));
        }
        self.state = ResumeState::Meeting {
            clock,
            offset,
            error,
        };
        ResumeStep::Sleep(RESUME_RETRY_MS)
    }

    /// The pause of a [`ResumeStep::Sleep`] is over.
    pub fn on_slept(&mut self, now_ms: f64) -> ResumeStep {
        match self.take() {
            Some((clock, offset, error)) => self.meet(error, offset, now_ms, Some(clock)),
            None => ResumeStep::Failed(misuse("a pause nobody asked for")),
        }
    }

    /// The head of the resumed `GET`: it must say it starts where this consumer stands.
    pub fn on_head(&mut self, status: u16, headers: &dyn Headers, now_ms: f64) -> ResumeStep {
        let Some((clock, offset, error)) = self.take() else {
            return ResumeStep::Failed(misuse("a head nobody asked for"));
        };
        let what = format!("receiving the rest of {} after a break", self.plan.path);
        match status {
            200 => {
                let at = headers.get(X_PIPING).and_then(|v| resumed_at(&v));
                if at != Some(offset) {
                    return ResumeStep::Failed(Error::new(
                        ErrorCode::RelayError,
                        format!("{what}: the resumed stream does not start at byte {offset} (X-Piping: httpipe-resume, PROTOCOL.md §12.3)"),
                    ));
                }
                self.resumes += 1;
                let check = BodyCheck {
                    what,
                    length: None,
                    seen: 0,
                    // the start was looked at before the break
                    start: None,
                };
                ResumeStep::Resumed(check, offset)
            }
            s if unavailable_now(s) => self.meet(error, offset, now_ms, Some(clock)),
            _ => ResumeStep::Failed(
                withdrawn(headers, &what).unwrap_or_else(|| classify_response(status, "", &what)),
            ),
        }
    }

    /// The resumed `GET` failed below HTTP: meet again.
    pub fn on_get_failure(&mut self, f: Failure, now_ms: f64) -> ResumeStep {
        let Some((clock, offset, error)) = self.take() else {
            return ResumeStep::Failed(misuse("a failure nobody asked for"));
        };
        if f.stop != StopReason::None && f.stop != StopReason::Timeout {
            return ResumeStep::Failed(f.into_error(ErrorCode::Network, "resuming after a break"));
        }
        self.meet(error, offset, now_ms, Some(clock))
    }
}

fn misuse(what: &str) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!("internal error in the SDK's consumer: {what}"),
    )
}

/// Watches the consumer's response body: a transport failure is `TRUNCATED` (the relay
/// aborts the consumer's response when the producer's stream breaks, §3.3) unless the
/// operation was stopped; a body shorter than its `Content-Length` is `TRUNCATED` too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCheck {
    what: String,
    length: Option<u64>,
    seen: u64,
    /// The stream's first bytes while it is not known whether they begin ciphertext (a
    /// consumer without keys, §11.3 step 5); `None` once known, or when nobody asks.
    start: Option<Vec<u8>>,
}

impl BodyCheck {
    /// True while [`BodyCheck::check_start`] wants the next chunk's first bytes.
    pub fn checks_start(&self) -> bool {
        self.start.is_some()
    }

    /// Before a chunk is handed out (plain bytes, a consumer without keys): `head` is its
    /// first bytes (at most [`SNIFF_BYTES`]). An age or age-rt start fails `WRONG_KEY`
    /// before the chunk that completes it is handed out (§11.3 step 5).
    pub fn check_start(&mut self, head: &[u8]) -> Result<(), Error> {
        let Some(start) = self.start.as_mut() else {
            return Ok(());
        };
        let room = SNIFF_BYTES.saturating_sub(start.len());
        start.extend_from_slice(&head[..head.len().min(room)]);
        match sniff(start) {
            Sniff::Undecided => Ok(()),
            Sniff::Plain => {
                self.start = None;
                Ok(())
            }
            Sniff::Encrypted(format) => Err(Error::new(
                ErrorCode::WrongKey,
                format!(
                    "{}: the stream is encrypted ({format}) and no passphrase or identities were \
                     given (PROTOCOL.md §11.3); receive with the sender's passphrase or your \
                     identity, or ask for the ciphertext to store it as it is",
                    self.what
                ),
            )),
        }
    }

    /// `n` more bytes arrived.
    pub fn on_bytes(&mut self, n: u64) {
        self.seen += n;
    }

    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Reading the body failed.
    pub fn on_failure(&self, f: Failure) -> Error {
        if f.coded.is_some() || f.stop != StopReason::None {
            return f.into_error(ErrorCode::Truncated, &self.what);
        }
        let cause = f.cause;
        let said = cause
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        Error::new(
            ErrorCode::Truncated,
            format!(
                "{}: the stream broke off before its end (the producer stopped or the connection was cut){said}",
                self.what
            ),
        )
        .with_shared_source(cause)
    }

    /// The body ended cleanly.
    pub fn on_end(&self) -> Result<(), Error> {
        match self.length {
            Some(n) if self.seen < n => Err(Error::new(
                ErrorCode::Truncated,
                format!("{}: got {} of {n} bytes", self.what, self.seen),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::error::Cause;
    use crate::client::receipt::{self, Outcome};
    use crate::client::request::NoHeaders;

    fn cfg(rendezvous: bool, encrypted: bool) -> ReceiveConfig {
        ReceiveConfig {
            relay: RelayBase::parse("http://h:1").unwrap(),
            path: "/p".into(),
            token: None,
            rendezvous,
            timeout_s: Some(5.0),
            encrypted,
            size: Some(99),
            receipt: true,
            resume_s: None,
            ciphertext: false,
        }
    }

    #[test]
    fn a_producer_that_waits_gets_a_receipt_call() {
        let mut c = Consumer::new(cfg(true, false)).unwrap();
        let Step::Rendezvous(_) = c.poll() else {
            panic!()
        };
        let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; receipt")];
        c.on_response(200, &h, "http://h:1/p\n");
        assert_eq!(c.receipt_transfer(), Some("TID"));
        let mut k = receipt::Committer::new();
        k.update(b"abc");
        let req = c
            .receipt_plan()
            .unwrap()
            .request(Outcome::Ok, &k.commitment(), None)
            .unwrap();
        assert_eq!(
            req.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=30",
                crate::protocol::channel::channel_id("TID")
            )
        );
        let (_, hello) = req
            .headers
            .iter()
            .find(|(n, _)| *n == crate::protocol::headers::HELLO)
            .unwrap();
        assert!(hello.starts_with("httpipe-receipt=1; status=ok; bytes=3; digest="));
        // an older producer promised no end: the ok receipt checks none
        let plan = c.receipt_plan().unwrap();
        assert!(!plan.attest);
        let d = plan.delivery(Outcome::Ok, &k.commitment(), None, 0.0);
        assert!(!d.unwrap().checks_end());
        // one that says `attest` (§12.2): the ok receipt checks its end, a cancelled one not
        let mut a = Consumer::new(cfg(true, false)).unwrap();
        a.poll();
        let ha: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; receipt; attest")];
        a.on_response(200, &ha, "http://h:1/p\n");
        let plan = a.receipt_plan().unwrap();
        let ok = plan.delivery(Outcome::Ok, &k.commitment(), None, 0.0);
        assert!(ok.unwrap().checks_end());
        let cancelled = plan.delivery(Outcome::Cancelled, &k.commitment(), None, 0.0);
        assert!(!cancelled.unwrap().checks_end());
        // receipts turned off: the producer's wish is ignored
        let mut off = cfg(true, false);
        off.receipt = false;
        let mut c = Consumer::new(off).unwrap();
        let Step::Rendezvous(r) = c.poll() else {
            panic!()
        };
        assert!(r
            .headers
            .contains(&(crate::protocol::headers::HELLO, "httpipe=1".into())));
        c.on_response(200, &h, "http://h:1/p\n");
        assert!(c.receipt_plan().is_none());
        // a decrypting consumer says so
        let mut d = Consumer::new(cfg(true, true)).unwrap();
        let Step::Rendezvous(r) = d.poll() else {
            panic!()
        };
        assert!(r.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe=1; receipt=decrypted".into()
        )));
    }

    /// The resumer of a consumer whose rendezvous met a producer that resumes (§12.3).
    fn resuming_consumer(resume_s: f64) -> Resumer {
        let mut c = cfg(true, false);
        c.resume_s = Some(resume_s);
        let mut c = Consumer::new(c).unwrap();
        let Step::Rendezvous(_) = c.poll() else {
            panic!()
        };
        let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
        c.on_response(200, &h, "http://h:1/p\n");
        c.resumer().expect("both sides resume")
    }

    /// §12.4 timing, on a fake clock: a read waiting less than STALL_AFTER_S sleeps until
    /// then; then the call; after an answer without a meeting, another 10 s; no offset known
    /// yet: look again later; a resume under way: no watch.
    #[test]
    fn the_stall_watch_asks_after_ten_starving_seconds() {
        let mut r = resuming_consumer(60.0);
        let wake = |s: StallStep| match s {
            StallStep::WakeAt(t) => t,
            s => panic!("{s:?}"),
        };
        assert_eq!(wake(r.poll_stall(1_000.0, 1_000.0, Some(5))), 11_000.0);
        assert_eq!(wake(r.poll_stall(9_000.0, 1_000.0, Some(5))), 11_000.0);
        assert_eq!(wake(r.poll_stall(11_000.0, 1_000.0, None)), 21_000.0);
        let StallStep::Call(call) = r.poll_stall(11_000.0, 1_000.0, Some(5)) else {
            panic!("10 s without a byte: the stall call")
        };
        assert!(call.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; offset=5".into()
        )));
        assert!(matches!(
            r.poll_stall(12_000.0, 1_000.0, Some(5)),
            StallStep::Off
        ));
        assert!(r
            .on_stall_answer(Some((408, &NoHeaders)), 13_000.0)
            .is_none());
        // the same read goes on: another 10 s from the answer
        assert_eq!(wake(r.poll_stall(13_000.0, 1_000.0, Some(5))), 23_000.0);
        assert!(matches!(
            r.poll_stall(23_000.0, 1_000.0, Some(5)),
            StallStep::Call(_)
        ));
    }

    /// §12.4: a starving read asks on the channel; a 408 or a failed call reads on; the
    /// producer waiting too resumes as after a break; its failure notice ends the stream.
    #[test]
    fn a_stalled_body_resumes_when_the_producer_waits_too() {
        let mut r = resuming_consumer(5.0);
        let call = r.stall_call(70).unwrap();
        assert_eq!(
            call.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=2",
                crate::protocol::channel::channel_id("TID")
            )
        );
        assert!(call.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; offset=70".into()
        )));
        assert!(r.stall_call(70).is_err(), "one at a time");
        assert!(r.on_stall_answer(Some((408, &NoHeaders)), 0.0).is_none());
        r.stall_call(70).unwrap();
        assert!(r.on_stall_answer(None, 0.0).is_none(), "a failed call");
        r.stall_call(70).unwrap();
        let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
        let Some(ResumeStep::Get(get)) = r.on_stall_answer(Some((200, &offer)), 0.0) else {
            panic!("the stall is a break")
        };
        assert_eq!(
            get.url,
            format!(
                "http://h:1/p?channel={}",
                crate::protocol::channel::channel_id("TID")
            )
        );
        let at: &[(&str, &str)] = &[("x-piping", "httpipe-resume=70")];
        let ResumeStep::Resumed(_, 70) = r.on_head(200, &at, 100.0) else {
            panic!()
        };
        assert_eq!(r.resumes, 1);
        r.stall_call(80).unwrap();
        let failed: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; failed=SOURCE_FAILED")];
        let Some(ResumeStep::Failed(e)) = r.on_stall_answer(Some((200, &failed)), 0.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Truncated);
        // the time to meet again after a stall runs out with the stall's error
        r.stall_call(80).unwrap();
        let Some(ResumeStep::Get(_)) = r.on_stall_answer(Some((200, &offer)), 0.0) else {
            panic!()
        };
        let ResumeStep::Call(_) = r.on_head(503, &NoHeaders, 1000.0) else {
            panic!()
        };
        let ResumeStep::Failed(e) = r.on_call(408, &NoHeaders, "", 5500.0) else {
            panic!()
        };
        assert!(e.message.contains("stalled after 80 bytes"), "{e}");
    }

    /// §12.3: a break meets the producer with the offset held, refuses an offer that no
    /// longer covers it, and checks that the resumed stream starts at that offset.
    /// §12.3, §13.4: a cluster node named by the rendezvous answer died with the transfer. The
    /// resume goes through the relay's own URL (the balancer), and a balancer's 502 / 504 while
    /// its upstream is gone is "not now", not a refusal.
    #[test]
    fn a_resume_finds_a_live_node_through_the_relay_url() {
        let mut c = cfg(true, false);
        c.resume_s = Some(30.0);
        let mut c = Consumer::new(c).unwrap();
        let Step::Rendezvous(_) = c.poll() else {
            panic!()
        };
        let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
        c.on_response(200, &h, "http://10.0.0.11:8080/p\n");
        let mut r = c.resumer().expect("both sides resume");
        let Step::Get(get) = c.poll() else { panic!() };
        assert_eq!(
            get.url, "http://10.0.0.11:8080/p",
            "the first GET follows the answer"
        );
        c.on_head(200, &NoHeaders);
        let Step::Stream(_, check) = c.poll() else {
            panic!()
        };
        let cut = Failure::network(Cause {
            name: String::new(),
            message: "reset".into(),
        });
        let ResumeStep::Call(_) = r.on_break(cut, &check, Some(70), 0.0) else {
            panic!()
        };
        let mut now = 0.0;
        for gateway in [502, 504, 503] {
            let ResumeStep::Sleep(ms) = r.on_call(gateway, &NoHeaders, "", now) else {
                panic!("{gateway} is repeated")
            };
            assert_eq!(ms, RESUME_RETRY_MS);
            now += ms;
            let ResumeStep::Call(_) = r.on_slept(now) else {
                panic!()
            };
        }
        let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
        let ResumeStep::Get(get) = r.on_call(200, &offer, "", now) else {
            panic!()
        };
        let channel = crate::protocol::channel::channel_id("TID");
        assert_eq!(get.url, format!("http://h:1/p?channel={channel}"));
        // the resumed GET reached the dead node through the balancer: meet again
        let ResumeStep::Call(_) = r.on_head(502, &NoHeaders, now + 10.0) else {
            panic!("a 502 on the resumed GET meets again")
        };
    }

    #[test]
    fn a_break_resumes_at_the_offset_held() {
        let mut c = cfg(true, false);
        c.resume_s = Some(5.0);
        let mut c = Consumer::new(c).unwrap();
        let Step::Rendezvous(r) = c.poll() else {
            panic!()
        };
        assert!(r.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe=1; receipt; resume".into()
        )));
        let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
        c.on_response(200, &h, "http://h:1/p\n");
        let mut r = c.resumer().expect("both sides resume");
        let Step::Get(_) = c.poll() else { panic!() };
        c.on_head(200, &NoHeaders);
        let Step::Stream(_, check) = c.poll() else {
            panic!()
        };
        let cut = || {
            Failure::network(Cause {
                name: String::new(),
                message: "reset".into(),
            })
        };
        let ResumeStep::Call(call) = r.on_break(cut(), &check, Some(70), 0.0) else {
            panic!()
        };
        assert_eq!(
            call.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=5",
                crate::protocol::channel::channel_id("TID")
            )
        );
        assert!(call.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; offset=70".into()
        )));
        // the relay is down: try again after a pause
        let ResumeStep::Sleep(_) = r.on_call_failure(cut()) else {
            panic!()
        };
        let ResumeStep::Call(_) = r.on_slept(1000.0) else {
            panic!()
        };
        let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
        let ResumeStep::Get(get) = r.on_call(200, &offer, "", 1500.0) else {
            panic!()
        };
        assert_eq!(
            get.url,
            format!(
                "http://h:1/p?channel={}",
                crate::protocol::channel::channel_id("TID")
            )
        );
        // a stream that doesn't say where it starts is refused
        let ResumeStep::Failed(e) = r.on_head(200, &NoHeaders, 1600.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::RelayError);
        // again, and the stream starts at 70
        let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(70), 2000.0) else {
            panic!()
        };
        let ResumeStep::Get(_) = r.on_call(200, &offer, "", 2100.0) else {
            panic!()
        };
        let at: &[(&str, &str)] = &[("x-piping", "httpipe-resume=70")];
        let ResumeStep::Resumed(_, 70) = r.on_head(200, &at, 2200.0) else {
            panic!()
        };
        assert_eq!(r.resumes, 1);
        // an offer that no longer covers the offset: TRUNCATED with the numbers
        let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(5), 3000.0) else {
            panic!()
        };
        let ResumeStep::Failed(e) = r.on_call(200, &offer, "", 3100.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(e.message.contains("10..90"), "{e}");
        // a stop is no break; time running out names the resume time
        let ResumeStep::Failed(e) = r.on_break(
            Failure::stopped(StopReason::User, None),
            &check,
            Some(5),
            0.0,
        ) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Aborted);
        let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(5), 0.0) else {
            panic!()
        };
        let ResumeStep::Failed(e) = r.on_call(408, &NoHeaders, "", 4500.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(e.message.contains("within 5 s to resume"), "{e}");
    }

    #[test]
    fn rendezvous_get_and_metadata() {
        let mut c = Consumer::new(cfg(true, false)).unwrap();
        let Step::Rendezvous(r) = c.poll() else {
            panic!()
        };
        assert_eq!(r.url, "http://h:1/connect/v0/p?mode=await-writer&timeout=5");
        assert!(r
            .headers
            .contains(&(crate::protocol::headers::HELLO, "httpipe=1; receipt".into())));
        c.on_response(200, &NoHeaders, "http://other:2/p\n");
        assert_eq!(c.receipt_transfer(), None, "a producer without a hello");
        let Step::Get(g) = c.poll() else { panic!() };
        assert_eq!(g.url, "http://other:2/p");
        assert_eq!(g.timeout_ms, None, "the rendezvous already waited");
        let h: &[(&str, &str)] = &[
            ("content-type", "text/csv"),
            ("x-piping", "httpipe-size=12"),
            ("content-disposition", "attachment; filename=\"a.csv\""),
        ];
        c.on_head(200, &h);
        let Step::Stream(i, check) = c.poll() else {
            panic!()
        };
        assert_eq!(i.content_type.as_deref(), Some("text/csv"));
        assert_eq!(i.filename.as_deref(), Some("a.csv"));
        assert_eq!(i.size, Some(12));
        assert_eq!(i.progress_total, Some(12));
        assert!(
            check.on_end().is_ok(),
            "no Content-Length: nothing to check"
        );
    }

    #[test]
    fn encrypted_metadata_is_not_the_plaintexts() {
        let mut c = Consumer::new(cfg(false, true)).unwrap();
        let Step::Get(g) = c.poll() else { panic!() };
        assert_eq!(g.timeout_ms, Some(5000.0));
        let h: &[(&str, &str)] = &[
            ("content-type", "application/octet-stream"),
            ("content-length", "500"),
        ];
        c.on_head(200, &h);
        let Step::Stream(i, _) = c.poll() else {
            panic!()
        };
        assert_eq!(i.content_type, None);
        assert_eq!(i.size, None);
        assert_eq!(i.progress_total, Some(99));
    }

    #[test]
    fn refusals_and_failures() {
        let mut c = Consumer::new(cfg(false, false)).unwrap();
        let Step::Get(_) = c.poll() else { panic!() };
        c.on_head(403, &crate::client::request::NoHeaders);
        let Step::ReadErrorBody = c.poll() else {
            panic!()
        };
        c.on_error_body("[ERROR:FORBIDDEN] wrong mode\n");
        let Step::Failed(e) = c.poll() else { panic!() };
        assert_eq!(e.code, ErrorCode::Forbidden);

        let mut c = Consumer::new(cfg(false, false)).unwrap();
        let Step::Get(_) = c.poll() else { panic!() };
        c.on_failure(Failure::stopped(StopReason::Timeout, None));
        let Step::Failed(e) = c.poll() else { panic!() };
        assert_eq!(e.code, ErrorCode::ConnectTimeout);
    }

    #[test]
    fn body_checks() {
        let mut c = Consumer::new(cfg(false, false)).unwrap();
        let Step::Get(_) = c.poll() else { panic!() };
        c.on_head(200, &vec![("content-length", "10")]);
        let Step::Stream(_, mut check) = c.poll() else {
            panic!()
        };
        check.on_bytes(4);
        let e = check.on_end().unwrap_err();
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(e.message.contains("got 4 of 10"), "{e}");
        check.on_bytes(6);
        assert!(check.on_end().is_ok());
        let cut = Failure::network(Cause {
            name: String::new(),
            message: "connection reset".into(),
        });
        assert_eq!(check.on_failure(cut).code, ErrorCode::Truncated);
        assert_eq!(
            check
                .on_failure(Failure::stopped(StopReason::User, None))
                .code,
            ErrorCode::Aborted
        );
    }

    /// Regression (#26): a consumer without keys wrote an age-rt stream's ciphertext out and
    /// reported success; now it fails `WRONG_KEY` before the chunk that completes the header
    /// line, unless it asked for the ciphertext.
    #[test]
    fn a_consumer_without_keys_refuses_ciphertext() {
        let start = |ciphertext: bool, encrypted: bool| {
            let mut cfg = cfg(false, encrypted);
            cfg.ciphertext = ciphertext;
            let mut c = Consumer::new(cfg).unwrap();
            let Step::Get(_) = c.poll() else { panic!() };
            c.on_head(200, &NoHeaders);
            let Step::Stream(_, check) = c.poll() else {
                panic!()
            };
            check
        };
        let mut check = start(false, false);
        assert!(check.checks_start());
        check.check_start(b"github.com/parsimonit/").unwrap();
        let e = check.check_start(b"age-rt-encryption/v0.2\n").unwrap_err();
        assert_eq!(e.code, ErrorCode::WrongKey);
        assert!(
            e.message.contains("the stream is encrypted (age-rt)"),
            "{e}"
        );
        // plain data is decided on its first bytes, and asked about no more
        let mut check = start(false, false);
        check.check_start(b"id,name\n").unwrap();
        assert!(!check.checks_start());
        // asked for the ciphertext, or decrypting: nothing to ask
        assert!(!start(true, false).checks_start());
        assert!(!start(false, true).checks_start());
    }
}
