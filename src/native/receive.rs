//! The consumer: drives [`Consumer`] with reqwest, and the [`Reader`] of
//! [`super::Client::receive`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_util::future::poll_fn;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::task::JoinHandle;

use super::http::{self, failure, text_request, HeaderView, TimeoutAs};
use super::source::Meter;
use super::stop::Stop;
use super::{io_error, ReceiveOptions, Received};
use crate::client::consumer::{BodyCheck, Consumer, ReceiveConfig, Step};
use crate::client::error::{Error, ErrorCode};
use crate::crypto::{DecryptOptions, Decryptor, Identity};

/// The decryptor the options ask for (`None`: plain), and whether it holds a passphrase (whose
/// scrypt runs on the blocking pool).
fn decryptor_for(o: &ReceiveOptions) -> Result<Option<(Decryptor, bool)>, Error> {
    let mut ids = Vec::new();
    if let Some(p) = &o.passphrase {
        ids.push(Identity::passphrase(p));
    }
    for text in &o.identities {
        // A key file's text (comments, several keys) or one key.
        let parsed = if text.contains('\n') || text.trim_start().starts_with('#') {
            Identity::parse_file(text)?
        } else {
            vec![Identity::from_str(text.trim())?]
        };
        ids.extend(parsed);
    }
    if ids.is_empty() {
        return Ok(None);
    }
    let options = DecryptOptions {
        lenient_empty_final_chunk: true,
        ..Default::default()
    };
    Ok(Some((
        Decryptor::new(&ids, options)?,
        o.passphrase.is_some(),
    )))
}

/// `Client::receive`.
pub(crate) async fn receive(
    http_client: &reqwest::Client,
    opts: ReceiveOptions,
) -> Result<Received, Error> {
    // Bad keys fail before anything waits on the relay.
    let dec = decryptor_for(&opts)?;
    let cfg = ReceiveConfig {
        relay: opts.target.relay_base()?,
        path: opts.target.path.clone(),
        token: opts.target.token.clone(),
        rendezvous: opts.rendezvous,
        timeout_s: opts.timeout.map(|d| d.as_secs_f64()),
        encrypted: dec.is_some(),
        size: opts.size,
        // Delivery receipts (PROTOCOL.md §12) are not in the native client yet.
        receipt: false,
        resume_s: None,
    };
    let mut c = Consumer::new(cfg)?;
    let stop = Stop::new();
    let mut resp: Option<reqwest::Response> = None;
    loop {
        match c.poll() {
            Step::Rendezvous(req) => {
                match text_request(http_client, &req, None, &stop, TimeoutAs::Stop).await {
                    Ok(a) => c.on_response(a.status, &HeaderView(&a.headers), &a.body),
                    Err(f) => c.on_failure(f),
                }
            }
            Step::Get(req) => {
                let sent = match http::build(http_client, &req) {
                    Ok(rb) => {
                        let fut = rb.send();
                        match req.timeout_ms {
                            // The timeout covers the wait for the head only.
                            Some(ms) => {
                                match tokio::time::timeout(http::duration_of_ms(ms), fut).await {
                                    Ok(r) => r.map_err(|e| failure(e, &stop)),
                                    Err(_) => Err(http::timeout_failure(ms, TimeoutAs::Stop)),
                                }
                            }
                            None => fut.await.map_err(|e| failure(e, &stop)),
                        }
                    }
                    Err(f) => Err(f),
                };
                match sent {
                    Ok(r) => {
                        c.on_head(r.status().as_u16(), &HeaderView(r.headers()));
                        resp = Some(r);
                    }
                    Err(f) => c.on_failure(f),
                }
            }
            Step::ReadErrorBody => {
                let body = match resp.take() {
                    Some(r) => http::read_text(r).await.unwrap_or_default(),
                    None => String::new(),
                };
                c.on_error_body(&body);
            }
            Step::Stream(incoming, check) => {
                let Some(r) = resp.take() else {
                    return Err(Error::new(
                        ErrorCode::Unsupported,
                        "internal error in the native consumer: a stream without a response",
                    ));
                };
                let meter = Meter::new(incoming.progress_total, opts.on_progress.clone());
                let (dec, slow) = match dec {
                    Some((d, slow)) => (Some(d), slow),
                    None => (None, false),
                };
                let reader = Reader {
                    body: r.bytes_stream().boxed(),
                    check,
                    dec,
                    slow_header: slow,
                    job: None,
                    leftover: Bytes::new(),
                    error: None,
                    done: false,
                    meter,
                };
                return Ok(Received {
                    reader,
                    content_type: incoming.content_type,
                    filename: incoming.filename,
                    size: incoming.size,
                });
            }
            Step::Failed(e) => return Err(e),
        }
    }
}

