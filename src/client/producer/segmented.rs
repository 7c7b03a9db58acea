//! The segmented upload (`PROTOCOL.md` §4): parts cut from the source with bounded memory, the
//! part loop and its retries, and what the adapter feeds it.

use super::*;

pub(super) struct Current<T> {
    pub(super) body: Vec<T>,
    pub(super) is_final: bool,
    pub(super) tries: u32,
    pub(super) request: Request,
    pub(super) k: u64,
}

pub(super) struct Segmented<T> {
    pub(super) data_url: String,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) cutter: Option<PartCutter<T>>,
    pub(super) tail: VecDeque<Vec<T>>,
    pub(super) upload_id: Option<String>,
    pub(super) k: u64,
    pub(super) current: Option<Current<T>>,
    /// After a fallback from streaming: the origin to remember as "can't stream" on success.
    pub(super) fell_back_from: Option<String>,
}

impl<T: ByteChunk> Segmented<T> {
    pub(super) fn new(
        data_url: String,
        headers: Vec<(&'static str, String)>,
        part_size: usize,
    ) -> Self {
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

    pub(super) fn what(&self, k: u64) -> String {
        format!("segmented upload part {k} to {}", self.data_url)
    }

    /// The `DELETE` that gives upload `id` up (§4 "Abandoning"): on the upload's channel, if
    /// any, with the token.
    pub(super) fn abandonment(&self, id: &str) -> Request {
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
    pub(super) fn next_part(&mut self) -> Option<&Current<T>> {
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

    pub(super) fn source_end(&mut self) {
        if let Some(c) = self.cutter.take() {
            self.tail.extend(c.finish());
        }
    }

    /// The relay's answer to the current part.
    pub(super) fn on_response(
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
    pub(super) fn on_failure(&mut self, f: Failure) -> Result<f64, Error> {
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
pub(super) enum SegPhase {
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

/// The segmented loop's next step: the next part, or more source, or a retry's pause.
pub(super) fn poll<T: ByteChunk>(seg: &mut Segmented<T>, phase: &mut SegPhase) -> Step {
    match *phase {
        SegPhase::Ready => match seg.next_part() {
            Some(cur) => {
                let req = cur.request.clone();
                *phase = SegPhase::AwaitPart;
                Step::Part(req)
            }
            None => {
                *phase = SegPhase::AwaitSource;
                Step::NeedSource
            }
        },
        SegPhase::SleepDue(ms) => {
            *phase = SegPhase::Sleeping;
            Step::Sleep(ms)
        }
        _ => Step::Failed(misuse("poll while waiting for an answer")),
    }
}

impl<T: ByteChunk> Producer<T> {
    pub(super) fn with_source(&mut self, f: impl FnOnce(&mut Segmented<T>)) {
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
}
