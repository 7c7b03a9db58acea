//! The producer side of a transfer (`docs/PROTOCOL.md` §3.1–§3.6).

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response};
use http_body_util::BodyExt;
use httpipe::protocol::control;
use hyper::body::Incoming;
use tokio::sync::{mpsc, oneshot};

use super::body::{ConsumerBody, Log, Msg};
use super::source::{first_part, Source, Upload};
use super::{headers, Handoff, Start};
use crate::hangup::Hangup;
use crate::metrics::FailReason;
use crate::pairing::{Match, ProducerWait};
use crate::respond::{rejection, Resp};
use crate::state::Shared;

/// Registers a producer and answers at once with the status log; a task pumps the upload.
pub async fn handle(
    state: Shared,
    headers: HeaderMap,
    body: Incoming,
    path: String,
    n: usize,
    hangup: Hangup,
) -> Resp {
    let wait = match state.hub.producer(&path, n) {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let mut upload = Upload::new(body);
    let expects_continue = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        // Let hyper write `100 Continue` before our `200` (see `Upload::prime`).
        upload.prime().await;
        tokio::task::yield_now().await;
    }
    let (log, log_body) = Log::new();
    log.line(format!("[INFO] Waiting for {n} receiver(s)..."));
    tokio::spawn(run(state, wait, headers, upload, log, path, hangup));
    let mut resp = Response::new(log_body.boxed());
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert("x-robots-tag", HeaderValue::from_static("none"));
    resp
}

async fn run(
    state: Shared,
    mut wait: ProducerWait<Handoff>,
    req_headers: HeaderMap,
    mut upload: Upload,
    log: Log,
    path: String,
    hangup: Hangup,
) {
    // Wait for the consumers; leave (unregistering) as soon as the producer is gone: hyper
    // notices it by the read-ahead or by dropping the response; the hang-up watcher also when
    // hyper doesn't read (read-ahead full, bytes pipelined behind a complete body; §3.6).
    let matched = tokio::select! {
        m = wait.matched() => m,
        _ = log.closed() => return,
        _ = upload.read_ahead() => return,
        _ = hangup.hung_up() => return,
    };
    drop(wait);
    let Match {
        consumers,
        transfer,
    } = matched;

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
                (Source::Multipart(field), fwd)
            }
            Err(e) => {
                log.line(format!("[ERROR] Invalid multipart upload: {e}"));
                state.metrics.failed(FailReason::BadUpload);
                return; // the consumers' hand-offs drop: they wait for the next producer
            }
        },
    };
    let mut forwarded = forwarded;
    headers::add_consumer_defaults(&mut forwarded);
    let pump = Pump::start(&state, consumers, forwarded, &log);
    pump.run(state, source, log, transfer, path).await;
}

/// How long the upload is still read (and discarded) after every consumer left.
const DRAIN_AFTER_DISCONNECT: std::time::Duration = std::time::Duration::from_secs(5);

/// One consumer's channel as seen by the pump.
struct Sink {
    tx: mpsc::Sender<Msg>,
    done: oneshot::Receiver<()>,
    /// `done` already fired (observed with `try_recv`).
    finished: bool,
}

/// Hands the producer's bytes to every matched consumer (shared with the segmented upload).
pub(crate) struct Pump {
    sinks: Vec<Option<Sink>>,
    gone: mpsc::UnboundedReceiver<usize>,
    left_early: usize,
}

