//! The consumer's side of resume (`PROTOCOL.md` §12.3) and of the stall watch (§12.4): after
//! a break it meets the producer on the transfer's channel with the offset it holds, and
//! `GET`s the rest on the Data API channel.

use super::{misuse, BodyCheck};
use crate::client::error::{
    classify_response, unavailable_now, withdrawn, Error, ErrorCode, Failure, StopReason,
};
use crate::client::options::number_text;
use crate::client::rendezvous::auth_headers;
use crate::client::request::{Headers, Request};
use crate::client::resume::{agree, relay_reached, ResumeClock, ResumePlan};
use crate::client::stall::{self, StallStep, STALL_AFTER_MS};
use crate::protocol::channel::key_header as channel_key;
use crate::protocol::headers::{resumed_at, PEER_HELLO, X_PIPING};
use crate::protocol::hello::{ResumeHello, RESUME_RETRY_MS, STALL_AFTER_S, STALL_CALL_S};

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
    /// One of this break's calls got an HTTP answer ([`relay_reached`]): at the end, the
    /// sender did not come back, not the relay.
    relay_answered: bool,
}

/// Seconds a resumed `GET` waits for the producer's upload to arrive.
const RESUMED_GET_TIMEOUT_S: f64 = 30.0;

impl Resumer {
    /// Resume on `plan`'s channel for up to `seconds` after a break.
    pub(super) fn new(plan: ResumePlan, seconds: f64) -> Self {
        Resumer {
            plan,
            seconds,
            state: ResumeState::Idle,
            resumes: 0,
            stall_answered_ms: f64::NEG_INFINITY,
            relay_answered: false,
        }
    }

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
        let clock = clock.unwrap_or_else(|| {
            self.relay_answered = false;
            ResumeClock::start(now_ms, self.seconds)
        });
        let Some(t) = clock.call_timeout(now_ms) else {
            self.state = ResumeState::Idle;
            let gone = "the sender did not come back";
            return ResumeStep::Failed(clock.gave_up(error, self.relay_answered, gone));
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
        self.relay_answered |= relay_reached(status);
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
                let mut req = Request::get(url, headers).hung_on_timeout();
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
                format!("the sender failed with {code} at byte {offset} of the stream as sent: the stream is cut short (PROTOCOL.md §12.3)"),
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
    pub(super) fn stall_call(&mut self, offset: u64) -> Result<Request, Error> {
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
        self.relay_answered = true; // this answer came from the relay
        let error = Error::new(
            ErrorCode::Truncated,
            format!(
                "the stream stalled after {offset} bytes: nothing arrived for {} s while the sender waited too (PROTOCOL.md §12.4)",
                number_text(STALL_AFTER_S)
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
                    // Another meeting's upload (one whose answer this side never got: a
                    // relay frozen and thawed answers a queue of calls at once): drop it and
                    // meet again, the break's clock still running (§12.3).
                    return self.meet(error, offset, now_ms, Some(clock));
                }
                self.resumes += 1;
                // the start was looked at before the break
                let check = BodyCheck::new(what, None, false);
                ResumeStep::Resumed(check, offset)
            }
            s if unavailable_now(s) => self.meet(error, offset, now_ms, Some(clock)),
            _ => ResumeStep::Failed(
                withdrawn(headers, &what, true)
                    .unwrap_or_else(|| classify_response(status, "", &what)),
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
