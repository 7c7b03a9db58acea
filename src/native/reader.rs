//! The consumer's stream of [`super::Client::receive`] in the native driver: the body read
//! through the core's checks ([`ConsumerBody`]), decrypted on the blocking pool, resumed after a
//! break (§12.3), watched for a stall (§12.4), and the receipt delivered before the end or an
//! error is reported (§12.2). The native driver's own edge: in JavaScript the same is the
//! `ReadableStream` that `wasm/receive.rs` builds.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::{poll_fn, BoxFuture};
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::task::JoinHandle;

use super::chunks::Meter;
use super::http::{self, failure, text_request, HeaderView};
use super::io_error;
use super::receipt::{deliver, send_last_word};
use super::receive::get_head;
use super::stall::{StallEvent, StallWatch};
use super::stop::Stop;
use crate::client::consumer::{
    BodyCheck, ConsumerBody, ConsumerReceipt, ResumeStep, Resumer, Seen,
};
use crate::client::error::{Error, ErrorCode};
use crate::client::request::Headers;
use crate::client::stall::StallStep;
use crate::crypto::Decryptor;

type DecryptJobOutput = (Decryptor, Vec<u8>, Result<(), crate::crypto::Error>);
type DecryptJob = JoinHandle<DecryptJobOutput>;

/// The consumer's stream: only authenticated plaintext when decrypting; a cut stream ends in
/// `TRUNCATED`, never in a clean end.
///
/// Read it with [`next_chunk`](Reader::next_chunk) (zero-copy `Bytes` as they arrive) or as a
/// [`tokio::io::AsyncRead`], whose errors carry the [`Error`] (see [`super::error_of`]).
/// Dropping it disconnects: the producer gets `PEER_DISCONNECTED`.
///
/// # Errors
///
/// `TRUNCATED` (the producer's stream was cut, or the relay went away, or — with automatic
/// receipts — it ended cleanly but the producer did not state that end, §12.2), `WRONG_KEY` (the keys
/// don't open the header: before any plaintext), `DECRYPT_FAILED` (tampered or malformed
/// ciphertext). After an error every call returns it again.
pub struct Reader {
    pub(super) body: Body,
    /// The body's check, wire bytes held and stall clock (the core's).
    pub(super) core: ConsumerBody,
    pub(super) dec: Option<Decryptor>,
    /// A passphrase: the header's scrypt may still run (on the blocking pool).
    pub(super) slow_header: bool,
    pub(super) job: Option<DecryptJob>,
    pub(super) leftover: Bytes,
    pub(super) error: Option<Error>,
    pub(super) done: bool,
    pub(super) meter: Arc<Meter>,
    pub(super) http: reqwest::Client,
    /// The core's clock (resume times).
    pub(super) clock: Instant,
    /// Resume after a break (§12.3), when both sides said so.
    pub(super) resumer: Option<Resumer>,
    /// A break being resumed: the resumed body, its check and offset.
    pub(super) resuming: Option<Resuming>,
    /// The receipt: what was released, which receipt goes when (the core's).
    pub(super) receipt: ConsumerReceipt,
    /// The receipt on its way before the end or an error is reported (its output: an error
    /// instead of the end, as the core's `ReceiptWait` says).
    pub(super) last_word: Option<BoxFuture<'static, Option<Error>>>,
    /// The timer and call of the core's stall watch of the body.
    pub(super) stall: StallWatch,
}

