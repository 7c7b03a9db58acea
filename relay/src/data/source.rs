//! The producer's upload as a sequence of byte chunks.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use crate::request_body::RequestBody;
use bytes::Bytes;
use futures_util::StreamExt;
use http_body::Body;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How much of every waiting producer's upload is read ahead on its own. Reading is how
/// hyper notices a closed HTTP/1.1 connection, so a waiting producer that hangs up frees its
/// path at once (§3.6) as long as it had sent less than this.
const READ_AHEAD_BYTES: usize = 64 * 1024;
/// How much of one waiting producer's upload is read ahead at most, the rest of it lent by the
/// relay-wide [`ReadAheadPool`] (§3.6): a sender that closes with unsent bytes can be seen to
/// be gone only once its FIN reaches the relay, behind every byte it wrote. Reading ahead this
/// much (and the relay's socket buffer beyond it) lets a killed `curl -T file` of up to about
/// this size free its path.
const READ_AHEAD_MAX: usize = 16 * 1024 * 1024;
/// What every waiting producer together may hold beyond their own [`READ_AHEAD_BYTES`]: the
/// relay's memory bound for uploads nobody receives yet.
const READ_AHEAD_POOL: usize = 64 * 1024 * 1024;
/// The pool lends in steps of this many bytes (a read may pass its loan by one chunk).
const READ_AHEAD_STEP: u32 = 1024 * 1024;

/// The relay's pool of read-ahead memory for waiting producers ([`READ_AHEAD_POOL`] bytes,
/// one permit per byte).
#[derive(Clone)]
pub struct ReadAheadPool(Arc<Semaphore>);

impl Default for ReadAheadPool {
    fn default() -> Self {
        ReadAheadPool(Arc::new(Semaphore::new(READ_AHEAD_POOL)))
    }
}

impl ReadAheadPool {
    /// The pool's gauge in the Prometheus text format (`/metrics`).
    pub fn metrics(&self) -> String {
        let lent = READ_AHEAD_POOL - self.0.available_permits();
        format!(
            "# HELP httpipe_read_ahead_bytes Read-ahead memory lent to waiting uploads, bytes (the pool holds {READ_AHEAD_POOL}).\n\
             # TYPE httpipe_read_ahead_bytes gauge\nhttpipe_read_ahead_bytes {lent}\n"
        )
    }
}

/// The raw request body with a read-ahead queue.
pub struct Upload {
    body: RequestBody,
    queue: VecDeque<Bytes>,
    queued: usize,
    ended: bool,
    /// An error seen by [`Upload::prime`], reported by the next read.
    error: Option<hyper::Error>,
    pool: ReadAheadPool,
    /// What the pool lent for the queue beyond [`READ_AHEAD_BYTES`]; repaid as it drains.
    loan: Option<OwnedSemaphorePermit>,
}

impl Upload {
    pub fn new(body: RequestBody, pool: ReadAheadPool) -> Self {
        Upload {
            body,
            queue: VecDeque::new(),
            queued: 0,
            ended: false,
            error: None,
            pool,
            loan: None,
        }
    }

