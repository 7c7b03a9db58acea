//! A connection's TCP socket as seen by the transfer that uses it (`docs/PROTOCOL.md` §3.2):
//! how many of the bytes written to it the peer's TCP stack has acknowledged, which is how
//! `[STATE:TRANSFER_SUCCESSFUL]` waits until the consumer has the bytes instead of until they
//! left the relay's process.
//!
//! [`Tracked`] wraps the accepted `TcpStream` (under TLS too: the TLS stream sits on it) and
//! shares a [`ConnFd`] with the requests of the connection (request extensions). The raw fd
//! is only used while the connection is open: [`Tracked`]'s drop marks it closed (under the
//! same lock readers hold) before the socket closes, so a reused fd number is never read.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// The connection's socket, valid while the connection is open.
#[derive(Debug)]
pub struct ConnFd {
    fd: RawFd,
    open: RwLock<bool>,
    /// Completed flushes of the connection's writes so far (HTTP/1.1: hyper flushes after
    /// writing what it polled from the response body, in the connection's own task).
    flushes: AtomicU64,
    /// Someone waits in [`ConnFd::flushed_after`]: only then does a flush notify.
    watched: AtomicBool,
    flushed: Notify,
}

impl ConnFd {
    /// How many flushes have completed so far; see [`delivered_h1`].
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Acquire)
    }

    fn flush_done(&self) {
        self.flushes.fetch_add(1, Ordering::AcqRel);
        if self.watched.load(Ordering::Acquire) {
            self.flushed.notify_waiters();
        }
    }

    /// Resolves once more than `epoch` flushes have completed. Cancel-safe.
    async fn flushed_after(&self, epoch: u64) {
        self.watched.store(true, Ordering::Release);
        loop {
            let notified = self.flushed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.flushes() > epoch {
                return;
            }
            notified.await;
        }
    }

    /// A duplicate of the socket, if the connection is still open: it keeps the socket (and
    /// its counters) alive after hyper closes the connection, until dropped.
    fn hold(&self) -> Option<OwnedFd> {
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if !*open {
            return None;
        }
        // SAFETY: `fd` is open while `open` is true, and it stays open while we hold the read
        // lock (`Tracked::drop` takes the write lock before the socket closes).
        let dup = unsafe { libc::fcntl(self.fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return None;
        }
        // SAFETY: `dup` is a fresh descriptor we own.
        Some(unsafe { OwnedFd::from_raw_fd(dup) })
    }
}

/// A stream whose [`ConnFd`] is marked closed before the stream itself closes.
pub struct Tracked<S> {
    inner: S,
    conn: Arc<ConnFd>,
}

impl<S: AsRawFd> Tracked<S> {
    pub fn new(inner: S) -> (Tracked<S>, Arc<ConnFd>) {
        let conn = Arc::new(ConnFd {
            fd: inner.as_raw_fd(),
            open: RwLock::new(true),
            flushes: AtomicU64::new(0),
            watched: AtomicBool::new(false),
            flushed: Notify::new(),
        });
        (
            Tracked {
                inner,
                conn: conn.clone(),
            },
            conn,
        )
    }
}

impl<S> Drop for Tracked<S> {
    fn drop(&mut self) {
        // Runs before `inner` (the socket) is dropped.
        *self.conn.open.write().unwrap_or_else(|e| e.into_inner()) = false;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = polled {
            self.conn.flush_done();
        }
        polled
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What the kernel says about a socket's send side.
struct SendState {
    /// Bytes the peer acknowledged since the connection opened.
    acked: u64,
    /// Bytes written but not yet acknowledged (or not yet sent).
    queued: u64,
    /// The connection can still deliver (not reset or closed).
    alive: bool,
}

/// Not available off Linux: [`delivered`] then falls back to "the response ended".
#[cfg(not(target_os = "linux"))]
fn send_state(_fd: &OwnedFd) -> Option<SendState> {
    None
}

#[cfg(target_os = "linux")]
fn send_state(fd: &OwnedFd) -> Option<SendState> {
    // SAFETY: a zeroed tcp_info is valid; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let mut queued: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    if rc != 0 {
        return None;
    }
    // TCP_ESTABLISHED = 1, TCP_FIN_WAIT1 = 4, TCP_FIN_WAIT2 = 5, TCP_CLOSE_WAIT = 8: the
    // peer may still acknowledge what we sent.
    let alive = matches!(info.tcpi_state, 1 | 4 | 5 | 8);
    Some(SendState {
        acked: info.tcpi_bytes_acked,
        queued: queued.max(0) as u64,
        alive,
    })
}

/// How often the acknowledged count is checked while waiting: every [`POLL_FIRST`] for the
/// first [`POLL_FIRST_TIMES`] checks (a loopback or LAN peer acknowledges within them), then
/// every [`POLL_EVERY`].
const POLL_FIRST: Duration = Duration::from_millis(1);
const POLL_FIRST_TIMES: u32 = 20;
const POLL_EVERY: Duration = Duration::from_millis(10);
/// Time for hyper (and h2) to write the last bytes to the socket after the body ended, when
/// no flush tells it sooner.
const WRITE_SETTLE: Duration = Duration::from_millis(5);

/// Waits until the peer's TCP stack has acknowledged every byte written to the connection so
/// far (the relay's send queue is empty of them). `false` if the connection broke first;
/// `true` also when the socket can't be inspected (already closed cleanly, or not TCP).
/// No timeout: a consumer that stops reading holds the transfer open, as it does mid-stream.
pub async fn delivered(conn: &ConnFd) -> bool {
    tokio::time::sleep(WRITE_SETTLE).await;
    match conn.held() {
        Some(held) => held.acked_all().await,
        None => true,
    }
}

/// [`delivered`] for an HTTP/1.1 response whose body ended when the connection had completed
/// `epoch` flushes: hyper writes the body's last bytes and flushes them in the connection's
/// task right after polling its end, so the next completed flush means they are in the
/// socket (no fixed wait; [`WRITE_SETTLE`] at most, as for HTTP/2).
pub async fn delivered_h1(conn: &ConnFd, epoch: u64) -> bool {
    let _ = tokio::time::timeout(WRITE_SETTLE, conn.flushed_after(epoch)).await;
    match conn.held() {
        Some(held) => held.acked_all().await,
        None => true,
    }
}

/// A connection's socket held open (a duplicate descriptor) to watch its acknowledgements.
pub struct Held(OwnedFd);

impl ConnFd {
    /// The socket, held, if the connection is still open.
    pub fn held(&self) -> Option<Held> {
        self.hold().map(Held)
    }
}

impl Held {
    /// Waits until every byte written to the socket so far (`WRITE_SETTLE` from now) has
    /// been acknowledged: `false` if the connection broke first. No timeout.
    pub async fn acknowledged(self) -> bool {
        tokio::time::sleep(WRITE_SETTLE).await;
        self.acked_all().await
    }

    /// Waits until every byte written to the socket by now has been acknowledged: `false` if
    /// the connection broke first. No timeout.
    async fn acked_all(self) -> bool {
        let Some(start) = send_state(&self.0) else {
            return true;
        };
        let target = start.acked + start.queued;
        let mut checks = 0u32;
        loop {
            let Some(now) = send_state(&self.0) else {
                return true;
            };
            if now.acked >= target {
                return true;
            }
            if !now.alive {
                return false;
            }
            checks += 1;
            let wait = if checks <= POLL_FIRST_TIMES {
                POLL_FIRST
            } else {
                POLL_EVERY
            };
            tokio::time::sleep(wait).await;
        }
    }
}
