//! Data API (`docs/PROTOCOL.md` §3, §4): `POST`/`PUT /{path}` produce, `GET /{path}` consumes.
//!
//! - [`stream`]: a producer with one streaming body: registers, answers with the live status
//!   log, and feeds its upload to the transfer.
//! - [`segmented`]: a producer sending numbered parts (§4).
//! - [`transfer`]: the one transfer lifecycle both feed: consumers' responses, backpressure
//!   (the slowest consumer throttles all), status lines, metrics, tracing.
//! - [`consumer`]: registers and waits; its response starts when the transfer starts.
//! - [`body`]: the two streaming response bodies (status log, relayed bytes).
//! - [`direct`]: a lone consumer's response reading the streaming upload itself.
//! - [`source`]: the streaming producer's upload: the raw body (read ahead while waiting,
//!   beyond 64 KiB on a loan from the relay-wide pool, §3.6) or a multipart first part.
//! - [`headers`]: which request headers the consumers get (§3.3).
//!
//! Handlers take the [`Plane`]: what the Data API uses of the relay, nothing else.

pub mod body;
pub mod consumer;
pub(crate) mod direct;
pub mod headers;
pub mod segmented;
pub mod source;
pub mod stream;
pub(crate) mod transfer;

use std::sync::Arc;
use std::time::Duration;

use httpipe::protocol::control::Rejection;
use tokio::sync::{oneshot, watch};

use crate::metrics::Metrics;
use crate::pairing::Hub;

/// What a consumer hands to the pairing table: the producer sends the consumer its response
/// through `tx` when the transfer starts (or the refusal, when the producer withdrew: §3.10);
/// `ack` tells, at the end, whether the consumer received every byte (§3.2).
pub struct Handoff {
    pub tx: oneshot::Sender<Result<Start, Rejection>>,
    pub ack: Ack,
}

/// How the relay learns that a consumer received every byte of its response (§3.2, §13.3).
#[derive(Clone)]
pub enum Ack {
    /// Nothing to inspect (not a TCP connection): the response's end counts.
    Ended,
    /// The consumer's TCP connection acknowledged every byte up to the response's end. `h1`:
    /// an HTTP/1.1 connection (else HTTP/2).
    Tcp {
        conn: Arc<crate::conn::ConnFd>,
        h1: bool,
    },
    /// A consumer forwarded by another node of a cluster: that node's confirmation, the end of
    /// the request body it keeps open (§13.3). `Some(true)`: confirmed; `Some(false)`: the
    /// forwarded connection closed first.
    Hop(watch::Receiver<Option<bool>>),
}

impl Ack {
    /// A forwarded consumer's acknowledgement: `body` (its request body) is read to its end in
    /// a task of its own, since the consumer may wait and be matched more than once.
    pub fn confirmed_by(mut body: crate::request_body::RequestBody) -> Ack {
        use http_body_util::BodyExt;
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let ended = loop {
                match body.frame().await {
                    None => break true,
                    Some(Ok(_)) => continue,
                    Some(Err(_)) => break false,
                }
            };
            if !ended {
                body.cut();
            }
            tracing::debug!(confirmed = ended, "forwarded consumer's delivery");
            let _ = tx.send(Some(ended));
        });
        Ack::Hop(rx)
    }

    /// Called when the consumer's response body ends, having yielded `data` bytes (see
    /// [`crate::conn::ConnFd::end_h1`], [`crate::conn::ConnFd::end_h2`]): what
    /// [`Ack::received`] waits on.
    pub fn end(&self, data: u64) -> Ending {
        match self {
            Ack::Tcp { conn, h1: true } => Ending(Some(conn.end_h1())),
            Ack::Tcp { conn, h1: false } => Ending(Some(conn.end_h2(data))),
            _ => Ending(None),
        }
    }

    /// Waits until the consumer has received everything sent to it (`true`) or can't anymore.
    /// Called once its response has ended, with what [`Ack::end`] noted then. No timeout (a
    /// consumer that stops reading holds the transfer open, as it does mid-stream).
    pub async fn received(&self, ending: Ending) -> bool {
        match self {
            Ack::Ended => true,
            Ack::Tcp { .. } => match ending.0 {
                Some(end) => end.delivered().await,
                None => false,
            },
            Ack::Hop(rx) => {
                let mut rx = rx.clone();
                let ok = match rx.wait_for(Option::is_some).await {
                    Ok(v) => *v == Some(true),
                    Err(_) => false,
                };
                ok
            }
        }
    }
}

/// What a consumer's response body noted when it ended, for [`Ack::received`]: where the
/// response ended in its TCP connection (§3.2), when that is watched.
pub struct Ending(Option<crate::conn::End>);

