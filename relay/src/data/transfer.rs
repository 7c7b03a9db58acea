//! One transfer's lifecycle, shared by both producer kinds (`docs/PROTOCOL.md` §3.2, §3.3,
//! §4, §9): the streaming upload ([`super::stream`]) and the segmented one
//! ([`super::segmented`]) feed bytes in; this owns everything else: the consumers' responses,
//! backpressure, the producer's status lines, the metrics and the tracing lines, and keeping
//! the path busy until the end.
//!
//! A `Transfer` always ends exactly once: [`Transfer::finish`] (clean end), [`Transfer::fail`]
//! or, if it is dropped without either (its task was cancelled), as failed with
//! [`FailReason::ProducerAborted`]. So every started transfer is counted completed or failed,
//! and the segmented-uploads gauge can't leak.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header;
use http::HeaderMap;
use httpipe::protocol::control::{self, failure_line};
use tokio::sync::{mpsc, oneshot};

use super::body::{ConsumerBody, Feed, Log, Msg};
use super::direct::{direct, DirectBytes, DirectCut, DirectEnd, DirectFeed};
use super::source::Source;
use super::{Handoff, Plane, Start};
use crate::metrics::FailReason;
use crate::pairing::{self, Match};

/// Which producer kind feeds the transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One streaming request body (§3).
    Stream,
    /// Numbered parts (§4).
    Segmented,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Stream => "stream",
            Kind::Segmented => "segmented",
        }
    }
}

/// How a streaming upload reaches the consumers, as [`Transfer::start_streaming`] set it up.
pub(crate) enum Feeding {
    /// The caller reads the source and hands each chunk to [`Transfer::send`].
    Pumped(Source),
    /// The one consumer's response reads the source itself ([`super::direct`]) and says here
    /// how that ended.
    Direct(oneshot::Receiver<DirectEnd>),
}

/// How the transfer reaches one consumer's response.
enum SinkFeed {
    Channel(mpsc::Sender<Msg>),
    /// Dropped, it cuts the response.
    Direct {
        cut: DirectCut,
    },
}

/// A lone consumer's direct feed of the upload ([`super::direct`]) and the transfer's ends of
/// it: what [`Transfer::begin`] hands that consumer's response.
struct LoneFeed {
    feed: DirectFeed,
    cut: DirectCut,
    bytes: DirectBytes,
}

/// One consumer's response as seen by the transfer.
struct Sink {
    feed: SinkFeed,
    /// What the consumer's body noted when it ended.
    done: oneshot::Receiver<super::Ending>,
    /// How the consumer's receipt of every byte is known at the end (§3.2).
    ack: super::Ack,
    /// `done` already fired (observed with `try_recv`), with this.
    finished: Option<super::Ending>,
}

/// A transfer in progress: from the match of producer and consumers to its one end.
pub(crate) struct Transfer {
    plane: Arc<Plane>,
    kind: Kind,
    log: Log,
    /// Holds the path busy (§3.6); dropped at the end, before the last line is logged.
    busy: Option<pairing::Transfer<Handoff>>,
    sinks: Vec<Option<Sink>>,
    gone: mpsc::UnboundedReceiver<usize>,
    left_early: usize,
    log_path: String,
    started: Instant,
    /// Bytes handed to [`Transfer::send`].
    bytes: u64,
    /// What a direct feed relayed.
    direct: Option<DirectBytes>,
    ended: bool,
}

impl Transfer {
    /// Starts a segmented upload's transfer: the caller feeds it part by part.
    pub(crate) fn start(
        plane: &Arc<Plane>,
        matched: Match<Handoff>,
        forwarded: HeaderMap,
        log: Log,
        path: &str,
    ) -> Transfer {
        Transfer::begin(plane, matched, forwarded, log, Kind::Segmented, path, None)
    }

    /// Starts a streaming upload's transfer from `source`: a lone consumer's response reads
    /// it directly ([`super::direct`]); for several, the caller pumps it.
    pub(crate) fn start_streaming(
        plane: &Arc<Plane>,
        matched: Match<Handoff>,
        forwarded: HeaderMap,
        log: Log,
        path: &str,
        source: Source,
    ) -> (Transfer, Feeding) {
        if matched.consumers.len() != 1 {
            let t = Transfer::begin(plane, matched, forwarded, log, Kind::Stream, path, None);
            return (t, Feeding::Pumped(source));
        }
        let (feed, hold) = direct(source, plane.metrics.clone());
        let lone = Some(LoneFeed {
            feed,
            cut: hold.cut,
            bytes: hold.bytes,
        });
        let t = Transfer::begin(plane, matched, forwarded, log, Kind::Stream, path, lone);
        (t, Feeding::Direct(hold.told))
    }

