//! The streaming producer (`docs/PROTOCOL.md` §3.1–§3.6): one request body, fed to the
//! transfer ([`super::transfer`]) as it arrives.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::request_body::RequestBody;
use http::header::{self, HeaderValue};
use http::HeaderMap;
use http_body_util::BodyExt;
use httpipe::protocol::control::{failure_line, WITHDRAW_WAIT_S};
use tokio::sync::oneshot;

use super::body::Log;
use super::direct::DirectEnd;
use super::source::{first_part, Source, Upload};
use super::transfer::{Feeding, Transfer};
use super::{headers, Meet, Phase, Plane};
use crate::hangup::Hangup;
use crate::metrics::FailReason;
use crate::respond::{plain_text, rejection, Resp};
use httpipe::protocol::control::Rejection;

/// Registers a producer and answers at once with the status log; a task pumps the upload.
/// With a Data API channel in `meet`, only consumers with the same channel are met (§5.1).
pub async fn handle(
    plane: Arc<Plane>,
    version: http::Version,
    headers: HeaderMap,
    body: RequestBody,
    hangup: Hangup,
    meet: Meet,
) -> Resp {
    let wait = match meet.producer(&plane) {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let mut upload = Upload::new(body, plane.read_ahead.clone());
    let expects_continue = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        // Let hyper write `100 Continue` before our `200` (see `Upload::prime`).
        upload.prime().await;
        tokio::task::yield_now().await;
    }
    let (log, log_body) = Log::new();
    log.line(format!("[INFO] Waiting for {} receiver(s)...", meet.n));
    let request = Request {
        version,
        headers,
        path: meet.path,
        hangup,
    };
    tokio::spawn(run(plane, wait, request, upload, log));
    let mut resp = plain_text(log_body.boxed());
    resp.headers_mut()
        .insert("x-robots-tag", HeaderValue::from_static("none"));
    resp
}

