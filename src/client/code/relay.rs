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

/// The answer's head to a POST on a pipe (`body`: the error body when not 200).
pub fn on_post(
    status: u16,
    headers: &dyn Headers,
    body: &str,
    what: &str,
) -> Result<Posted, Error> {
    if status == 200 {
        return Ok(Posted::Held);
    }
    let code = headers.get(ERROR_CODE).and_then(|c| RefusalCode::parse(&c));
    if status == 400 && code == Some(RefusalCode::AnotherSender) {
        return Ok(Posted::Busy);
    }
    Err(classify_response(status, body, what))
}

/// The end of a POST's status log: `Ok` once the reader took the bytes.
pub fn on_post_log(log: &[u8], what: &str) -> Result<(), Error> {
    let mut s = StatusLog::new();
    s.push(log);
    s.finish(what).map(|_| ())
}

/// The answer to [`CodeRelay::await_sender`]: `408` → `WRONG_CODE` (no sender waits).
pub fn on_await_sender(status: u16, body: &str, what: &str) -> Result<(), Error> {
    match status {
        200 => Ok(()),
        408 => Err(wrong_code(
            "no sender is waiting for this code (it was used already, has expired, or was mistyped)",
        )),
        _ => Err(classify_response(status, body, what)),
    }
}

/// The answer to a GET on a pipe: its bytes.
pub fn on_get(status: u16, body: Vec<u8>, what: &str) -> Result<Vec<u8>, Error> {
    if status == 200 {
        Ok(body)
    } else {
        Err(classify_response(
            status,
            &String::from_utf8_lossy(&body),
            what,
        ))
    }
}