    /// Starts every consumer's response (forwarded headers now, bytes as they come) and logs
    /// the start (§3.2); the first consumer's response reads `direct` when given.
    fn begin(
        plane: &Arc<Plane>,
        matched: Match<Handoff>,
        forwarded: HeaderMap,
        log: Log,
        kind: Kind,
        path: &str,
        mut direct: Option<LoneFeed>,
    ) -> Transfer {
        let Match {
            consumers,
            transfer,
        } = matched;
        let (gone_tx, gone) = mpsc::unbounded_channel();
        let length = forwarded
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let n = consumers.len();
        let mut sinks = Vec::with_capacity(n);
        let mut direct_bytes = None;
        for (i, handoff) in consumers.into_iter().enumerate() {
            let (feed, sink_feed) = match direct.take() {
                Some(LoneFeed { feed, cut, bytes }) => {
                    direct_bytes = Some(bytes);
                    (Feed::Direct(feed), SinkFeed::Direct { cut })
                }
                None => {
                    let (tx, rx) = mpsc::channel(1);
                    (Feed::Channel(rx), SinkFeed::Channel(tx))
                }
            };
            let (done_tx, done) = oneshot::channel();
            let ack = handoff.ack;
            let body = ConsumerBody::new(feed, done_tx, ack.clone(), (gone_tx.clone(), i), length);
            // If the consumer left this instant, the body drops inside and reports `gone`.
            let _ = handoff.tx.send(Ok(Start {
                headers: forwarded.clone(),
                body,
            }));
            sinks.push(Some(Sink {
                feed: sink_feed,
                done,
                ack,
                finished: None,
            }));
            log.line("[INFO] A receiver was connected.");
        }
        log.line(format!("[INFO] Start sending to {n} receiver(s)!"));
        plane.metrics.transfer_started();
        if kind == Kind::Segmented {
            plane.metrics.segmented_started();
        }
        let log_path = plane.log_path(path);
        tracing::info!(path = %log_path, receivers = n, kind = kind.as_str(), "transfer start");
        Transfer {
            plane: plane.clone(),
            kind,
            log,
            busy: Some(transfer),
            sinks,
            gone,
            left_early: 0,
            log_path,
            started: Instant::now(),
            bytes: 0,
            direct: direct_bytes,
            ended: false,
        }
    }

    /// Bytes relayed: handed to [`Transfer::send`], and by a direct feed.
    fn relayed(&self) -> u64 {
        self.bytes + self.direct.as_ref().map_or(0, DirectBytes::get)
    }

    /// Consumers still connected.
    pub(crate) fn alive(&self) -> usize {
        self.sinks.iter().filter(|s| s.is_some()).count()
    }

    /// Notes every consumer that hung up since the last call.
    pub(crate) fn reap_gone(&mut self) {
        while let Ok(i) = self.gone.try_recv() {
            self.drop_sink(i);
        }
    }

    /// Resolves when a consumer hangs up (noted, with its status line). Cancel-safe.
    pub(crate) async fn consumer_left(&mut self) {
        if let Some(i) = self.gone.recv().await {
            self.drop_sink(i);
        } else {
            std::future::pending::<()>().await;
        }
    }

    fn drop_sink(&mut self, i: usize) {
        if let Some(slot) = self.sinks.get_mut(i) {
            if slot.take().is_some() {
                self.left_early += 1;
                self.log.line(control::RECEIVER_PREMATURE_DISCONNECT);
            }
        }
    }

    /// Hands `bytes` to every consumer still there, waiting for room in each (backpressure:
    /// the slowest consumer throttles all). `Err` when no consumer is left. Not cancel-safe
    /// (a cancelled call may have reached some consumers only): callers that can be cancelled
    /// run it in a task of its own (see [`super::segmented`]).
    pub(crate) async fn send(&mut self, bytes: Bytes) -> Result<(), FailReason> {
        let len = bytes.len() as u64;
        self.bytes += len;
        for i in 0..self.sinks.len() {
            let Some(sink) = &self.sinks[i] else { continue };
            let SinkFeed::Channel(tx) = &sink.feed else {
                // A direct feed's response ended at its Content-Length: nothing more fits.
                self.drop_sink(i);
                continue;
            };
            if tx.send(Msg::Data(bytes.clone())).await.is_err() {
                self.drop_sink(i);
            } else {
                self.plane.metrics.relayed(len);
            }
        }
        if self.alive() == 0 {
            Err(FailReason::ReceiverDisconnected)
        } else {
            Ok(())
        }
    }