type DecryptJob = JoinHandle<(Decryptor, Vec<u8>, Result<(), crate::crypto::Error>)>;

/// The consumer's stream: only authenticated plaintext when decrypting; a cut stream ends in
/// `TRUNCATED`, never in a clean end.
///
/// Read it with [`next_chunk`](Reader::next_chunk) (zero-copy `Bytes` as they arrive) or as a
/// [`tokio::io::AsyncRead`], whose errors carry the [`Error`] (see [`super::error_of`]).
/// Dropping it disconnects: the producer gets `PEER_DISCONNECTED`.
///
/// # Errors
///
/// `TRUNCATED` (the producer's stream was cut, or the relay went away), `WRONG_KEY` (the keys
/// don't open the header: before any plaintext), `DECRYPT_FAILED` (tampered or malformed
/// ciphertext). After an error every call returns it again.
pub struct Reader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    check: BodyCheck,
    dec: Option<Decryptor>,
    /// A passphrase: the header's scrypt may still run (on the blocking pool).
    slow_header: bool,
    job: Option<DecryptJob>,
    leftover: Bytes,
    error: Option<Error>,
    done: bool,
    meter: Arc<Meter>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("bytes", &self.check.seen())
            .field("encrypted", &self.dec.is_some())
            .field("done", &self.done)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Reader {
    fn fail(&mut self, e: Error) -> Poll<Result<Option<Bytes>, Error>> {
        self.error = Some(e.clone());
        Poll::Ready(Err(e))
    }

    fn plaintext(&mut self, out: Vec<u8>) -> Option<Bytes> {
        if out.is_empty() {
            return None;
        }
        self.slow_header = false;
        self.meter.add(out.len());
        Some(Bytes::from(out))
    }

    /// The next piece of plaintext, `None` at the (verified) end.
    pub fn poll_next_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Error>> {
        loop {
            if let Some(e) = &self.error {
                return Poll::Ready(Err(e.clone()));
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
                let (dec, out, r) = match joined {
                    Ok(j) => j,
                    Err(e) => {
                        return self.fail(Error::new(
                            ErrorCode::Unsupported,
                            format!("a worker thread failed: {e}"),
                        ))
                    }
                };
                self.dec = Some(dec);
                if let Err(e) = r {
                    return self.fail(e.into());
                }
                if let Some(b) = self.plaintext(out) {
                    return Poll::Ready(Ok(Some(b)));
                }
                continue;
            }
            match ready!(self.body.poll_next_unpin(cx)) {
                Some(Ok(chunk)) => {
                    self.check.on_bytes(chunk.len() as u64);
                    let slow = self.slow_header;
                    match self.dec.take() {
                        None => {
                            if chunk.is_empty() {
                                continue;
                            }
                            self.meter.add(chunk.len());
                            return Poll::Ready(Ok(Some(chunk)));
                        }
                        Some(mut dec) if slow => {
                            // Until the first plaintext, the header (and its scrypt) may be in
                            // this chunk: decrypt on the blocking pool.
                            self.job = Some(tokio::task::spawn_blocking(move || {
                                let mut out = Vec::with_capacity(chunk.len());
                                let r = dec.update(&chunk, &mut out);
                                (dec, out, r)
                            }));
                        }
                        Some(mut dec) => {
                            let mut out = Vec::with_capacity(chunk.len());
                            let r = dec.update(&chunk, &mut out);
                            self.dec = Some(dec);
                            if let Err(e) = r {
                                return self.fail(e.into());
                            }
                            if let Some(b) = self.plaintext(out) {
                                return Poll::Ready(Ok(Some(b)));
                            }
                        }
                    }
                }
                Some(Err(e)) => {
                    let f = failure(e, &Stop::new());
                    return self.fail(self.check.on_failure(f));
                }
                None => {
                    if let Err(e) = self.check.on_end() {
                        return self.fail(e);
                    }
                    self.done = true;
                    let mut out = Vec::new();
                    if let Some(dec) = self.dec.as_mut() {
                        if let Err(e) = dec.finish(&mut out) {
                            return self.fail(e.into());
                        }
                    }
                    let last = self.plaintext(out);
                    self.meter.finish();
                    if let Some(b) = last {
                        return Poll::Ready(Ok(Some(b)));
                    }
                    return Poll::Ready(Ok(None));
                }
            }
        }
    }

    /// The next piece of plaintext as it arrives; `Ok(None)` only at the verified clean end.
    ///
    /// # Errors
    ///
    /// `TRUNCATED`, `WRONG_KEY`, `DECRYPT_FAILED` (see [`Reader`]).
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        poll_fn(|cx| self.poll_next_chunk(cx)).await
    }

    /// Bytes received from the relay so far (ciphertext when decrypting).
    pub fn wire_bytes(&self) -> u64 {
        self.check.seen()
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
