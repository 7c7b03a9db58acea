//! Short codes natively (`PROTOCOL.md` §14): the reqwest adapter of the short-code core
//! ([`crate::client::code`]). It moves the exchange's bytes through the three pipes of the
//! code's channel and returns the data transfer's keys (the derived path, recipient and
//! identity), with which the caller sends or receives as usual (age-rt). Every protocol
//! decision is the core's; the SDK's `sendWithCode` / `receiveWithCode` are the same exchange
//! over `fetch` (`src/wasm/code.rs`).

use bytes::Bytes;

use super::http::{self, HeaderView, TimeoutAs, TEXT_LIMIT};
use super::stop::Stop;
use super::{Client, Target};
use crate::client::code::{
    busy_pipe, next_code, on_await_sender, on_get, on_post, on_post_log, Code, CodeKeys,
    CodeReceiver, CodeRelay, CodeSender, Offer, Pipe, Posted,
};
use crate::client::error::{Error, ErrorCode, Failure};
use crate::client::request::Request;
use crate::crypto::OsRandom;

/// Largest pipe message read (`c` carries the offer: a file name and a type).
const PIPE_LIMIT: usize = 64 * 1024;

/// Runs `exchange` within `req`'s `timeout_ms` (a relay that stops answering mid-exchange is
/// a network failure).
async fn timed<T>(
    req: &Request,
    exchange: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Error> {
    let what = req.describe();
    let r = match req.timeout_ms {
        Some(ms) => match tokio::time::timeout(http::duration_of_ms(ms), exchange).await {
            Ok(r) => r,
            Err(_) => Err(http::timeout_failure(ms, TimeoutAs::Network)),
        },
        None => exchange.await,
    };
    r.map_err(|f| f.into_error(ErrorCode::Network, &what))
}

/// Reads a body to its end, keeping at most `limit` bytes.
async fn body_bytes(
    mut resp: reqwest::Response,
    limit: usize,
    stop: &Stop,
) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| http::failure(e, stop))? {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(out)
}

impl Client {
    /// GET a pipe: its bytes.
    async fn get_pipe(&self, req: &Request, stop: &Stop) -> Result<Vec<u8>, Error> {
        let what = req.describe();
        let (status, body) = timed(req, async {
            let resp = http::build(&self.http, req)?
                .send()
                .await
                .map_err(|e| http::failure(e, stop))?;
            let status = resp.status().as_u16();
            Ok((status, body_bytes(resp, PIPE_LIMIT, stop).await?))
        })
        .await?;
        on_get(status, body, &what)
    }

    /// POST `body` on a pipe; `on_held` runs once the relay took it (`200`), then the status
    /// log is read to its end (the reader took the bytes). `Posted::Busy`: another writer
    /// holds the pipe.
    async fn post_pipe(
        &self,
        req: &Request,
        body: &[u8],
        stop: &Stop,
        on_held: impl FnOnce(),
    ) -> Result<Posted, Error> {
        let what = req.describe();
        let body = Bytes::copy_from_slice(body);
        let mut on_held = Some(on_held);
        let held = timed(req, async {
            let resp = http::build(&self.http, req)?
                .body(body)
                .send()
                .await
                .map_err(|e| http::failure(e, stop))?;
            let status = resp.status().as_u16();
            if status != 200 {
                let headers = resp.headers().clone();
                let text = http::read_text(resp)
                    .await
                    .map_err(|e| http::failure(e, stop))?;
                return Ok(Err((status, headers, text)));
            }
            if let Some(f) = on_held.take() {
                f();
            }
            Ok(Ok(body_bytes(resp, TEXT_LIMIT, stop).await?))
        })
        .await?;
        match held {
            Err((status, headers, text)) => on_post(status, &HeaderView(&headers), &text, &what),
            Ok(log) => on_post_log(&log, &what).map(|()| Posted::Held),
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
    /// `WRONG_CODE` (the receiver used another code, or someone else tried this one: nothing
    /// was sent; make a new code), `CONNECT_TIMEOUT`-like `NETWORK` timeouts of a step (30 s),
    /// `UNAUTHORIZED`, `FORBIDDEN`, `RELAY_ERROR` (e.g. 20 busy channels in a row), `NETWORK`.
    pub async fn code_send(
        &self,
        relay: &Target,
        offer: Offer,
        timeout: Option<std::time::Duration>,
        on_code: impl FnOnce(&Code),
    ) -> Result<CodeKeys, Error> {
        let relay = CodeRelay::new(relay.relay_base()?, relay.token.clone());
        let stop = Stop::new();
        let mut on_code = Some(on_code);
        // 1: hold a channel (another one while busy) until a receiver took A
        let mut busy = 0;
        let sender = loop {
            let code = next_code(busy, &mut OsRandom)?;
            let sender = CodeSender::new(code, offer.clone(), &mut OsRandom)?;
            let req = relay.post(code.channel(), Pipe::A, timeout.map(|t| t.as_secs_f64()))?;
            let held = self
                .post_pipe(&req, sender.message_a(), &stop, || {
                    if let Some(f) = on_code.take() {
                        f(&code);
                    }
                })
                .await?;
            match held {
                Posted::Held => break sender,
                Posted::Busy => busy += 1,
            }
        };
        let channel = sender.code().channel();
        // 3: B ‖ confirm_r → always c, then the verdict
        let b = self.get_pipe(&relay.get(channel, Pipe::B)?, &stop).await?;
        let reply = sender.on_b(&b);
        let posted = self
            .post_pipe(&relay.post(channel, Pipe::C, None)?, &reply.c, &stop, || {})
            .await;
        let keys = reply.result?;
        if posted? == Posted::Busy {
            return Err(busy_pipe(Pipe::C));
        }
        Ok(keys)
    }

    /// The receiver's half (`PROTOCOL.md` §14.2): the exchange on `code`'s channel. Returns
    /// the data transfer's keys (receive from [`CodeKeys::path`] with
    /// [`CodeKeys::identity`]) and the sender's sealed offer (name, size, type).
    ///
    /// # Errors
    ///
    /// `WRONG_CODE` for a malformed code (before any request), when no sender waits on its
    /// channel (used, expired or mistyped), or when the codes differ; `UNAUTHORIZED`,
    /// `FORBIDDEN`, `RELAY_ERROR`, `NETWORK`.
    pub async fn code_receive(
        &self,
        relay: &Target,
        code: &str,
    ) -> Result<(CodeKeys, Offer), Error> {
        let code = Code::parse(code)?;
        let relay = CodeRelay::new(relay.relay_base()?, relay.token.clone());
        let stop = Stop::new();
        let channel = code.channel();
        // 2: a sender on the channel? A → B ‖ confirm_r
        let req = relay.await_sender(channel)?;
        match http::text_request(&self.http, &req, None, &stop, TimeoutAs::Network).await {
            Ok(a) => on_await_sender(a.status, &a.body, &req.describe())?,
            Err(f) => return Err(f.into_error(ErrorCode::Network, &req.describe())),
        }
        let a = self.get_pipe(&relay.get(channel, Pipe::A)?, &stop).await?;
        let mut receiver = CodeReceiver::new(&code, &mut OsRandom)?;
        let b = receiver.on_a(&a)?;
        let posted = self
            .post_pipe(&relay.post(channel, Pipe::B, None)?, &b, &stop, || {})
            .await?;
        if posted == Posted::Busy {
            return Err(busy_pipe(Pipe::B));
        }
        // 4: confirm_s ‖ seal(offer)
        let c = self.get_pipe(&relay.get(channel, Pipe::C)?, &stop).await?;
        receiver.on_c(&c)
    }
}