/// A producer that withdraws (§3.10, `DELETE`): registered like a `POST`, answered at once
/// with the status log; its consumers, once present, get `producer-withdrew` and the path is
/// free.
pub async fn withdraw(plane: Arc<Plane>, hangup: Hangup, meet: Meet) -> Resp {
    let mut wait = match withdrawal_registered(&plane, &hangup, &meet).await {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let (log, log_body) = Log::new();
    log.line(format!("[INFO] Waiting for {} receiver(s)...", meet.n));
    let path = meet.path;
    tokio::spawn(async move {
        let matched = tokio::select! {
            m = wait.matched() => m,
            _ = log.closed() => return,
            _ = hangup.hung_up() => return,
            _ = plane.reached(Phase::Draining) => {
                log.line(failure_line::SHUTTING_DOWN);
                return;
            }
        };
        drop(wait);
        let crate::pairing::Match {
            consumers,
            transfer,
        } = matched;
        for handoff in consumers {
            let _ = handoff.tx.send(Err(Rejection::ProducerWithdrew));
            log.line("[INFO] A receiver was connected.");
        }
        drop(transfer); // the path is free
        tracing::info!(path = %plane.log_path(&path), "producer withdrew");
        log.line(failure_line::UPLOAD_FAILED);
    });
    let mut resp = plain_text(log_body.boxed());
    resp.headers_mut()
        .insert("x-robots-tag", HeaderValue::from_static("none"));
    resp
}

/// How often a withdrawal that found its path held looks again (§3.10).
const WITHDRAWAL_RECHECK: Duration = Duration::from_millis(20);

/// A withdrawal registered as its path's producer (§3.10). A path another producer holds is
/// waited for (at most `WITHDRAW_WAIT_S`, the client's own bound, until it hangs up or the
/// relay shuts down), then refused as before: most likely that producer is the upload this one withdraws, which failed
/// a moment ago and whose end the relay has not seen yet. Refused at once, the withdrawal was
/// lost, and a consumer whose `GET` came a moment later waited for nobody (found in CI: a
/// resumed upload whose reopened source fell short after its first bytes, §12.3).
async fn withdrawal_registered(
    plane: &Plane,
    hangup: &Hangup,
    meet: &Meet,
) -> Result<super::Producer, Rejection> {
    let until = Instant::now() + Duration::from_secs_f64(WITHDRAW_WAIT_S);
    loop {
        match meet.producer(plane) {
            Err(Rejection::AnotherSender(_)) if Instant::now() < until => {}
            registered => return registered,
        }
        tokio::select! {
            _ = tokio::time::sleep(WITHDRAWAL_RECHECK) => {}
            _ = hangup.hung_up() => return Err(Rejection::AnotherSender(meet.path.clone())),
            _ = plane.reached(Phase::Draining) => return Err(Rejection::ShuttingDown),
        }
    }
}

/// What the upload's task keeps of the producer's request.
struct Request {
    version: http::Version,
    headers: HeaderMap,
    path: String,
    hangup: Hangup,
}

async fn run(
    plane: Arc<Plane>,
    mut wait: super::Producer,
    request: Request,
    mut upload: Upload,
    log: Log,
) {
    let Request {
        version,
        headers: req_headers,
        path,
        hangup,
    } = request;
    // Wait for the consumers; leave (unregistering) as soon as the producer is gone: hyper
    // notices it by the read-ahead or by dropping the response; the hang-up watcher also when
    // hyper doesn't read (read-ahead full, bytes pipelined behind a complete body; §3.6).
    let matched = tokio::select! {
        m = wait.matched() => m,
        _ = log.closed() => return,
        _ = hangup.hung_up() => return,
        e = upload.read_ahead() => {
            // §3.6: the path is free at once; say why, in case the producer still reads.
            tracing::debug!(error = %e, "waiting producer's upload failed");
            log.line(failure_line::UPLOAD_FAILED);
            return;
        }
        _ = plane.reached(Phase::Draining) => {
            log.line(failure_line::SHUTTING_DOWN);
            return;
        }
    };
    drop(wait);

    let content_type = req_headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let boundary = content_type
        .and_then(|ct| multer::parse_boundary(ct).ok())
        .filter(|_| {
            content_type.is_some_and(|ct| {
                ct.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("multipart/form-data")
            })
        });
    let (source, forwarded) = match boundary {
        None => (Source::Raw(upload), headers::forwarded(&req_headers, true)),
        Some(b) => match first_part(upload, b).await {
            Ok((field, part_headers)) => {
                let mut fwd = headers::forwarded(&part_headers, false);
                for v in req_headers.get_all("x-piping") {
                    fwd.append("x-piping", v.clone());
                }
                (Source::Multipart(Box::new(field)), fwd)
            }
            Err(e) => {
                log.line(format!("[ERROR] Invalid multipart upload: {e}"));
                plane.metrics.failed(FailReason::BadUpload);
                return; // the consumers' hand-offs drop: they wait for the next producer
            }
        },
    };
    let mut forwarded = forwarded;
    headers::add_consumer_defaults(&mut forwarded);
    // The status log's end waits for a held upload's (see `hold_after_disconnect`).
    let log_open = log.clone();
    let (transfer, feeding) =
        Transfer::start_streaming(&plane, matched, forwarded, log, &path, source);
    let (outcome, source) = match feeding {
        Feeding::Direct(told) => fed_directly(&plane, transfer, told).await,
        Feeding::Pumped(source) => pump(&plane, transfer, source).await,
    };
    if outcome == Err(FailReason::ReceiverDisconnected) {
        if let Some(source) = source {
            hold_after_disconnect(source, version, log_open, &plane).await;
        }
    }
}

/// How long the upload is held (not read) after every consumer left, before it is dropped.
const HOLD_AFTER_DISCONNECT: std::time::Duration = std::time::Duration::from_secs(5);
/// The same on HTTP/2, where the reset only has to come after the last status line.
const H2_HOLD_AFTER_DISCONNECT: std::time::Duration = std::time::Duration::from_millis(300);
/// HTTP/1.1: how long what the producer sent during the hold is then read (and discarded),
/// so that the close is clean.
const DRAIN_AFTER_HOLD: std::time::Duration = std::time::Duration::from_millis(250);

/// Waits while the one consumer's response reads the upload itself ([`super::direct`]), then
/// ends the transfer as that went; the transfer's task reads on ([`pump`]) if the response
/// handed the upload back before its end. Returns the outcome, and the upload if it is still
/// open.
async fn fed_directly(
    plane: &Arc<Plane>,
    transfer: Transfer,
    told: oneshot::Receiver<DirectEnd>,
) -> (Result<(), FailReason>, Option<Source>) {
    let told = tokio::select! {
        t = told => t,
        _ = plane.reached(Phase::Aborting) => {
            transfer.fail(FailReason::Shutdown);
            return (Err(FailReason::Shutdown), None);
        }
    };
    match told {
        Ok(DirectEnd::Ended) => (transfer.finish().await, None),
        Ok(DirectEnd::Failed) => {
            transfer.fail(FailReason::ProducerAborted);
            (Err(FailReason::ProducerAborted), None)
        }
        Ok(DirectEnd::Handed(source)) => pump(plane, transfer, source).await,
        Err(_) => {
            // The feed is gone without a word: not reached (its drop tells).
            transfer.fail(FailReason::ProducerAborted);
            (Err(FailReason::ProducerAborted), None)
        }
    }
}

/// Feeds the upload to the transfer until its end, a failure, every consumer leaving, or the
/// relay's grace period ending. Returns the outcome and the upload.
async fn pump(
    plane: &Arc<Plane>,
    mut transfer: Transfer,
    mut source: Source,
) -> (Result<(), FailReason>, Option<Source>) {
    let outcome: Result<(), FailReason> = loop {
        let chunk = tokio::select! {
            biased;
            _ = transfer.consumer_left() => {
                if transfer.alive() == 0 { break Err(FailReason::ReceiverDisconnected) }
                continue;
            }
            _ = plane.reached(Phase::Aborting) => break Err(FailReason::Shutdown),
            c = source.next() => c,
        };
        match chunk {
            Ok(Some(bytes)) => {
                // A consumer that stopped reading holds the send; the grace period's end must
                // still reach the producer as its `[ERROR]` line (§9). A send cut short is no
                // loss then: the transfer fails for every consumer.
                let sent = tokio::select! {
                    biased;
                    _ = plane.reached(Phase::Aborting) => Err(FailReason::Shutdown),
                    sent = transfer.send(bytes) => sent,
                };
                if let Err(reason) = sent {
                    break Err(reason);
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => {
                tracing::debug!(error = %e, "upload failed");
                break Err(FailReason::ProducerAborted);
            }
        }
    };
    let outcome = match outcome {
        Ok(()) => transfer.finish().await,
        Err(reason) => {
            transfer.fail(reason);
            Err(reason)
        }
    };
    (outcome, Some(source))
}

/// Every consumer left: holds the upload for a moment *without reading it*, then drops it.
/// Read and discarded, the producer would push on at full speed into nowhere, and a producer
/// that resumes (§12.3) counts what it pushed as sent: its replay window would move past what
/// the consumer lacks (a test client pushed 200 MiB in a 300 ms drain on HTTP/2, 3 GiB in 5 s
/// on HTTP/1.1). Held, the upload stops at flow control (the HTTP/2 stream window, the socket
/// buffers). HTTP/1.1: the hold gives a full-duplex client (the ZebraStream client) time to
/// read the `[ERROR:RECEIVER_PREMATURE_DISCONNECT]` line and stop; what it sent meanwhile is
/// then read briefly, since closing a connection with unread request bytes makes the kernel
/// send a TCP reset, which can destroy the line before the client reads it. HTTP/2: the
/// stream's reset can't destroy what was sent before it, and it is what makes an uploading
/// client (curl) stop, so it comes soon after.
///
/// HTTP/1.1: the status log (`log`, the response) stays open until then. Ended at once, it
/// would tell a keep-alive client whose whole body sits in the socket buffers (Node's
/// `fetch`, hyper) that the exchange is over: its next request on the connection — a
/// resuming producer's channel call (§12.3), the one that hears the consumer's failure
/// notice — then waited behind the held upload for the 5 s, and a consumer that gave up
/// after its 2 s (`httpipe read`) was never heard: its producer waited out its resume time.
///
/// A relay that is shutting down holds nothing: its connections are to end.
async fn hold_after_disconnect(
    mut source: Source,
    version: http::Version,
    log: Log,
    plane: &Plane,
) {
    let h2 = version == http::Version::HTTP_2;
    let log = (!h2).then_some(log);
    let hold = async {
        if h2 {
            tokio::time::sleep(H2_HOLD_AFTER_DISCONNECT).await;
        } else {
            tokio::time::sleep(HOLD_AFTER_DISCONNECT).await;
            let drain = async { while let Ok(Some(_)) = source.next().await {} };
            let _ = tokio::time::timeout(DRAIN_AFTER_HOLD, drain).await;
        }
    };
    tokio::select! {
        _ = hold => {}
        _ = plane.reached(Phase::Draining) => {}
    }
    drop(log);
    source.abandon();
}