    fn loaned(&self) -> usize {
        self.loan
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits)
    }

    /// Gives back to the pool what the queue no longer needs.
    fn repay(&mut self) {
        let owed = self.queued.saturating_sub(READ_AHEAD_BYTES);
        let Some(loan) = &mut self.loan else { return };
        let spare = loan.num_permits().saturating_sub(owed);
        if spare == loan.num_permits() {
            self.loan = None;
        } else if spare > 0 {
            drop(loan.split(spare));
        }
    }

    /// Polls the body exactly once, without waiting. On HTTP/1.1 this makes hyper send
    /// `100 Continue` to a client that sent `Expect: 100-continue`, provided the caller then
    /// yields before returning its response (curl ignores a final response in place of the
    /// 100 and would stall 1 s).
    pub async fn prime(&mut self) {
        let polled =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut self.body).poll_frame(cx))).await;
        match polled {
            Poll::Pending => {}
            Poll::Ready(None) => self.ended = true,
            Poll::Ready(Some(Err(e))) => self.error = Some(e),
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    if !data.is_empty() {
                        self.queued += data.len();
                        self.queue.push_back(data);
                    }
                }
            }
        }
    }

    /// Polls the body for its next data (skipping empty and trailer frames); an error seen by
    /// [`Upload::prime`] first.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, hyper::Error>> {
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        loop {
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                None => {
                    self.ended = true;
                    return Poll::Ready(Ok(None));
                }
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Poll::Ready(Ok(Some(data)));
                        }
                    }
                }
            }
        }
    }

    async fn read(&mut self) -> Result<Option<Bytes>, hyper::Error> {
        std::future::poll_fn(|cx| self.poll_read(cx)).await
    }

    /// Reads ahead [`READ_AHEAD_BYTES`], then up to [`READ_AHEAD_MAX`] as the pool lends
    /// (waiting for a loan while it is spent); returns only if the upload fails (the producer
    /// is gone). Cancel-safe.
    pub async fn read_ahead(&mut self) -> hyper::Error {
        loop {
            if self.ended || self.queued >= READ_AHEAD_MAX {
                return std::future::pending().await;
            }
            if self.queued >= READ_AHEAD_BYTES + self.loaned() {
                let pool = self.pool.0.clone();
                let Ok(more) = pool.acquire_many_owned(READ_AHEAD_STEP).await else {
                    return std::future::pending().await; // never closed
                };
                match &mut self.loan {
                    Some(loan) => loan.merge(more),
                    None => self.loan = Some(more),
                }
                continue;
            }
            match self.read().await {
                Ok(Some(b)) => {
                    self.queued += b.len();
                    self.queue.push_back(b);
                }
                Ok(None) => {}
                Err(e) => return e,
            }
        }
    }

    /// The next chunk; `Ok(None)` at the clean end.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, hyper::Error>> {
        if let Some(b) = self.queue.pop_front() {
            self.queued -= b.len();
            self.repay();
            return Poll::Ready(Ok(Some(b)));
        }
        if self.ended {
            return Poll::Ready(Ok(None));
        }
        self.poll_read(cx)
    }

    /// The next chunk; `Ok(None)` at the clean end. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Bytes>, hyper::Error> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }
}

/// What the consumers receive: the whole upload, or the first part of a multipart form (§3.4).
pub enum Source {
    Raw(Upload),
    /// Boxed: the field is several times the size of an [`Upload`].
    Multipart(Box<multer::Field<'static>>),
}

impl Source {
    /// Stops reading the upload now (no background drain, see [`RequestBody::cut`]).
    pub fn abandon(&mut self) {
        if let Source::Raw(u) = self {
            u.body.cut();
        }
    }

    /// The next chunk; `Ok(None)` at the clean end, `Err` if the upload failed.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Bytes>>> {
        match self {
            Source::Raw(u) => u.poll_next(cx).map_err(io::Error::other),
            Source::Multipart(f) => match ready!(f.poll_next_unpin(cx)) {
                Some(r) => Poll::Ready(r.map(Some).map_err(io::Error::other)),
                None => Poll::Ready(Ok(None)),
            },
        }
    }

    /// The next chunk; `Ok(None)` at the clean end, `Err` if the upload failed. Cancel-safe.
    pub async fn next(&mut self) -> io::Result<Option<Bytes>> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }
}

/// Opens a multipart upload and returns its first part with that part's headers.
pub async fn first_part(
    upload: Upload,
    boundary: String,
) -> io::Result<(multer::Field<'static>, http::HeaderMap)> {
    let stream = futures_util::stream::unfold(Some(upload), |state| async move {
        let mut u = state?;
        match u.next().await {
            Ok(Some(b)) => Some((Ok(b), Some(u))),
            Ok(None) => None,
            Err(e) => Some((Err(io::Error::other(e)), None)),
        }
    });
    let mut mp = multer::Multipart::new(stream, boundary);
    let field = mp
        .next_field()
        .await
        .map_err(io::Error::other)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "multipart body has no part"))?;
    let headers = field.headers().clone();
    Ok((field, headers))
}