pub(super) type Body = BoxStream<'static, reqwest::Result<Bytes>>;
/// The resumer back, with the resumed body, its check and its wire offset.
type Resuming = BoxFuture<'static, (Resumer, Result<(Body, BodyCheck, u64), Error>)>;

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("bytes", &self.core.received())
            .field("encrypted", &self.dec.is_some())
            .field("done", &self.done)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Reader {
    /// The stream failed with `e`: the connection is dropped and the receipt the core says
    /// (`failed`, or `cancelled` after an abort) goes out before `e` is reported, for as long
    /// as the core says to wait for it.
    fn fail(&mut self, cx: &mut Context<'_>, e: Error) -> Poll<Result<Option<Bytes>, Error>> {
        self.error = Some(e.clone());
        self.body = futures_util::stream::empty().boxed();
        let word = self.receipt.on_error(e.code, self.now_ms());
        if let Some(mut wait) = word.and_then(|w| send_last_word(&self.http, w, self.clock)) {
            if wait.as_mut().poll(cx).is_pending() {
                self.last_word = Some(wait);
                return Poll::Pending;
            }
        }
        Poll::Ready(Err(e))
    }

    fn plaintext(&mut self, out: Vec<u8>) -> Option<Bytes> {
        if out.is_empty() {
            return None;
        }
        self.slow_header = false;
        self.meter.add(out.len());
        self.receipt.add(Seen::Released, &out);
        Some(Bytes::from(out))
    }

    /// The body broke with `f`: resume when the core says so, else its error.
    fn on_break(&mut self, f: crate::client::error::Failure) -> Option<Error> {
        let now = self.now_ms();
        let mut resumer = self.resumer.take();
        let step = self
            .core
            .on_break(f, resumer.as_mut(), self.dec.as_mut(), now);
        match resumer {
            Some(r) => self.start_resume(r, step),
            None => match step {
                ResumeStep::Failed(e) => Some(e),
                _ => None,
            },
        }
    }

    /// Stops reading the body and resumes from `step` (§12.3); its failure at once.
    fn start_resume(&mut self, mut resumer: Resumer, step: ResumeStep) -> Option<Error> {
        if let ResumeStep::Failed(e) = step {
            self.resumer = Some(resumer);
            return Some(e);
        }
        self.meter.set_resume(true, resumer.resumes);
        let (http, clock) = (self.http.clone(), self.clock);
        self.body = futures_util::stream::empty().boxed();
        self.resuming = Some(
            async move {
                let r = resume(&http, &mut resumer, step, clock).await;
                (resumer, r)
            }
            .boxed(),
        );
        None
    }

    /// The body has nothing now: asks the core's stall watch. True when it made the stall
    /// call (poll again: the answer decides); false: wait for the body or the timer.
    fn watch_stall(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(resumer) = self.resumer.as_mut() else {
            return false;
        };
        let mut ask = !self.core.waiting() || !self.stall.armed();
        loop {
            if !ask && self.stall.poll_event(cx).is_pending() {
                return false;
            }
            ask = false;
            let now = self.clock.elapsed().as_secs_f64() * 1000.0;
            match self.core.poll_stall(resumer, self.dec.as_mut(), now) {
                StallStep::Off => return false,
                StallStep::WakeAt(t) => self.stall.wake_at(t),
                StallStep::Call(req) => {
                    self.stall.call(&self.http, req, &Stop::new());
                    return true;
                }
            }
        }
    }

    /// The stall call's answer: read on, or resume as the core says; an error when that
    /// can't be.
    fn on_stall_answer(&mut self, answer: Option<http::Answer>) -> Option<Error> {
        let mut resumer = self.resumer.take()?;
        let view = answer.as_ref().map(|a| (a.status, HeaderView(&a.headers)));
        let answer = view.as_ref().map(|(s, h)| (*s, h as &dyn Headers));
        let now = self.now_ms();
        let step = self
            .core
            .on_stall_answer(&mut resumer, answer, self.dec.as_mut(), now);
        match step {
            Some(step) => self.start_resume(resumer, step),
            None => {
                self.resumer = Some(resumer);
                None
            }
        }
    }

    fn now_ms(&self) -> f64 {
        self.clock.elapsed().as_secs_f64() * 1000.0
    }

    /// The next piece of plaintext, `None` at the (verified) end.
    pub fn poll_next_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Error>> {
        loop {
            if let Some(call) = self.last_word.as_mut() {
                let verdict = ready!(call.as_mut().poll(cx));
                self.last_word = None;
                if let Some(e) = verdict {
                    self.error = Some(e);
                }
            }
            if let Some(e) = &self.error {
                return Poll::Ready(Err(e.clone()));
            }
            if let Some(r) = self.resuming.as_mut() {
                let (resumer, resumed) = ready!(r.as_mut().poll(cx));
                self.resuming = None;
                let r = self.on_resumed(resumer, resumed);
                if let Some(p) = self.settle(cx, r) {
                    return p;
                }
                continue;
            }
            if !self.leftover.is_empty() {
                return Poll::Ready(Ok(Some(std::mem::take(&mut self.leftover))));
            }
            if self.done {
                return Poll::Ready(Ok(None));
            }
            if let Some(job) = self.job.as_mut() {
                let joined = ready!(Pin::new(job).poll(cx));
                self.job = None;
                let r = self.on_job(joined);
                if let Some(p) = self.settle(cx, r) {
                    return p;
                }
                continue;
            }
            if self.stall.calling() {
                // A stall call is out: nothing from the body until its answer (§12.4).
                if let StallEvent::Answered(a) = ready!(self.stall.poll_event(cx)) {
                    if let Some(e) = self.on_stall_answer(a) {
                        return self.fail(cx, e);
                    }
                }
                continue;
            }
            let Poll::Ready(item) = self.body.poll_next_unpin(cx) else {
                if self.watch_stall(cx) {
                    continue;
                }
                return Poll::Pending;
            };
            let r = match item {
                Some(Ok(chunk)) => self.on_chunk(chunk),
                Some(Err(e)) => match self.on_break(failure(e, &Stop::new())) {
                    Some(e) => Err(e),
                    None => Ok(None),
                },
                None => self.on_end(),
            };
            if let Some(p) = self.settle(cx, r) {
                return p;
            }
        }
    }

    /// What a step of [`Reader::poll_next_chunk`] gave: a chunk to hand out, nothing (read
    /// on: `None`), or the stream's error.
    fn settle(
        &mut self,
        cx: &mut Context<'_>,
        r: Result<Option<Bytes>, Error>,
    ) -> Option<Poll<Result<Option<Bytes>, Error>>> {
        match r {
            Ok(Some(b)) => Some(Poll::Ready(Ok(Some(b)))),
            Ok(None) => None,
            Err(e) => Some(self.fail(cx, e)),
        }
    }

    /// A resume ended (§12.3): read on from the resumed body, or its error.
    fn on_resumed(
        &mut self,
        resumer: Resumer,
        resumed: Result<(Body, BodyCheck, u64), Error>,
    ) -> Result<Option<Bytes>, Error> {
        self.meter.set_resume(false, resumer.resumes);
        self.resumer = Some(resumer);
        let (body, check, at) = resumed?;
        self.body = body;
        self.core.on_resumed(check, at);
        Ok(None)
    }

    /// A decryption on the blocking pool ended.
    fn on_job(
        &mut self,
        joined: Result<DecryptJobOutput, tokio::task::JoinError>,
    ) -> Result<Option<Bytes>, Error> {
        let (dec, out, r) = joined.map_err(|e| {
            Error::new(
                ErrorCode::Unsupported,
                format!("a worker thread failed: {e}"),
            )
        })?;
        self.dec = Some(dec);
        r?;
        Ok(self.plaintext(out))
    }

    /// A chunk of the body: handed out as it is (plain), or decrypted (only authenticated
    /// plaintext comes out; until the first plaintext on the blocking pool, where a
    /// passphrase's scrypt may run).
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Option<Bytes>, Error> {
        self.core.on_chunk(&chunk)?;
        self.receipt.add(Seen::Arrived, &chunk);
        let slow = self.slow_header;
        match self.dec.take() {
            None => {
                if chunk.is_empty() {
                    return Ok(None);
                }
                self.meter.add(chunk.len());
                self.receipt.add(Seen::Released, &chunk);
                Ok(Some(chunk))
            }
            Some(mut dec) if slow => {
                self.job = Some(tokio::task::spawn_blocking(move || {
                    let mut out = Vec::with_capacity(chunk.len());
                    let r = dec.update(&chunk, &mut out);
                    (dec, out, r)
                }));
                Ok(None)
            }
            Some(mut dec) => {
                let mut out = Vec::with_capacity(chunk.len());
                let r = dec.update(&chunk, &mut out);
                self.dec = Some(dec);
                r?;
                Ok(self.plaintext(out))
            }
        }
    }

    /// The body's end: verified (the core's check, the decryptor's final chunk), then the
    /// last plaintext; the receipt the core says goes out before the end is reported.
    fn on_end(&mut self) -> Result<Option<Bytes>, Error> {
        self.core.on_end()?;
        self.done = true;
        let mut out = Vec::new();
        if let Some(dec) = self.dec.as_mut() {
            dec.finish(&mut out)?;
        }
        let last = self.plaintext(out);
        self.meter.finish();
        let word = self.receipt.on_end(self.dec.as_ref(), self.now_ms());
        self.last_word = word.and_then(|w| send_last_word(&self.http, w, self.clock));
        Ok(last)
    }

    /// The next piece of plaintext as it arrives; `Ok(None)` only at the verified clean end.
    ///
    /// # Errors
    ///
    /// `TRUNCATED`, `WRONG_KEY`, `DECRYPT_FAILED` (see [`Reader`]).
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        poll_fn(|cx| self.poll_next_chunk(cx)).await
    }

    /// Bytes received from the relay so far (ciphertext when decrypting), over every resume.
    pub fn wire_bytes(&self) -> u64 {
        self.core.received()
    }

    /// True once the stream was read to its verified clean end.
    pub fn is_finished(&self) -> bool {
        self.done && self.error.is_none() && self.leftover.is_empty()
    }

    /// True when the producer waits for this consumer's receipt (§12.1).
    pub fn sends_receipt(&self) -> bool {
        self.receipt.wanted()
    }

    /// Breaks resumed after so far (§12.3).
    pub fn resumes(&self) -> u32 {
        self.resumer.as_ref().map_or(0, |r| r.resumes)
    }

    /// [`ReceiptMode::Manual`](super::ReceiptMode::Manual): tells the producer that everything arrived (and was saved),
    /// after the stream was read to its clean end (§12.2). `Ok` at once when the producer
    /// waits for no receipt, or one was sent.
    ///
    /// # Errors
    ///
    /// `UNSUPPORTED` before the end; `TRUNCATED` when the producer promised to state its end
    /// and did not state this one (§12.2: the stream was cut, though it ended cleanly; discard
    /// the data); otherwise `UNCONFIRMED` when the producer did not come for it (gone?),
    /// `NETWORK` and the relay's refusals, and the data is the caller's either way.
    pub async fn confirm(&mut self) -> Result<(), Error> {
        if self.error.is_some() || !self.leftover.is_empty() {
            return Err(Error::usage(
                "confirm() comes after the stream was read to its end",
            ));
        }
        match self.receipt.confirm(self.dec.as_ref(), self.now_ms())? {
            Some(d) => deliver(&self.http, d, self.clock).await,
            None => Ok(()),
        }
    }

    /// Stops reading before the end: the connection is dropped and a producer that waits for
    /// a receipt gets the `cancelled` one (§12.2), so it fails at once (`PEER_DISCONNECTED`)
    /// instead of waiting to resume. Waits at most [`FAILURE_NOTICE_WAIT_MS`](crate::protocol::hello::FAILURE_NOTICE_WAIT_MS) for it to be
    /// taken. (Dropping the reader sends it in the background.)
    pub async fn cancel(mut self) {
        self.body = futures_util::stream::empty().boxed();
        let word = self.receipt.on_cancel(self.now_ms());
        if let Some(wait) = word.and_then(|w| send_last_word(&self.http, w, self.clock)) {
            wait.await;
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // The application stopped before the end: tell a producer waiting for a receipt
        // (in the background, while the runtime runs; nobody waits here).
        if let Some(w) = self.receipt.on_dropped(self.now_ms()) {
            send_last_word(&self.http, w, self.clock);
        }
    }
}