/// The start of a consumer's response: forwarded headers and the relayed bytes.
pub struct Start {
    pub headers: http::HeaderMap,
    pub body: body::ConsumerBody,
}

/// Where a Data API request meets its peers (§3.1, §5.1): the stream path, the Data API
/// channel if `channel=ID` was given (it then meets only requests with the same channel on
/// the same path, never a Connect caller nor a request without channel: PROTOCOL.md §5.1
/// "Data API channels"), and the number of consumers `n`; and who asks (the client address
/// its waiting counts against, §9) and, for a consumer on pipe `a` of a code channel, that it
/// never waits (§14.5 rule 2).
#[derive(Debug, Clone)]
pub struct Meet {
    pub path: String,
    pub channel: Option<String>,
    pub n: usize,
    pub client: Option<crate::crowd::Client>,
    /// A consumer registers only if a producer waits (else `no-sender`, §14.5 rule 2).
    pub producer_first: bool,
}

impl Meet {
    /// A place among the waiting peers of this request's address (§9): held while it waits.
    pub fn wait(&self, plane: &Plane) -> Result<Option<crate::crowd::Hold>, Rejection> {
        plane.crowd.wait(self.client)
    }

    /// Registers a producer in the pairing table at this meeting point, holding a place among
    /// its address's waiting peers (§9) until it is matched or gone.
    fn producer(&self, plane: &Plane) -> Result<Producer, Rejection> {
        let place = self.wait(plane)?;
        let wait = plane
            .hub
            .producer(&self.path, self.channel.as_deref(), self.n)?;
        Ok(Producer {
            wait,
            _place: place,
        })
    }
}

/// A waiting producer: its registration and its address's place (§9); dropping it gives both
/// back.
pub struct Producer {
    wait: crate::pairing::ProducerWait<Handoff>,
    _place: Option<crate::crowd::Hold>,
}

impl Producer {
    /// Resolves when its consumers are present ([`crate::pairing::ProducerWait::matched`]).
    pub async fn matched(&mut self) -> crate::pairing::Match<Handoff> {
        self.wait.matched().await
    }
}

/// Limits of the Data API (from the relay's configuration).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest segmented part (§4), bytes.
    pub max_part_bytes: usize,
    /// A segmented upload without a part for this long is dropped (§4).
    pub upload_gap_timeout: Duration,
    /// Per-address limits (§9, §14.5).
    pub crowd: crate::crowd::CrowdLimits,
}

/// Where the relay is in its life (§9 shutdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Serving,
    /// No new connections; waiting peers are sent away with 503, transfers may finish.
    Draining,
    /// The grace period is over: transfers still running are aborted with an `[ERROR]` line.
    Aborting,
}

/// The Data API's share of the relay: the pairing table, segmented uploads, metrics, limits.
pub struct Plane {
    pub hub: Hub<Handoff>,
    /// What each client address holds (§9 "Per-address limits", §14.5).
    pub crowd: Arc<crate::crowd::Crowd>,
    pub(crate) uploads: segmented::Uploads,
    /// Memory lent to waiting producers' read-ahead (§3.6).
    pub(crate) read_ahead: source::ReadAheadPool,
    pub metrics: Arc<Metrics>,
    pub limits: Limits,
    /// Paths may be secrets (auth mode): logs show a hash (§9).
    hashed_paths: bool,
    phase: watch::Sender<Phase>,
}

impl Plane {
    pub fn new(metrics: Arc<Metrics>, limits: Limits, hashed_paths: bool) -> Arc<Plane> {
        Arc::new(Plane {
            hub: Hub::new(),
            crowd: crate::crowd::Crowd::new(limits.crowd),
            uploads: segmented::Uploads::default(),
            read_ahead: source::ReadAheadPool::default(),
            metrics,
            limits,
            hashed_paths,
            phase: watch::Sender::new(Phase::Serving),
        })
    }

    /// Moves the relay to `phase` (forward only).
    pub fn enter(&self, phase: Phase) {
        self.phase.send_if_modified(|p| {
            let later = phase > *p;
            if later {
                *p = phase;
            }
            later
        });
    }

    /// Resolves once the relay is at `phase` or later.
    pub async fn reached(&self, phase: Phase) {
        let mut rx = self.phase.subscribe();
        let _ = rx.wait_for(|p| *p >= phase).await;
    }

    /// A stream path as it may appear in logs (§9): truncated in open mode, hashed in auth
    /// mode (paths may be secrets there).
    pub fn log_path(&self, path: &str) -> String {
        if self.hashed_paths {
            use sha2::{Digest, Sha256};
            let h = Sha256::digest(path.as_bytes());
            format!("sha256:{}", hex::encode(&h[..8]))
        } else if path.len() > 64 {
            let mut end = 64;
            while !path.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}...", &path[..end])
        } else {
            path.to_string()
        }
    }
}
