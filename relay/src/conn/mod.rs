//! A connection's TCP socket as seen by the transfer that uses it (`docs/PROTOCOL.md` §3.2):
//! where in the connection's bytes a response ended, and whether the peer's TCP stack has
//! acknowledged everything up to there. That is how `[STATE:TRANSFER_SUCCESSFUL]` waits until
//! the consumer has the bytes instead of until they left the relay's process.
//!
//! [`Tracked`] wraps what hyper reads and writes (the TCP stream, or the TLS stream on it) and
//! shares a [`ConnFd`] with the requests of the connection (request extensions). A response
//! body that ends asks for an [`End`] ([`ConnFd::end_h1`], [`ConnFd::end_h2`]). The connection's
//! own task then records the socket's send position (every byte written to it so far, as the
//! kernel counts them) when the flush that put the response's last bytes into the socket
//! completes: on HTTP/1.1 the next one (hyper writes and flushes what it polled from the body
//! right away); on HTTP/2 the one after the stream's `END_STREAM` frame was written ([`h2`]:
//! flow control and h2's writer may hold the last frames long after the body ended). What
//! the connection writes after the response is never waited for, however late the verdict
//! looks: a TLS `close_notify` answering the consumer's own (written by the shutdown, which
//! doesn't flush; a consumer that closed after its last byte never acknowledges it), the next
//! response. The [`End`] holds a duplicate of the socket from the body's end on, so the
//! acknowledgements stay readable after hyper closed the connection: a connection reset before
//! it acknowledged the end is a consumer that left early, whenever that happened.
//!
//! The raw fd is only used while a [`Tracked`] owns the socket: it marks the [`ConnFd`] open,
//! and its drop marks it closed (under the same lock readers hold) before the socket closes,
//! so a reused fd number is never read.

mod h2;

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// The connection's socket, valid while a [`Tracked`] owns it.
#[derive(Debug)]
pub struct ConnFd {
    fd: RawFd,
    open: RwLock<bool>,
    /// `ends.flush` isn't empty: the next completed flush records the send position.
    armed: AtomicBool,
    ends: Mutex<Ends>,
    /// How far the connection got writing its responses ([`ConnFd::sent`]), and the tasks
    /// waiting for it to go further.
    sent: AtomicU64,
    sent_waiters: Mutex<Vec<Waker>>,
    /// `sent_waiters` isn't empty.
    sent_wanted: AtomicBool,
}

/// Response ends waiting to learn their position.
#[derive(Debug, Default)]
struct Ends {
    /// Filled at the next completed flush: HTTP/1.1 ends, and HTTP/2 ends whose stream's
    /// `END_STREAM` was just written.
    flush: Vec<Arc<Slot>>,
    /// HTTP/2 ends waiting for their stream's `END_STREAM`, with the DATA bytes the response
    /// carries (how the stream is recognised: hyper doesn't tell its id), oldest first.
    streams: Vec<(u64, Arc<Slot>)>,
}

/// Where one response ended: the send position once known.
#[derive(Debug, Default)]
struct Slot {
    state: Mutex<Position>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Position {
    /// The send position at the flush that wrote the end (inner `None`: unreadable).
    at: Option<Option<u64>>,
    /// The connection closed first.
    closed: bool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Position> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, position: Option<u64>) {
        self.lock().at = Some(position);
        self.changed.notify_waiters();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_waiters();
    }

    /// The position, once known; `None` if the connection closed before. Cancel-safe.
    async fn position(&self) -> Option<Option<u64>> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let s = self.lock();
                if s.at.is_some() {
                    return s.at;
                }
                if s.closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

impl ConnFd {
    /// The accepted socket's record, closed until a [`Tracked`] owns the socket.
    pub fn new(tcp: &tokio::net::TcpStream) -> Arc<ConnFd> {
        Arc::new(ConnFd {
            fd: tcp.as_raw_fd(),
            open: RwLock::new(false),
            armed: AtomicBool::new(false),
            ends: Mutex::new(Ends::default()),
            sent: AtomicU64::new(0),
            sent_waiters: Mutex::new(Vec::new()),
            sent_wanted: AtomicBool::new(false),
        })
    }

