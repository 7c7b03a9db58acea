//! The consumer: drives [`Consumer`] with reqwest up to the stream's start, and hands the
//! stream to the [`Reader`] of [`super::Client::receive`] (`reader.rs`).

use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;

use super::chunks::Meter;
use super::http::{self, failure, HeaderView};
use super::presence;
use super::reader::Reader;
use super::stall::StallWatch;
use super::stop::Stop;
use super::{resume_option, ReceiveOptions, Received};
use crate::client::consumer::ConsumerReceipt;
use crate::client::consumer::{BodyCheck, Consumer, ConsumerBody, Incoming, ReceiveConfig, Step};
use crate::client::error::{Error, ErrorCode, Failure};
use crate::client::keys;
use crate::client::options::{resume_seconds, ReceiptOption};
use crate::client::request::{LastWords, Request};
use crate::crypto::Decryptor;

/// The decryptor the options ask for (`None`: plain), and whether it holds a passphrase (whose
/// scrypt runs on the blocking pool).
fn decryptor_for(o: &ReceiveOptions) -> Result<Option<(Decryptor, bool)>, Error> {
    let dec = keys::decryptor(o.passphrase.as_deref(), &o.identities)?;
    Ok(dec.map(|d| (d, o.passphrase.is_some())))
}

/// `Client::receive`.
pub(crate) async fn receive(
    http_client: &reqwest::Client,
    opts: ReceiveOptions,
) -> Result<Received, Error> {
    // Bad keys fail before anything waits on the relay.
    let dec = decryptor_for(&opts)?;
    let mut c = Consumer::new(receive_config(&opts, dec.is_some())?)?;
    let stop = Stop::new();
    let mut resp: Option<reqwest::Response> = None;
    // dropped before the stream started (a caller's timeout, Ctrl-C): tell a producer that
    // may wait for this consumer (§12.5)
    let mut left = LeftOnDrop {
        http: http_client.clone(),
        words: None,
    };
    loop {
        match c.poll() {
            Step::Rendezvous(req) => {
                // the producer's hello counts from the answer's head (§12.5)
                let head = |status, headers: &_| c.on_rendezvous_head(status, &HeaderView(headers));
                match http::text_request_seen(http_client, &req, None, &stop, head).await {
                    Ok(a) => c.on_response(a.status, &HeaderView(&a.headers), &a.body),
                    Err(f) => c.on_failure(f),
                }
                left.words = Some(c.abandon_notice());
            }
            Step::Get(req) => {
                // the producer's presence is checked while the head waits (§12.5)
                let check = c.presence_check(0.0);
                let head = get_head(http_client, &req, &stop);
                match presence::checked(http_client, check, Instant::now(), head).await {
                    Ok(Ok(r)) => {
                        c.on_head(r.status().as_u16(), &HeaderView(r.headers()));
                        resp = Some(r);
                    }
                    Ok(Err(f)) => c.on_failure(f),
                    Err(e) => c.on_failure(Failure::coded(e)),
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
                left.words = None;
                let Some(r) = resp.take() else {
                    return Err(Error::new(
                        ErrorCode::Unsupported,
                        "internal error in the native consumer: a stream without a response",
                    ));
                };
                return Ok(released(http_client, &opts, &c, incoming, check, r, dec));
            }
            Step::Failed(e) => {
                // a producer that may be waiting for this consumer is told it left (§12.5)
                left.words = None;
                http::say_last_words(http_client, c.left_notice(e.code)).await;
                return Err(e);
            }
        }
    }
}

/// The core's configuration from the caller's options.
fn receive_config(opts: &ReceiveOptions, encrypted: bool) -> Result<ReceiveConfig, Error> {
    Ok(ReceiveConfig {
        relay: opts.target.relay_base()?,
        path: opts.target.path.clone(),
        token: opts.target.token.clone(),
        rendezvous: opts.rendezvous,
        timeout_s: opts.timeout.map(|d| d.as_secs_f64()),
        encrypted,
        size: opts.size,
        receipt: ReceiptOption::from(opts.receipt).on(),
        resume_s: resume_seconds(Some(resume_option(opts.resume)))?,
        ciphertext: opts.ciphertext,
    })
}

/// What `receive` resolves with: the response body through the core's checks, decrypted, its
/// receipt (§12.2) and progress, in a [`Reader`].
fn released(
    http_client: &reqwest::Client,
    opts: &ReceiveOptions,
    c: &Consumer,
    incoming: Incoming,
    check: BodyCheck,
    r: reqwest::Response,
    dec: Option<(Decryptor, bool)>,
) -> Received {
    let meter = Meter::new(incoming.progress_total, opts.on_progress.clone());
    let (dec, slow) = match dec {
        Some((d, slow)) => (Some(d), slow),
        None => (None, false),
    };
    let manual = ReceiptOption::from(opts.receipt).manual();
    let receipt = ConsumerReceipt::new(c.receipt_plan(), dec.is_some(), manual);
    let clock = Instant::now();
    let reader = Reader {
        body: r.bytes_stream().boxed(),
        core: ConsumerBody::new(check),
        receipt,
        dec,
        slow_header: slow,
        job: None,
        leftover: Bytes::new(),
        error: None,
        done: false,
        meter,
        http: http_client.clone(),
        clock,
        resumer: c.resumer(),
        resuming: None,
        last_word: None,
        stall: StallWatch::new(clock),
    };
    Received {
        reader,
        content_type: incoming.content_type,
        filename: incoming.filename,
        size: incoming.size,
    }
}

/// Sends a `GET`; its `timeout_ms` covers the wait for the response head only.
pub(super) async fn get_head(
    http_client: &reqwest::Client,
    req: &Request,
    stop: &Stop,
) -> Result<reqwest::Response, crate::client::error::Failure> {
    let fut = http::build(http_client, req)?.send();
    match req.timeout_ms {
        Some(ms) => match tokio::time::timeout(http::duration_of_ms(ms), fut).await {
            Ok(r) => r.map_err(|e| failure(e, stop)),
            Err(_) => Err(crate::client::error::Failure::timed_out(req)),
        },
        None => fut.await.map_err(|e| failure(e, stop)),
    }
}

/// The consumer's word that it left (§12.5), said in the background if `receive` is dropped
/// after its rendezvous and before its stream started.
struct LeftOnDrop {
    http: reqwest::Client,
    words: Option<LastWords>,
}

impl Drop for LeftOnDrop {
    fn drop(&mut self) {
        for req in self.words.take().map(|w| w.calls).unwrap_or_default() {
            http::spawn_finishing(http::say(self.http.clone(), req));
        }
    }
}
