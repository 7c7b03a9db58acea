//! The answers the adapter hands back to the producer (`PROTOCOL.md` §4, §5, §11.2): to the
//! rendezvous, a part or a probe ([`Producer::on_response`]), a request that failed below HTTP
//! ([`Producer::on_failure`]), and the end of a retry wait ([`Producer::on_slept`]).

use super::*;

impl<T: ByteChunk> Producer<T> {
    /// The answer to a [`Step::Rendezvous`], [`Step::Part`] or [`Step::Probe`] request.
    pub fn on_response(&mut self, status: u16, headers: &dyn Headers, body: &str) {
        let what = self.stream_what();
        match &mut self.state {
            State::AwaitRendezvous(r) => match r.on_response(status, body) {
                Ok(None) => {} // the wait goes on: the next call (§11.2)
                Ok(Some(url)) => {
                    let peer = peer_hello(headers);
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
                let busy = refused_as_busy(headers);
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
                    Err(e) if busy => self.on_channel_busy(e),
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
                    relay_answered: false,
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
}
