//! Short codes natively (`PROTOCOL.md` §14): the reqwest driver of the short-code machines
//! ([`crate::client::code`]). It performs each request a machine asks for, feeds the answer
//! back, and returns the data transfer's keys (the derived path, recipient and identity),
//! with which the caller sends or receives as usual (age-rt). Every protocol decision is the
//! core's; the SDK's `sendWithCode` / `receiveWithCode` drive the same machines over `fetch`
//! (`src/wasm/code.rs`).

use std::future::Future;

use bytes::Bytes;
use tokio::time::Instant;

use super::http::{self, HeaderView};
use super::stop::Stop;
use super::{Client, Target};
use crate::client::code::{
    Code, CodeKeys, CodeMachine, CodeReceive, CodeRelay, CodeSend, CodeStep, Offer,
};
use crate::client::error::{Error, Failure};
use crate::client::request::Request;
use crate::crypto::OsRandom;

/// A request's `timeout_ms`, from its start through the end of its body, and what its
/// passing means.
#[derive(Clone)]
struct Deadline(Option<(Instant, Failure)>);

impl Deadline {
    fn of(req: &Request) -> Self {
        Deadline(req.timeout_ms.map(|ms| {
            (
                Instant::now() + http::duration_of_ms(ms),
                Failure::timed_out(req),
            )
        }))
    }

    /// `f` unless the deadline passes first ([`Failure::timed_out`]).
    async fn within<T>(
        &self,
        stop: &Stop,
        f: impl Future<Output = Result<T, reqwest::Error>>,
    ) -> Result<T, Failure> {
        let r = match &self.0 {
            Some((at, elapsed)) => match tokio::time::timeout_at(*at, f).await {
                Ok(r) => r,
                Err(_) => return Err(elapsed.clone()),
            },
            None => f.await,
        };
        r.map_err(|e| http::failure(e, stop))
    }
}

/// Reads a body to its end, keeping at most `limit` bytes.
async fn body_bytes(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(out)
}

impl Client {
    /// Sends `req` (with `body`, a complete body) and waits for its answer's head.
    async fn code_request(
        &self,
        req: &Request,
        body: Option<Vec<u8>>,
        deadline: &Deadline,
        stop: &Stop,
    ) -> Result<reqwest::Response, Failure> {
        let mut rb = http::build(&self.http, req)?;
        if let Some(b) = body {
            rb = rb.body(Bytes::from(b));
        }
        deadline.within(stop, rb.send()).await
    }

    /// Drives a short-code machine to its end: performs each request it asks for and feeds
    /// the answer back; `announce` shows the code.
    async fn drive<M: CodeMachine>(
        &self,
        mut m: M,
        mut announce: impl FnMut(&Code),
    ) -> Result<M::Done, Error> {
        let stop = Stop::new();
        let mut answer = None;
        loop {
            match m.poll() {
                CodeStep::Send { req, body } => {
                    let deadline = Deadline::of(&req);
                    match self.code_request(&req, body, &deadline, &stop).await {
                        Ok(resp) => {
                            m.on_head(resp.status().as_u16(), &HeaderView(resp.headers()));
                            answer = Some((resp, deadline));
                        }
                        Err(f) => m.on_failure(f),
                    }
                }
                CodeStep::Announce(code) => announce(&code),
                CodeStep::ReadBody { limit } => match answer.take() {
                    Some((resp, deadline)) => {
                        match deadline.within(&stop, body_bytes(resp, limit)).await {
                            Ok(body) => m.on_body(body),
                            Err(f) => m.on_failure(f),
                        }
                    }
                    None => m.on_failure(Failure::coded(Error::usage("no answer to read"))),
                },
                CodeStep::Done(done) => return Ok(done),
                CodeStep::Failed(e) => return Err(e),
            }
        }
    }

    /// The sender's half of a handoff by short code (`PROTOCOL.md` §14.2): holds a free
    /// channel, calls `on_code` with the code to read aloud once it is the sender's, waits
    /// (up to `timeout`, `None`: until dropped) for a receiver, and runs the exchange. Returns
    /// the data transfer's keys: send to [`CodeKeys::path`], encrypted (age-rt) to
    /// [`CodeKeys::recipient`]. `relay` names the relay and token; its `path` is not used.
    ///
    /// # Errors
    ///
    /// `WRONG_CODE` (the receiver used another code, someone else tried this one, or the
    /// receiver took more than 30 s for a later step: nothing was sent; make a new code),
    /// `CONNECT_TIMEOUT` (no receiver within `timeout`), `RELAY_BUSY` (20 busy channels in a
    /// row, or a per-address limit of the relay, PROTOCOL.md §14.5), `UNAUTHORIZED`,
    /// `FORBIDDEN` (on a relay in auth mode: a code token is needed, §6), `NETWORK`.
    pub async fn code_send(
        &self,
        relay: &Target,
        offer: Offer,
        timeout: Option<std::time::Duration>,
        on_code: impl FnOnce(&Code),
    ) -> Result<CodeKeys, Error> {
        let relay = CodeRelay::new(relay.relay_base()?, relay.token.clone());
        let timeout_s = timeout.map(|t| t.as_secs_f64());
        let sender = CodeSend::new(relay, offer, timeout_s, Box::new(OsRandom));
        let mut on_code = Some(on_code);
        self.drive(sender, |code| {
            if let Some(f) = on_code.take() {
                f(code);
            }
        })
        .await
    }

    /// The receiver's half (`PROTOCOL.md` §14.2): the exchange on `code`'s channel. Returns
    /// the data transfer's keys (receive from [`CodeKeys::path`] with
    /// [`CodeKeys::identity`]) and the sender's sealed offer (name, size, type).
    ///
    /// # Errors
    ///
    /// `WRONG_CODE` for a malformed code (before any request), when no sender waits on its
    /// channel (used, expired or mistyped), when the codes differ, or when the sender took
    /// more than 30 s for a step; `RELAY_BUSY` (a per-address limit of the relay, §14.5),
    /// `UNAUTHORIZED`, `FORBIDDEN` (a code token is needed, §6), `RELAY_ERROR`, `NETWORK`.
    pub async fn code_receive(
        &self,
        relay: &Target,
        code: &str,
    ) -> Result<(CodeKeys, Offer), Error> {
        let code = Code::parse(code)?;
        let relay = CodeRelay::new(relay.relay_base()?, relay.token.clone());
        let receiver = CodeReceive::new(relay, code, Box::new(OsRandom));
        self.drive(receiver, |_| {}).await
    }
}
