//! The log-style producer of [`super::Client::open_writer`]: a [`Writer`] whose writes,
//! flushes and finish become commands to the producer's driver ([`super::send`]), which makes
//! every protocol decision through the core as `send` does.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::poll_fn;
use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::PollSender;

use super::chunks::{self, Cmd};
use super::send::{prepare, report, with_pump, Prepared, StopOnDrop};
use super::stop::Stop;
use super::{io_error, SendOptions, SendReport};
use crate::client::error::{Error, ErrorCode, StopReason};
use crate::client::producer::Step;

/// Writer commands buffered before `write_all` waits.
const CMD_CHANNEL: usize = 4;
/// A write is handed to the encoder in pieces of at most this many bytes.
const PIECE: usize = 256 * 1024;

/// `Client::open_writer`.
pub(crate) async fn open_writer(
    http: &reqwest::Client,
    opts: SendOptions,
) -> Result<Writer, Error> {
    let started = Instant::now();
    let Prepared {
        mut driver,
        encoder,
        meter,
        tx,
        stop,
    } = prepare(http, &opts).await?;
    // The rendezvous happens here, so the writer exists once the consumer does: every call of
    // it, as long as the core asks for the next one.
    let mut first = driver.poll();
    while let Step::Rendezvous(req) = first {
        driver.rendezvous(&req).await;
        first = driver.poll();
    }
    if let Step::Failed(e) = first {
        return Err(e);
    }
    let (cmd_tx, cmd_rx) = mpsc::channel(CMD_CHANNEL);
    let task_stop = stop.clone();
    // tracked: a program that exits after dropping the writer waits for its last words
    let task = super::http::spawn_finishing(async move {
        let _guard = StopOnDrop(task_stop.clone());
        let pump = chunks::pump_commands(
            cmd_rx,
            encoder,
            tx,
            meter.clone(),
            opts.auto_flush,
            task_stop,
        );
        let r = with_pump(pump, driver.run(Some(first))).await;
        driver.source.close();
        report(r, started, &meter)
    })
    .ok_or_else(|| Error::usage("open_writer runs on a tokio runtime"))?;
    Ok(Writer {
        tx: PollSender::new(cmd_tx),
        task: Some(task),
        outcome: None,
        flush_wait: None,
        finishing: false,
        stop,
    })
}

/// How long [`Writer::abort`] waits for the upload to be cut before it stops it outright.
pub const ABORT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A log-style producer from [`super::Client::open_writer`]: write, flush, finish.
///
/// - [`write_all`](Writer::write_all) waits while the relay or the consumer is slower
///   (backpressure: a few chunks are buffered, whatever the size).
/// - [`flush`](Writer::flush): what was written goes on the wire now (age-rt: as one record;
///   age v1 can only send whole 64 KiB chunks). With `auto_flush`, written bytes are flushed
///   at most that long after they were written.
/// - [`finish`](Writer::finish) ends the stream and resolves once the relay confirmed
///   `[STATE:TRANSFER_SUCCESSFUL]` and, when the consumer sends receipts, its receipt came
///   (`PROTOCOL.md` §12). A break is resumed meanwhile when both sides resume (§12.3).
/// - [`abort`](Writer::abort), or dropping the writer without `finish`: the consumer sees a
///   truncated stream (`TRUNCATED`), never a clean end.
///
/// Also a [`tokio::io::AsyncWrite`] (`poll_shutdown` = `finish`); its errors carry the
/// [`Error`] (see [`super::error_of`]).
///
/// # Errors
///
/// After the transfer failed, every call returns its error: `PEER_DISCONNECTED` (the consumer
/// left: seen soon after, on the next write or flush, or at once by
/// [`closed`](Writer::closed)), `NETWORK`, `RELAY_ERROR`, `ABORTED`,
/// `UNSUPPORTED` (encryption failed, or a call after `finish`).
pub struct Writer {
    tx: PollSender<Cmd>,
    task: Option<JoinHandle<Result<SendReport, Error>>>,
    outcome: Option<Result<SendReport, Error>>,
    flush_wait: Option<oneshot::Receiver<()>>,
    finishing: bool,
    stop: Stop,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("finishing", &self.finishing)
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

fn finished_error() -> Error {
    Error::usage("the writer was already finished")
}

impl Writer {
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<SendReport, Error>> {
        if let Some(o) = &self.outcome {
            return Poll::Ready(o.clone());
        }
        let Some(task) = self.task.as_mut() else {
            return Poll::Ready(Err(finished_error()));
        };
        let r = match ready!(Pin::new(task).poll(cx)) {
            Ok(r) => r,
            Err(e) => Err(Error::new(
                ErrorCode::Unsupported,
                format!("the send task failed: {e}"),
            )),
        };
        self.task = None;
        self.outcome = Some(r.clone());
        Poll::Ready(r)
    }

