//! The streaming upload (`PROTOCOL.md` §3, §10): its status log, its end, and what a failed
//! attempt means — the fallback to a segmented upload, a probe, or a resume.

use super::*;

/// What a streaming attempt pulled from its source, kept for the fallback to a segmented
/// upload (§11.2 step 3, [`StreamFailure::replay`]): every chunk while at most
/// [`REPLAY_LIMIT`] bytes were pulled, nothing once more were (the attempt can't fall back).
#[derive(Debug)]
pub struct FallbackReplay<T> {
    chunks: Option<Vec<T>>,
    bytes: usize,
}

impl<T> Default for FallbackReplay<T> {
    fn default() -> Self {
        FallbackReplay {
            chunks: Some(Vec::new()),
            bytes: 0,
        }
    }
}

impl<T> FallbackReplay<T> {
    /// A chunk of `len` bytes was pulled.
    pub fn record(&mut self, len: usize, chunk: T) {
        self.bytes += len;
        if self.bytes > REPLAY_LIMIT {
            self.chunks = None;
        } else if let Some(c) = self.chunks.as_mut() {
            c.push(chunk);
        }
    }

    /// The chunks, if all were kept; nothing is kept after.
    pub fn take(&mut self) -> Option<Vec<T>> {
        self.chunks.take()
    }
}

impl<T: ByteChunk> Producer<T> {
    pub(super) fn stream_what(&self) -> String {
        format!(
            "streaming upload to {}",
            self.data_url.as_deref().unwrap_or("")
        )
    }

    /// A [`Step::Stream`] request was answered with a status other than 200, these headers
    /// and this body.
    pub fn on_stream_refused(&mut self, status: u16, headers: &dyn Headers, body: &str) {
        let what = self.stream_what();
        let e = classify_response(status, body, &what);
        match refused_as_busy(headers) {
            true => self.on_channel_busy(e),
            false => self.fail(e),
        }
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

    /// The streaming upload's response ended cleanly: the status log decides, unless the
    /// request body failed meanwhile. `source_error`: the source failed (§11.2 step 5) — that
    /// is the verdict, whatever the log says (a runtime may end an errored body as if it were
    /// complete). `stop`: the operation was stopped (the caller's abort, its timeout); a log
    /// that did not end in success then reports the stop, not a cut to resume.
    pub fn on_stream_end(&mut self, source_error: Option<Error>, stop: StopReason) {
        if let Some(e) = source_error {
            if matches!(self.state, State::Streaming { .. }) {
                self.source_failed = true;
                return self.fail_final(e);
            }
        }
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
                Err(_) if stop != StopReason::None => {
                    let e = Failure::stopped(stop, None).into_error(ErrorCode::Network, &what);
                    self.fail_final(e)
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
                    }
                    .hung_on_timeout(),
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