    /// How far the connection got writing responses: on HTTP/1.1 its completed flushes, on
    /// HTTP/2 the stream frames (HEADERS, DATA) it wrote. A mark for [`ConnFd::poll_sent_since`].
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Ready once the connection wrote more of its responses than at `mark` (what
    /// [`ConnFd::sent`] said), or closed; else `cx` is woken when it does. A response cut right
    /// after hyper queued its head or data waits here so they are written first: hyper's
    /// HTTP/1.1 side closes the connection with its buffer unwritten, h2 drops the frames a
    /// reset stream still has queued (§3.3). On HTTP/2 another stream's frame may count.
    pub fn poll_sent_since(&self, mark: u64, cx: &mut Context<'_>) -> Poll<()> {
        let done = || self.sent() > mark || !*self.open.read().unwrap_or_else(|e| e.into_inner());
        if done() {
            return Poll::Ready(());
        }
        {
            let mut waiters = self.sent_waiters.lock().unwrap_or_else(|e| e.into_inner());
            if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                waiters.push(cx.waker().clone());
            }
            self.sent_wanted.store(true, Ordering::SeqCst);
        }
        // An advance between the check and the registration didn't see the waiter: look again.
        if done() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The connection wrote more of its responses (in its task).
    fn advanced(&self) {
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.wake_sent_waiters();
    }

    fn wake_sent_waiters(&self) {
        if self.sent_wanted.swap(false, Ordering::SeqCst) {
            let waiters =
                std::mem::take(&mut *self.sent_waiters.lock().unwrap_or_else(|e| e.into_inner()));
            waiters.into_iter().for_each(Waker::wake);
        }
    }

    fn lock_ends(&self) -> MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An HTTP/1.1 response body ended, in hyper's poll of it (in the connection's task,
    /// before hyper writes what it polled): its end is in the socket at the next completed
    /// flush.
    pub fn end_h1(&self) -> End {
        self.end(|ends, slot| ends.flush.push(slot))
    }

    /// An HTTP/2 response body that yielded `data` bytes ended (in the stream's task, before
    /// hyper queues its `END_STREAM`): its end is in the socket at the flush after the first
    /// stream to end on the wire with that many DATA bytes (oldest end first, if several
    /// waiting responses carry as many bytes).
    pub fn end_h2(&self, data: u64) -> End {
        self.end(|ends, slot| ends.streams.push((data, slot)))
    }

    fn end(&self, wait: impl FnOnce(&mut Ends, Arc<Slot>)) -> End {
        let slot = Arc::new(Slot::default());
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if !*open {
            slot.close();
            return End { slot, held: None };
        }
        // SAFETY: `fd` is open while `open` is true, and it stays open while we hold the read
        // lock (`Tracked::drop` takes the write lock before the socket closes).
        let dup = unsafe { libc::fcntl(self.fd, libc::F_DUPFD_CLOEXEC, 0) };
        // SAFETY: `dup` is a fresh descriptor we own.
        let held = (dup >= 0).then(|| Held(unsafe { OwnedFd::from_raw_fd(dup) }));
        let mut ends = self.lock_ends();
        wait(&mut ends, slot.clone());
        self.armed.store(!ends.flush.is_empty(), Ordering::Release);
        End { slot, held }
    }

    /// Streams ended on the wire (in the connection's task, as their frames are written).
    fn streams_ended(&self, ended: &[h2::StreamEnd]) {
        let mut ends = self.lock_ends();
        for e in ended {
            if let Some(i) = ends.streams.iter().position(|(data, _)| *data == e.data) {
                let (_, slot) = ends.streams.remove(i);
                ends.flush.push(slot);
            }
        }
        self.armed.store(!ends.flush.is_empty(), Ordering::Release);
    }

    /// A flush completed (called by [`Tracked`], in the connection's task: nothing else
    /// writes to the socket meanwhile).
    fn flushed(&self) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        let mut ends = self.lock_ends();
        if ends.flush.is_empty() {
            return;
        }
        // SAFETY: called by the `Tracked` that owns the open socket.
        let position = send_position(unsafe { BorrowedFd::borrow_raw(self.fd) });
        for slot in ends.flush.drain(..) {
            slot.set(position);
        }
        self.armed.store(false, Ordering::Release);
    }

    fn closed(&self) {
        *self.open.write().unwrap_or_else(|e| e.into_inner()) = false;
        self.wake_sent_waiters();
        let ends = std::mem::take(&mut *self.lock_ends());
        let streams = ends.streams.into_iter().map(|(_, slot)| slot);
        for slot in ends.flush.into_iter().chain(streams) {
            slot.close();
        }
    }
}

/// The stream hyper serves a connection on (TCP, or TLS on it): marks its [`ConnFd`] open
/// while it lives, closed before the socket closes, and records response ends (module docs).
pub struct Tracked<S> {
    inner: S,
    conn: Arc<ConnFd>,
    /// The frames written, once the first write showed HTTP/2 (`Some(None)`: HTTP/1.1; boxed:
    /// every waiting peer holds a connection, HTTP/2 ones are few of them).
    frames: Option<Option<Box<h2::Frames>>>,
}

impl<S> Tracked<S> {
    /// `inner` owns the socket of `conn` (as [`ConnFd::new`] saw it).
    pub fn new(inner: S, conn: Arc<ConnFd>) -> Tracked<S> {
        *conn.open.write().unwrap_or_else(|e| e.into_inner()) = true;
        Tracked {
            inner,
            conn,
            frames: None,
        }
    }