    /// Clean end of the upload: end every response, free the path, wait until every consumer
    /// has received the end, then log the verdict (§3.2).
    pub(crate) async fn finish(mut self) -> Result<(), FailReason> {
        for i in 0..self.sinks.len() {
            let Some(sink) = &mut self.sinks[i] else {
                continue;
            };
            // A direct feed's response ends by itself: its end is awaited below.
            let SinkFeed::Channel(tx) = &sink.feed else {
                continue;
            };
            // A body that reached its Content-Length may be gone already, having finished.
            if tx.send(Msg::End).await.is_err() {
                if let Ok(ending) = sink.done.try_recv() {
                    sink.finished = Some(ending);
                } else {
                    self.drop_sink(i);
                }
            }
        }
        self.busy.take(); // the path is free again
        for sink in self.sinks.iter().flatten() {
            if let SinkFeed::Direct { cut } = &sink.feed {
                cut.release(); // its response may end now
            }
        }
        let sinks = std::mem::take(&mut self.sinks);
        // Every consumer's response ended (hyper has the last byte), then its connection
        // acknowledged every byte up to that end (§3.2: the bytes reached the consumer's TCP
        // stack).
        let received = sinks.into_iter().flatten().map(|sink| async move {
            let ending = match sink.finished {
                Some(e) => e,
                None => match sink.done.await {
                    Ok(e) => e,
                    Err(_) => return false,
                },
            };
            sink.ack.received(ending).await
        });
        for ok in futures_util::future::join_all(received).await {
            if !ok {
                self.left_early += 1;
                self.log.line(control::RECEIVER_PREMATURE_DISCONNECT);
            }
        }
        if self.left_early > 0 {
            self.end(Err(FailReason::ReceiverDisconnected));
            return Err(FailReason::ReceiverDisconnected);
        }
        self.end(Ok(()));
        Ok(())
    }

    /// Ends the transfer as failed: the consumers' responses are aborted (truncation, §3.3),
    /// the path is free, the producer gets the reason's `[ERROR]` line.
    pub(crate) fn fail(mut self, reason: FailReason) {
        self.end(Err(reason));
    }

    fn end(&mut self, outcome: Result<(), FailReason>) {
        if self.ended {
            return;
        }
        self.ended = true;
        // The path is free before a consumer can see its response cut.
        self.busy.take();
        // No `Msg::End`: closing the channels aborts the responses still running.
        self.sinks.clear();
        let m = &self.plane.metrics;
        if self.kind == Kind::Segmented {
            m.segmented_ended();
        }
        let ms = self.started.elapsed().as_millis() as u64;
        let (path, bytes) = (&self.log_path, self.relayed());
        match outcome {
            Ok(()) => {
                self.log.line("[INFO] Sent successfully!");
                self.log
                    .line("[INFO] All receiver(s) was/were received successfully.");
                self.log.line(control::TRANSFER_SUCCESSFUL);
                m.completed();
                tracing::info!(%path, bytes, ms, kind = self.kind.as_str(), "transfer end: ok");
            }
            Err(reason) => {
                match reason {
                    // one line per consumer that left was logged already
                    FailReason::ReceiverDisconnected => {}
                    FailReason::ProducerAborted | FailReason::BadUpload => {
                        self.log.line(failure_line::UPLOAD_FAILED)
                    }
                    FailReason::UploadGapTimeout => self.log.line(failure_line::UPLOAD_GAP_TIMEOUT),
                    FailReason::Shutdown => self.log.line(failure_line::SHUTTING_DOWN),
                }
                m.failed(reason);
                tracing::info!(%path, bytes, ms, kind = self.kind.as_str(), reason = reason.as_str(), "transfer end: failed");
            }
        }
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        // Dropped without an end (its task was cancelled): the upload is gone.
        self.end(Err(FailReason::ProducerAborted));
    }
}
