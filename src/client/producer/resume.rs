//! Resume after a break (`PROTOCOL.md` §12.3) and the stall watch of an upload (§12.4): the
//! meeting on the transfer's channel, the offer of the replay window, the agreed offset.

use super::*;
use crate::client::resume::ReplayWindow;

/// The relay refused an upload `another-sender` (its `X-Httpipe-Error`, §3.5).
pub(super) fn refused_as_busy(headers: &dyn Headers) -> bool {
    headers.get(ERROR_CODE).and_then(|c| Code::parse(&c)) == Some(Code::AnotherSender)
}

impl<T: ByteChunk> Producer<T> {
    /// An upload was refused `another-sender` with `e`. A resumed upload's channel still
    /// holds an earlier upload of ours whose end the relay has not seen yet: a meeting whose
    /// answer this side never got (a relay frozen and thawed answers a queue of stale calls
    /// at once). That is a break: meet again (§12.3). Any other upload fails with `e`.
    pub(super) fn on_channel_busy(&mut self, e: Error) {
        let resumed = self.resumes > 0;
        self.fail_or_resume(e, resumed);
    }

    /// While the sides meet again (§12.3): the next call on the transfer's channel (with the
    /// producer's offer, and its end once the source ended), a pause, or the verdict once
    /// the resume time ran out. `None`: poll again.
    pub(super) fn poll_resuming(&mut self) -> Option<Step> {
        let State::Resuming { clock, phase, .. } = &mut self.state else {
            return Some(Step::Failed(misuse("a resume poll while not resuming")));
        };
        match *phase {
            ResumePhase::Call { issued: false } => {
                let Some(t) = clock.call_timeout(self.now_ms) else {
                    let over = std::mem::replace(&mut self.state, State::Finished(None));
                    if let State::Resuming {
                        error,
                        clock,
                        relay_answered,
                        ..
                    } = over
                    {
                        let e =
                            clock.gave_up(error, relay_answered, "the receiver did not come back");
                        self.state = State::Finished(Some(Err(e)));
                    }
                    return None;
                };
                *phase = ResumePhase::Call { issued: true };
                let end = self.end_items();
                let call = self
                    .resume_plan()
                    .map(|p| p.call_with_end(self.offer(), end.as_deref(), t));
                match call {
                    Some(Ok(req)) => return Some(Step::Receipt(req)),
                    Some(Err(e)) => self.fail_final(e),
                    None => self.fail_final(misuse("resume without a transfer id")),
                }
                None
            }
            ResumePhase::SleepDue(ms) => {
                *phase = ResumePhase::Sleeping;
                Some(Step::Sleep(ms))
            }
            _ => Some(Step::Failed(misuse("poll while waiting for an answer"))),
        }
    }

    /// The meeting agreed on wire byte `offset` (§12.3): the next upload goes to the
    /// transfer's channel from there, and the driver rewinds its source.
    pub(super) fn rewind(&mut self, offset: u64) -> Option<Step> {
        let (Some(plan), Some(rc)) = (self.resume_plan(), &self.cfg.receipt) else {
            self.fail_final(misuse("resume without a transfer"));
            return None;
        };
        let url = match plan.data_url() {
            Ok(url) => url,
            Err(e) => {
                self.fail_final(e);
                return None;
            }
        };
        // The consumer has the metadata: a resumed upload says only where it starts.
        let mut headers = auth_headers(self.cfg.token.as_deref());
        headers.push(channel_key(&rc.transfer));
        headers.push((X_PIPING, resume_value(offset)));
        self.headers = headers;
        self.resumes += 1;
        // the consumer now waits for this upload on the channel's data URL
        self.broke = false;
        // A consumer cut after the relay's success meets the receipt call: what the relay
        // delivered is not what the consumer holds, and this upload is not delivered yet, so
        // a failure of its own is told again (the withdrawal, the notice: §3.10, §12.3).
        self.relay_succeeded = false;
        self.delivered = false;
        self.state = State::Plan(url);
        Some(Step::ResumeFrom(offset))
    }

    pub(super) fn resume_plan(&self) -> Option<ResumePlan> {
        let c = &self.cfg;
        Some(ResumePlan {
            relay: c.relay.clone(),
            path: c.path.clone(),
            token: c.token.clone(),
            transfer: c.receipt.as_ref()?.transfer.clone(),
        })
    }

    pub(super) fn offer(&self) -> ResumeHello {
        ResumeHello::Offer {
            from: self.window.0,
            to: self.window.1,
        }
    }

    /// The consumer asked to resume at `offset` (§12.3): the same verdict as the consumer's.
    pub(super) fn on_resume_ask(&mut self, offset: u64) {
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
    pub(super) fn on_resume_answer(
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
    pub(super) fn resume_again(
        &mut self,
        sleep_ms: Option<f64>,
        report: Option<SendReport>,
        error: Error,
    ) {
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

    /// The replay window the adapter keeps once the rendezvous met (§12.3): none unless both
    /// sides resume ([`Producer::resumes`]). `reopen_head`: the source can be read again
    /// from any offset, and this many wire bytes can't (an encrypted stream's header; 0
    /// plain): only those are kept ([`ReplayWindow::seekable`]); else the last `size` bytes
    /// handed to the upload.
    pub fn replay_window<C: ByteChunk + Clone>(
        &self,
        reopen_head: Option<u64>,
        size: usize,
    ) -> Option<ReplayWindow<C>> {
        if !self.resumes() {
            return None;
        }
        Some(match reopen_head {
            Some(head) => ReplayWindow::seekable(head),
            None => ReplayWindow::new(size),
        })
    }

    /// True once the rendezvous said both sides resume (§12.3): the adapter keeps a replay
    /// window of what it hands to the upload.
    pub fn resumes(&self) -> bool {
        self.peer_resumes && self.cfg.resume_s.is_some() && self.cfg.receipt.is_some()
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
    pub(super) fn stall_call(&mut self) -> Option<Request> {
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
}