    /// Reads the bytes just written: on HTTP/2, ends of streams.
    fn wrote<'a>(&mut self, bufs: impl Iterator<Item = &'a [u8]>, mut n: usize) {
        let mut ended = Vec::new();
        let stream_frames = |f: &Option<Option<Box<h2::Frames>>>| {
            f.as_ref()
                .and_then(|f| f.as_ref())
                .map_or(0, |f| f.stream_frames)
        };
        let before = stream_frames(&self.frames);
        for buf in bufs {
            if n == 0 {
                break;
            }
            let buf = &buf[..n.min(buf.len())];
            n -= buf.len();
            if buf.is_empty() {
                continue;
            }
            // A server's HTTP/1.1 answer starts with "HTTP/", its HTTP/2 side with a frame.
            let frames = self
                .frames
                .get_or_insert_with(|| (buf[0] != b'H').then(Box::default));
            match frames {
                Some(frames) => frames.feed(buf, &mut |e| ended.push(e)),
                None => return,
            }
        }
        if stream_frames(&self.frames) > before {
            self.conn.advanced();
        }
        if !ended.is_empty() {
            self.conn.streams_ended(&ended);
        }
    }
}

impl<S> Drop for Tracked<S> {
    fn drop(&mut self) {
        // Runs before `inner` (the socket) is dropped.
        self.conn.closed();
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
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.wrote(std::iter::once(buf), n);
        }
        polled
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.wrote(bufs.iter().map(|b| &**b), n);
        }
        polled
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Under TLS the flush writes every record the session holds before it completes.
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = polled {
            if let Some(None) = self.frames {
                self.conn.advanced();
            }
            self.conn.flushed();
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
    /// The peer may still acknowledge what was sent: not reset, not closed for good.
    alive: bool,
}

/// Not available off Linux: an [`End`] then counts as delivered once written (flushed).
#[cfg(not(target_os = "linux"))]
fn send_state(_fd: BorrowedFd<'_>) -> Option<SendState> {
    None
}

#[cfg(not(target_os = "linux"))]
fn send_position(_fd: BorrowedFd<'_>) -> Option<u64> {
    None
}

#[cfg(target_os = "linux")]
fn send_state(fd: BorrowedFd<'_>) -> Option<SendState> {
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
    // Every state but TCP_CLOSE (7: reset, or closed with everything acknowledged) may still
    // see acknowledgements, LAST_ACK and CLOSING too: a peer that closed its sending side
    // first still acknowledges what reaches it.
    Some(SendState {
        acked: info.tcpi_bytes_acked,
        alive: info.tcpi_state != 7,
    })
}

/// The socket's send position: every byte written to it since it opened, as the kernel counts
/// acknowledgements (acknowledged + still queued, `SIOCOUTQ`). An acknowledgement processed
/// between the two reads would skew the sum, so the acknowledged count is read on both sides
/// of the queue's until it held still (the first try, nearly always: one takes microseconds);
/// if acknowledgements keep coming, the sum with the earlier count, short by what was
/// acknowledged during the last try.
#[cfg(target_os = "linux")]
fn send_position(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut acked = send_state(fd)?.acked;
    let mut sum = 0;
    for _ in 0..64 {
        let mut queued: libc::c_int = 0;
        // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
        if rc != 0 {
            return None;
        }
        sum = acked + queued.max(0) as u64;
        let after = send_state(fd)?.acked;
        if after == acked {
            break;
        }
        acked = after;
    }
    Some(sum)
}

/// How often the acknowledged count is checked while waiting: every [`POLL_FIRST`] for the
/// first [`POLL_FIRST_TIMES`] checks (a loopback or LAN peer acknowledges within them), then
/// every [`POLL_EVERY`].
const POLL_FIRST: Duration = Duration::from_millis(1);
const POLL_FIRST_TIMES: u32 = 20;
const POLL_EVERY: Duration = Duration::from_millis(10);

/// Where a response ended in its connection's bytes, and the connection's socket held from
/// then on to watch its acknowledgements (`None` if it couldn't be duplicated).
pub struct End {
    slot: Arc<Slot>,
    held: Option<Held>,
}

impl End {
    /// Waits until the peer's TCP stack has acknowledged every byte of the connection up to
    /// the response's end: `false` if the connection closed before the end was written, or
    /// broke before it was acknowledged; `true` also when the socket can't be inspected (not
    /// Linux). Bytes written after the end don't count. No timeout: a consumer that stops
    /// reading holds the transfer open, as it does mid-stream.
    pub async fn delivered(self) -> bool {
        let Some(position) = self.slot.position().await else {
            return false;
        };
        match (position, self.held) {
            (Some(target), Some(held)) => held.reached(target).await,
            _ => true,
        }
    }
}

/// A connection's socket held open (a duplicate descriptor) to watch its acknowledgements.
#[derive(Debug)]
struct Held(OwnedFd);

impl Held {
    /// Waits until the peer acknowledged everything up to send position `target`: `false` if
    /// the connection broke first. No timeout.
    async fn reached(self, target: u64) -> bool {
        let mut checks = 0u32;
        loop {
            let Some(now) = send_state(self.0.as_fd()) else {
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
