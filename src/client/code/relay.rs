//! The requests of the exchange on a relay (§14.2) and how to read their answers.

use super::channel::{pipe_path, Pipe};
use super::{wrong_code, CODE_STEP_S, SENDER_WAIT_S};
use crate::client::error::{classify_response, Error};
use crate::client::rendezvous::auth_headers;
use crate::client::request::{Headers, Request};
use crate::client::status::StatusLog;
use crate::client::urls::{ConnectMode, RelayBase};
use crate::protocol::control::Code as RefusalCode;
use crate::protocol::headers::ERROR_CODE;

/// The requests of the exchange on a relay (with the caller's token).
#[derive(Debug, Clone)]
pub struct CodeRelay {
    base: RelayBase,
    token: Option<String>,
}

/// What a POST on a pipe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// `200`: the pipe is ours; its status log follows.
    Held,
    /// `400 another-sender`: someone else writes on this pipe.
    Busy,
}

impl CodeRelay {
    pub fn new(base: RelayBase, token: Option<String>) -> Self {
        CodeRelay { base, token }
    }

    /// `POST /code/v1/N/{pipe}`; the adapter sends the bytes as a complete body. The sender's
    /// `a` waits as long as the caller's `timeout` (`None`: until cancelled); `b` and `c`
    /// [`CODE_STEP_S`].
    pub fn post(&self, channel: u16, pipe: Pipe, timeout_s: Option<f64>) -> Result<Request, Error> {
        let mut r = Request::post(
            self.base.data_url(&pipe_path(channel, pipe))?,
            auth_headers(self.token.as_deref()),
        );
        r.timeout_ms = match pipe {
            Pipe::A => timeout_s.map(|t| t * 1000.0),
            Pipe::B | Pipe::C => Some(CODE_STEP_S * 1000.0),
        };
        Ok(r)
    }

    /// `GET /code/v1/N/{pipe}`, waiting at most [`CODE_STEP_S`].
    pub fn get(&self, channel: u16, pipe: Pipe) -> Result<Request, Error> {
        let mut r = Request::get(
            self.base.data_url(&pipe_path(channel, pipe))?,
            auth_headers(self.token.as_deref()),
        );
        r.timeout_ms = Some(CODE_STEP_S * 1000.0);
        Ok(r)
    }

    /// The receiver's first question: is a sender waiting on the channel (`await-writer`,
    /// [`SENDER_WAIT_S`])?
    pub fn await_sender(&self, channel: u16) -> Result<Request, Error> {
        let mut r = Request::get(
            self.base.connect_url(
                &pipe_path(channel, Pipe::A),
                ConnectMode::AwaitWriter,
                Some(SENDER_WAIT_S),
            )?,
            auth_headers(self.token.as_deref()),
        );
        // the relay answers 408 after SENDER_WAIT_S; the client's own limit is a backstop
        r.timeout_ms = Some((SENDER_WAIT_S + 5.0) * 1000.0);
        Ok(r)
    }
}

/// The whole answer to one request of the exchange: its status, the relay's refusal code
/// (`X-Httpipe-Error`, §3.5) and its body, at most 64 KiB.
#[derive(Debug)]
pub struct Answer {
    /// The request, for messages (`"POST http://relay/code/v1/7/a"`).
    pub what: String,
    pub status: u16,
    pub refusal: Option<RefusalCode>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The answer's head; its body follows.
    pub fn head(what: String, status: u16, headers: &dyn Headers) -> Answer {
        Answer {
            what,
            status,
            refusal: headers.get(ERROR_CODE).and_then(|c| RefusalCode::parse(&c)),
            body: Vec::new(),
        }
    }

    /// Whether the relay holds a POST (`200`: the pipe is ours and its status log follows).
    pub fn held(&self) -> bool {
        self.status == 200
    }

    /// A POST on a pipe: [`Posted::Held`] once its status log says the reader took the
    /// bytes, [`Posted::Busy`] for `400 another-sender`.
    pub fn posted(self) -> Result<Posted, Error> {
        if self.held() {
            let mut log = StatusLog::new();
            log.push(&self.body);
            return log.finish(&self.what).map(|_| Posted::Held);
        }
        if self.status == 400 && self.refusal == Some(RefusalCode::AnotherSender) {
            return Ok(Posted::Busy);
        }
        Err(self.refused())
    }

    /// A GET on a pipe: its bytes. `no-sender` (pipe `a`, §14.5 rule 2): the sender that was
    /// there a moment ago is gone, or someone else took its message first: `WRONG_CODE`.
    pub fn got(self) -> Result<Vec<u8>, Error> {
        match self.status {
            200 => Ok(self.body),
            _ if self.refusal == Some(RefusalCode::NoSender) => Err(wrong_code(
                "no sender is waiting for this code any more (someone else took its first \
                 message, or the sender left)",
            )),
            _ => Err(self.refused()),
        }
    }

    /// [`CodeRelay::await_sender`]: `408` → `WRONG_CODE` (no sender waits).
    pub fn sender_waits(self) -> Result<(), Error> {
        match self.status {
            200 => Ok(()),
            408 => Err(wrong_code(
                "no sender is waiting for this code (it was used already, has expired, or was mistyped)",
            )),
            _ => Err(self.refused()),
        }
    }

    fn refused(&self) -> Error {
        classify_response(
            self.status,
            &String::from_utf8_lossy(&self.body),
            &self.what,
        )
    }
}
