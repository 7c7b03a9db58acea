//! The consumer (`receive`) as a sans-IO state machine (`PROTOCOL.md` §3.3, §5, §11):
//! rendezvous, the `GET`, what the response head says, and what a broken body means.
//!
//! ```text
//! Start ─rendezvous?─▶ Rendezvous ─data URL─▶ Get ─200─▶ Stream(Incoming) ─▶ BodyCheck
//!                                              └─other─▶ ErrorBody ─▶ Failed
//! ```

use super::disposition;
use super::error::{classify_response, withdrawn, Error, ErrorCode, Failure};
use super::presence::{PresenceChannel, PresenceCheck};
use super::receipt::{Outcome, ReceiptPlan};
use super::rendezvous::{auth_headers, peer_hello, Begin, Rendezvous};
use super::request::{Headers, LastWords, Request};
use super::resume::ResumePlan;
use super::urls::{ConnectMode, RelayBase};
use crate::protocol::headers::{
    declared_size, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE, X_PIPING,
};
use crate::protocol::hello::{consumer_hello, FAILURE_NOTICE_WAIT_MS};

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
    /// The producer did not encrypt (`plain`, §12.1): a receipt commits to the wire bytes.
    peer_plain: bool,
    /// The producer's transfer id, when both sides resume (§12.3).
    resume_transfer: Option<String>,
    /// The producer's transfer id, when it keeps presence (§12.5).
    presence_transfer: Option<String>,
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
            peer_plain: false,
            resume_transfer: None,
            presence_transfer: None,
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
                            let r = (*r).with_hello(consumer_hello(
                                c.receipt,
                                c.encrypted,
                                c.resume_s.is_some(),
                            ));
                            self.state = State::AwaitRendezvous(r);
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
                State::AwaitRendezvous(r) => {
                    return match r.issue() {
                        Some(req) => Step::Rendezvous(req),
                        None => Step::Failed(misuse("poll while waiting for an answer")),
                    }
                }
                State::AwaitHead { .. } | State::AwaitErrorBody { .. } => {
                    return Step::Failed(misuse("poll while waiting for an answer"))
                }
            }
        }
    }

    /// The answer to [`Step::Rendezvous`].
    pub fn on_response(&mut self, status: u16, headers: &dyn Headers, body: &str) {
        let answer = match &mut self.state {
            State::AwaitRendezvous(r) => r.on_response(status, body),
            _ => Err(misuse("an answer nobody asked for")),
        };
        match answer {
            Ok(None) => {} // the wait goes on: the next call (§11.2)
            Ok(Some(url)) => {
                self.on_rendezvous_head(status, headers);
                self.data_url = Some(url.clone());
                self.state = State::Get(url);
            }
            Err(e) => self.state = State::Failed(Some(e)),
        }
    }

    /// The head of the [`Step::Rendezvous`] answer, before its body is read: a `200` met a
    /// producer, whose hello (§12.1) is this consumer's from now on — so that a consumer that
    /// fails while the body is read still tells that producer it left (§12.5,
    /// [`Consumer::left_notice`]). [`Consumer::on_response`] does the same.
    pub fn on_rendezvous_head(&mut self, status: u16, headers: &dyn Headers) {
        if status != 200 || !matches!(self.state, State::AwaitRendezvous(_)) {
            return;
        }
        let peer = peer_hello(headers);
        if self.cfg.receipt && peer.receipt {
            self.receipt_transfer = peer.transfer.clone();
            self.peer_attests = peer.attests;
            self.peer_plain = peer.plain;
        }
        if peer.presence {
            self.presence_transfer = peer.transfer.clone();
        }
        if self.cfg.resume_s.is_some() && peer.resume {
            self.resume_transfer = peer.transfer;
        }
    }

    /// The checks of the producer's presence while the [`Step::Get`] waits for its head
    /// (§12.5), from `since_ms` (driver's clock), when the producer keeps presence.
    pub fn presence_check(&self, since_ms: f64) -> Option<PresenceCheck> {
        PresenceCheck::new(&self.presence_channel()?, since_ms).ok()
    }

    /// [`Consumer::left_notice`] of a consumer that goes away before its stream started without
    /// a verdict of its own (a page closed, a dropped future, Ctrl-C): `ABORTED`.
    pub fn abandon_notice(&self) -> LastWords {
        self.left_notice(ErrorCode::Aborted)
    }

    /// The consumer failed with an error of `code` (its [`Step::Failed`], or `ABORTED` for a
    /// page that goes away) after its rendezvous met a producer that keeps presence and before
    /// its stream started: the word that tells that producer, which may wait for it on the
    /// stream path (§12.5) — its negative receipt on the presence channel — for the adapter to
    /// make before it reports the error. None after `TRUNCATED` (the producer vanished or
    /// withdrew: nobody waits).
    pub fn left_notice(&self, code: ErrorCode) -> LastWords {
        let started = matches!(self.state, State::Streaming(_));
        let call = match self.presence_channel() {
            Some(channel) if !started && code != ErrorCode::Truncated => {
                channel.left_notice(Outcome::of_error(code)).ok()
            }
            _ => None,
        };
        LastWords {
            calls: call.into_iter().collect(),
            wait_ms: FAILURE_NOTICE_WAIT_MS,
        }
    }

    /// The producer's presence channel, when it keeps presence (§12.5).
    fn presence_channel(&self) -> Option<PresenceChannel> {
        Some(PresenceChannel {
            relay: self.cfg.relay.clone(),
            path: self.cfg.path.clone(),
            token: self.cfg.token.clone(),
            transfer: self.presence_transfer.clone()?,
        })
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
            plain: self.peer_plain,
        })
    }

    /// The consumer's side of resume (§12.3), when both sides said they resume (and the
    /// stream began: it has a data URL).
    pub fn resumer(&self) -> Option<Resumer> {
        self.data_url.as_ref()?;
        let plan = ResumePlan {
            relay: self.cfg.relay.clone(),
            path: self.cfg.path.clone(),
            token: self.cfg.token.clone(),
            transfer: self.resume_transfer.clone()?,
        };
        Some(Resumer::new(plan, self.cfg.resume_s?))
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
        if let Some(e) = withdrawn(headers, &what, false) {
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
        // §11.3 step 5: a consumer without keys asks what the stream's start is
        let check = BodyCheck::new(what, length, !encrypted && !self.cfg.ciphertext)
            .resuming_at_bytes(self.peer_plain);
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

mod body;
mod receipt;
mod resumer;
#[cfg(test)]
mod tests;

pub use body::BodyCheck;
pub(crate) use body::ConsumerBody;
pub(crate) use receipt::{ConsumerReceipt, LastWord, ReceiptWait, Seen};
pub use resumer::{ResumeStep, Resumer};

fn misuse(what: &str) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!("internal error in the SDK's consumer: {what}"),
    )
}
