//! The producer's bytes in the native driver (the mirror of `wasm/chunks.rs`): the bounded
//! channel of wire chunks between the encoder and the upload (backpressure), progress
//! metering, and the pumps that fill the channel from an `AsyncRead` or from a
//! [`super::Writer`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};

use super::body::{send_all, Item};
use super::crypto::Encoder;
use super::stop::Stop;
use super::{lock, ProgressFn};
use crate::client::error::{source_failed, Error, ErrorCode, StopReason};
use crate::client::parts::ByteChunk;
use crate::client::rate::RateMeter;

/// Wire chunks buffered between the encoder and the request body.
pub(crate) const WIRE_CHANNEL: usize = 4;
/// Bytes read from an `AsyncRead` source at a time.
pub(crate) const READ_CHUNK: usize = 256 * 1024;

impl ByteChunk for Bytes {
    fn byte_len(&self) -> usize {
        self.len()
    }
    fn split_at(mut self, at: usize) -> (Self, Self) {
        let tail = self.split_off(at);
        (self, tail)
    }
}

/// Counts plaintext bytes and calls the progress callback when a report is due.
pub(crate) struct Meter {
    start: Instant,
    meter: Mutex<RateMeter>,
    on_progress: Option<ProgressFn>,
}

impl Meter {
    pub(crate) fn new(total: Option<u64>, on_progress: Option<ProgressFn>) -> Arc<Self> {
        Arc::new(Meter {
            start: Instant::now(),
            meter: Mutex::new(RateMeter::new(0.0, total)),
            on_progress,
        })
    }

    fn now_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    pub(crate) fn add(&self, n: usize) {
        let now = self.now_ms();
        let due = lock(&self.meter).add(n as u64, now);
        if let (Some(p), Some(cb)) = (due, &self.on_progress) {
            cb(p);
        }
    }

    /// A break is being resumed (`reconnecting`), or was (`resumed` so far): reported at once
    /// (§12.3).
    pub(crate) fn set_resume(&self, reconnecting: bool, resumed: u32) {
        let now = self.now_ms();
        let p = {
            let mut m = lock(&self.meter);
            m.set_resume(reconnecting, resumed);
            m.report(now)
        };
        if let Some(cb) = &self.on_progress {
            cb(p);
        }
    }

    /// The final report.
    pub(crate) fn finish(&self) {
        let now = self.now_ms();
        let p = lock(&self.meter).report(now);
        if let Some(cb) = &self.on_progress {
            cb(p);
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        lock(&self.meter).bytes()
    }
}

/// Reads `source` to its end into the wire channel. Every read goes out at once (a short read
/// also flushes: `tail -f | send` is real-time), so it ends the pump's work per chunk.
pub(crate) async fn pump_reader<R: AsyncRead + Unpin>(
    mut source: R,
    mut enc: Encoder,
    tx: mpsc::Sender<Item>,
    meter: Arc<Meter>,
) {
    let mut out = Vec::new();
    let r = async {
        enc.start(&tx, &mut out).await?;
        let mut buf = BytesMut::new();
        loop {
            if send_all(&tx, &mut out).await.is_err() {
                return Ok(false);
            }
            buf.reserve(READ_CHUNK);
            let n = source
                .read_buf(&mut buf)
                .await
                .map_err(|e| source_failed(&e).with_source(e))?;
            if n == 0 {
                enc.finish(&mut out)?;
                return Ok(true);
            }
            meter.add(n);
            // A short read: the source has nothing more right now, so what it gave goes out.
            // It is copied out of the read buffer: a split-off chunk would keep the whole
            // buffer alive while the replay window holds it (§12.3), several times its size.
            let chunk = if n < READ_CHUNK / 2 {
                let c = Bytes::copy_from_slice(&buf);
                buf.clear();
                c
            } else {
                buf.split().freeze()
            };
            enc.data(chunk, n < READ_CHUNK, &mut out)?;
        }
    }
    .await;
    match r {
        Ok(true) => {
            if send_all(&tx, &mut out).await.is_ok() {
                let _ = tx.send(Ok(None)).await;
            }
        }
        Ok(false) => {}
        Err(e) => {
            let _ = tx.send(Err(e)).await;
        }
    }
}

/// What a [`super::Writer`] asks of its encoder task.
pub(crate) enum Cmd {
    Data(Bytes),
    Flush(oneshot::Sender<()>),
    Finish,
    /// Cut the upload: the body fails (after the request reached the relay), so the
    /// consumer sees truncation.
    Abort(String),
}

/// The encoder task of a writer: commands in, wire chunks out; flushes by itself at most
/// `auto_flush` after plaintext was written.
pub(crate) async fn pump_commands(
    mut rx: mpsc::Receiver<Cmd>,
    mut enc: Encoder,
    tx: mpsc::Sender<Item>,
    meter: Arc<Meter>,
    auto_flush: Option<Duration>,
    stop: Stop,
) {
    let mut out = Vec::new();
    let mut deadline: Option<tokio::time::Instant> = None;
    let r: Result<(), Error> = async {
        enc.start(&tx, &mut out).await?;
        loop {
            if send_all(&tx, &mut out).await.is_err() {
                return Ok(());
            }
            let due = deadline.is_some_and(|d| d <= tokio::time::Instant::now());
            let cmd = if due {
                None
            } else {
                let sleep = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    c = rx.recv() => Some(c),
                    _ = sleep => None,
                }
            };
            match cmd {
                None => {
                    // The auto-flush deadline passed.
                    deadline = None;
                    enc.flush(&mut out)?;
                }
                Some(Some(Cmd::Data(b))) => {
                    meter.add(b.len());
                    enc.data(b, false, &mut out)?;
                    if let (Some(af), None, true) = (auto_flush, deadline, enc.pending()) {
                        deadline = Some(tokio::time::Instant::now() + af);
                    }
                }
                Some(Some(Cmd::Flush(ack))) => {
                    deadline = None;
                    enc.flush(&mut out)?;
                    if send_all(&tx, &mut out).await.is_err() {
                        return Ok(());
                    }
                    let _ = ack.send(());
                }
                Some(Some(Cmd::Abort(why))) => {
                    return Err(Error::new(
                        ErrorCode::Aborted,
                        format!("the producer aborted the stream: {why}"),
                    ));
                }
                Some(Some(Cmd::Finish)) => {
                    enc.finish(&mut out)?;
                    if send_all(&tx, &mut out).await.is_ok() {
                        let _ = tx.send(Ok(None)).await;
                    }
                    return Ok(());
                }
                Some(None) => {
                    // Dropped without finish() or abort(): the consumer must see a cut.
                    stop.stop(
                        StopReason::User,
                        Some("the writer was dropped without finish()".into()),
                    );
                    return Ok(());
                }
            }
        }
    }
    .await;
    if let Err(e) = r {
        let _ = tx.send(Err(e)).await;
    }
}