impl Pump {
    /// Sends every consumer its response (headers now, bytes as they come).
    pub(crate) fn start(
        state: &Shared,
        consumers: Vec<Handoff>,
        forwarded: HeaderMap,
        log: &Log,
    ) -> Pump {
        let (gone_tx, gone) = mpsc::unbounded_channel();
        let length = forwarded
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let n = consumers.len();
        let mut sinks = Vec::with_capacity(n);
        for (i, handoff) in consumers.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel(1);
            let (done_tx, done) = oneshot::channel();
            let body = ConsumerBody::new(rx, done_tx, gone_tx.clone(), i, length);
            // If the consumer left this instant, the body drops inside and reports `gone`.
            let _ = handoff.send(Start {
                headers: forwarded.clone(),
                body,
            });
            sinks.push(Some(Sink {
                tx,
                done,
                finished: false,
            }));
            log.line("[INFO] A receiver was connected.");
        }
        log.line(format!("[INFO] Start sending to {n} receiver(s)!"));
        state.metrics.transfer_started();
        Pump {
            sinks,
            gone,
            left_early: 0,
        }
    }

    /// Consumers still connected.
    pub(crate) fn alive(&self) -> usize {
        self.sinks.iter().filter(|s| s.is_some()).count()
    }

    /// Notes every consumer that hung up since the last call.
    pub(crate) fn reap_gone(&mut self, log: &Log) {
        while let Ok(i) = self.gone.try_recv() {
            self.drop_sink(i, log);
        }
    }

    fn drop_sink(&mut self, i: usize, log: &Log) {
        if let Some(slot) = self.sinks.get_mut(i) {
            if slot.take().is_some() {
                self.left_early += 1;
                log.line(control::RECEIVER_PREMATURE_DISCONNECT);
            }
        }
    }

    async fn run<T: Send + 'static>(
        mut self,
        state: Shared,
        mut source: Source,
        log: Log,
        transfer: crate::pairing::Transfer<T>,
        path: String,
    ) {
        let started = Instant::now();
        let mut bytes_sent: u64 = 0;
        let log_path = state.log_path(&path);
        tracing::info!(path = %log_path, receivers = self.sinks.len(), "transfer start");
        let outcome: Result<(), FailReason> = loop {
            let chunk = tokio::select! {
                biased;
                Some(i) = self.gone.recv() => {
                    self.drop_sink(i, &log);
                    if self.alive() == 0 { break Err(FailReason::ReceiverDisconnected) }
                    continue;
                }
                c = source.next() => c,
            };
            match chunk {
                Ok(Some(bytes)) => {
                    bytes_sent += bytes.len() as u64;
                    self.send_all(bytes, &state, &log).await;
                    if self.alive() == 0 {
                        break Err(FailReason::ReceiverDisconnected);
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => {
                    tracing::debug!(error = %e, "upload failed");
                    log.line("[ERROR] The sender's upload failed.");
                    break Err(FailReason::ProducerAborted);
                }
            }
        };
        let outcome = match outcome {
            Ok(()) => self.finish(transfer, &log).await,
            Err(reason) => {
                drop(transfer); // the path is free again
                Err(reason) // dropping `self` aborts the remaining consumers (truncation)
            }
        };
        let ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(()) => {
                log.line("[INFO] Sent successfully!");
                log.line("[INFO] All receiver(s) was/were received successfully.");
                log.line(control::TRANSFER_SUCCESSFUL);
                state.metrics.completed();
                tracing::info!(path = %log_path, bytes = bytes_sent, ms, "transfer end: ok");
            }
            Err(reason) => {
                state.metrics.failed(reason);
                tracing::info!(path = %log_path, bytes = bytes_sent, ms, reason = reason.as_str(), "transfer end: failed");
            }
        }
        drop(log); // ends the producer's response
        if outcome == Err(FailReason::ReceiverDisconnected) {
            // Keep reading (and discarding) the upload for a moment: closing a connection with
            // unread request bytes makes the kernel send a TCP reset, which can destroy the
            // `[ERROR:RECEIVER_PREMATURE_DISCONNECT]` line before a full-duplex client (the
            // ZebraStream client) reads it. The client stops uploading once it has read it.
            let drain = async { while let Ok(Some(_)) = source.next().await {} };
            let _ = tokio::time::timeout(DRAIN_AFTER_DISCONNECT, drain).await;
        }
    }

    /// Hands `bytes` to every consumer still there, waiting for room in each (backpressure).
    pub(crate) async fn send_all(&mut self, bytes: Bytes, state: &Shared, log: &Log) {
        let len = bytes.len() as u64;
        for i in 0..self.sinks.len() {
            let Some(sink) = &self.sinks[i] else { continue };
            if sink.tx.send(Msg::Data(bytes.clone())).await.is_err() {
                self.drop_sink(i, log);
            } else {
                state.metrics.relayed(len);
            }
        }
    }

    /// Clean end of the upload: end every response, free the path, wait until every consumer
    /// has received the end.
    pub(crate) async fn finish<T: Send + 'static>(
        mut self,
        transfer: crate::pairing::Transfer<T>,
        log: &Log,
    ) -> Result<(), FailReason> {
        for i in 0..self.sinks.len() {
            let Some(sink) = &mut self.sinks[i] else {
                continue;
            };
            // A body that reached its Content-Length may be gone already, having finished.
            if sink.tx.send(Msg::End).await.is_err() {
                if sink.done.try_recv().is_ok() {
                    sink.finished = true;
                } else {
                    self.drop_sink(i, log);
                }
            }
        }
        drop(transfer);
        let sinks = std::mem::take(&mut self.sinks);
        for sink in sinks.into_iter().flatten() {
            if !sink.finished && sink.done.await.is_err() {
                self.left_early += 1;
                log.line(control::RECEIVER_PREMATURE_DISCONNECT);
            }
        }
        if self.left_early == 0 {
            Ok(())
        } else {
            Err(FailReason::ReceiverDisconnected)
        }
    }
}