/// Drives the core's [`Resumer`] from `step` to the resumed body: its stream, check and
/// starting offset (§12.3).
async fn resume(
    http_client: &reqwest::Client,
    r: &mut Resumer,
    mut step: ResumeStep,
    clock: Instant,
) -> Result<(Body, BodyCheck, u64), Error> {
    let now = || clock.elapsed().as_secs_f64() * 1000.0;
    let stop = Stop::new();
    loop {
        step = match step {
            ResumeStep::Call(req) => match text_request(http_client, &req, None, &stop).await {
                Ok(a) => r.on_call(a.status, &HeaderView(&a.headers), &a.body, now()),
                Err(f) => r.on_call_failure(f),
            },
            ResumeStep::Sleep(ms) => {
                tokio::time::sleep(http::duration_of_ms(ms)).await;
                r.on_slept(now())
            }
            ResumeStep::Get(req) => match get_head(http_client, &req, &stop).await {
                Ok(resp) => {
                    match r.on_head(resp.status().as_u16(), &HeaderView(resp.headers()), now()) {
                        ResumeStep::Resumed(check, at) => {
                            return Ok((resp.bytes_stream().boxed(), check, at))
                        }
                        // the core dropped this response (another meeting's upload, a 503):
                        // dropping it closes it
                        next => next,
                    }
                }
                Err(f) => r.on_get_failure(f, now()),
            },
            ResumeStep::Resumed(..) => {
                return Err(Error::new(
                    ErrorCode::Unsupported,
                    "internal error in the native consumer: resumed without a resumed GET",
                ))
            }
            ResumeStep::Failed(e) => return Err(e),
        };
    }
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let mut chunk = match ready!(this.poll_next_chunk(cx)) {
            Ok(Some(c)) => c,
            Ok(None) => return Poll::Ready(Ok(())),
            Err(e) => return Poll::Ready(Err(io_error(e))),
        };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk[..n]);
        if n < chunk.len() {
            this.leftover = chunk.split_off(n);
        }
        Poll::Ready(Ok(()))
    }
}