    /// Room for one more command, or the transfer's error.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        match &self.outcome {
            Some(Err(e)) => return Poll::Ready(Err(e.clone())),
            Some(Ok(_)) => return Poll::Ready(Err(finished_error())),
            None if self.finishing => return Poll::Ready(Err(finished_error())),
            None => {}
        }
        match ready!(self.tx.poll_reserve(cx)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(_) => {
                let r = ready!(self.poll_outcome(cx));
                Poll::Ready(Err(r.err().unwrap_or_else(finished_error)))
            }
        }
    }

    fn send_cmd(&mut self, cmd: Cmd) -> Result<(), Error> {
        self.tx.send_item(cmd).map_err(|_| finished_error())
    }

    fn poll_write_piece(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<Result<usize, Error>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        ready!(self.poll_ready(cx))?;
        let n = buf.len().min(PIECE);
        self.send_cmd(Cmd::Data(Bytes::copy_from_slice(&buf[..n])))?;
        Poll::Ready(Ok(n))
    }

    fn poll_flush_inner(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.finishing {
            return self.poll_outcome(cx).map(|r| r.map(|_| ()));
        }
        if self.flush_wait.is_none() {
            ready!(self.poll_ready(cx))?;
            let (tx, rx) = oneshot::channel();
            self.send_cmd(Cmd::Flush(tx))?;
            self.flush_wait = Some(rx);
        }
        let Some(rx) = self.flush_wait.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let acked = ready!(Pin::new(rx).poll(cx));
        self.flush_wait = None;
        match acked {
            Ok(()) => Poll::Ready(Ok(())),
            Err(_) => {
                let r = ready!(self.poll_outcome(cx));
                Poll::Ready(Err(r.err().unwrap_or_else(finished_error)))
            }
        }
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<SendReport, Error>> {
        if !self.finishing && self.outcome.is_none() {
            ready!(self.poll_ready(cx))?;
            self.send_cmd(Cmd::Finish)?;
            self.finishing = true;
            self.tx.close();
        }
        self.poll_outcome(cx)
    }

    /// Writes all of `buf` (any size: it is encrypted and sent in pieces).
    ///
    /// # Errors
    ///
    /// The transfer's error once it failed (`PEER_DISCONNECTED`, `NETWORK`, ...); `UNSUPPORTED`
    /// after `finish`.
    pub async fn write_all(&mut self, mut buf: &[u8]) -> Result<(), Error> {
        while !buf.is_empty() {
            let n = poll_fn(|cx| self.poll_write_piece(cx, buf)).await?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// [`write_all`](Writer::write_all) for bytes the caller owns: passed on in pieces without
    /// a copy.
    ///
    /// # Errors
    ///
    /// As [`write_all`](Writer::write_all).
    pub async fn write_bytes(&mut self, mut data: Bytes) -> Result<(), Error> {
        while !data.is_empty() {
            poll_fn(|cx| self.poll_ready(cx)).await?;
            let piece = data.split_to(data.len().min(PIECE));
            self.send_cmd(Cmd::Data(piece))?;
        }
        Ok(())
    }

    /// Sends what was written so far now: plain bytes at once; age-rt as one record; age v1
    /// only whole chunks (a partial chunk can't be sent before the end).
    ///
    /// # Errors
    ///
    /// As [`write_all`](Writer::write_all).
    pub async fn flush(&mut self) -> Result<(), Error> {
        poll_fn(|cx| self.poll_flush_inner(cx)).await
    }

    /// Ends the stream; `Ok` only after the relay confirmed `[STATE:TRANSFER_SUCCESSFUL]`
    /// (every byte handed to the consumer) and, when the consumer sends receipts, its valid
    /// receipt came ([`SendReport::receipt`], §12.2).
    ///
    /// # Errors
    ///
    /// The transfer's error: `PEER_DISCONNECTED`, `UNCONFIRMED`, `NETWORK`, `RELAY_ERROR`, ...
    pub async fn finish(mut self) -> Result<SendReport, Error> {
        poll_fn(|cx| self.poll_finish(cx)).await
    }

    /// Resolves once the transfer has failed, with its error — what the next write would
    /// return, for a caller whose source may be quiet for long (a `tail -f` of a quiet log)
    /// and so would learn it only when its next bytes come. A break that may still be resumed
    /// (`PROTOCOL.md` §12.3) is not a failure: it resolves when the resume time ran out. Never
    /// resolves while the transfer goes on; cancel-safe (drop it to write again).
    ///
    /// # Errors
    ///
    /// None of its own: the output *is* the transfer's error (`PEER_DISCONNECTED`, `NETWORK`,
    /// `RELAY_ERROR`, ...), or `UNSUPPORTED` after `finish`.
    pub async fn closed(&mut self) -> Error {
        if self.finishing {
            return finished_error();
        }
        match poll_fn(|cx| self.poll_outcome(cx)).await {
            Ok(_) => finished_error(),
            Err(e) => e,
        }
    }

    /// Aborts the transfer and waits (at most `ABORT_WAIT`) until the upload is cut and the
    /// last words are said, so the consumer gets `TRUNCATED`, never a clean end — and never
    /// waits forever for an upload that was aborted before it reached the relay: the request
    /// is still made, and its body fails (a streaming upload), or the upload is abandoned
    /// (a segmented one, `PROTOCOL.md` §4 "Abandoning"). `reason` is for messages only.
    pub async fn abort(mut self, reason: &str) {
        let queued = self.outcome.is_none()
            && !self.finishing
            && poll_fn(|cx| self.tx.poll_reserve(cx)).await.is_ok()
            && self.send_cmd(Cmd::Abort(reason.to_string())).is_ok();
        if queued {
            let _ = tokio::time::timeout(ABORT_WAIT, poll_fn(|cx| self.poll_outcome(cx))).await;
        }
        self.stop.stop(StopReason::User, Some(reason.to_string()));
    }
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_piece(cx, buf).map_err(io_error)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_inner(cx).map_err(io_error)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut()
            .poll_finish(cx)
            .map(|r| r.map(|_| ()).map_err(io_error))
    }
}

impl Drop for Writer {
    /// Dropped before its outcome was known (the program gave up, e.g. on Ctrl-C, also while
    /// `finish` waited for the receipt): the transfer is aborted, so that its driver says its
    /// last words (a failure notice, a withdrawal, or — every byte delivered — its end, §12.2)
    /// instead of waiting on for a receipt nobody will take.
    fn drop(&mut self) {
        if self.outcome.is_none() {
            self.stop
                .stop(StopReason::User, Some("the writer was dropped".into()));
        }
    }
}
