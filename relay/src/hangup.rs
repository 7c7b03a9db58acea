//! Noticing a peer that hung up while its request waits (`docs/PROTOCOL.md` §3.6).
//!
//! hyper notices a closed HTTP/1.1 connection only when it reads from it, and it stops reading
//! while a request waits: after a complete body with more bytes pipelined behind it, or when
//! the read-ahead of a waiting upload is full. The kernel knows anyway: a peer's FIN or RST
//! sets `EPOLLRDHUP` / `EPOLLHUP` / `EPOLLERR` on the socket without a byte being read. So every
//! TCP connection (plain or TLS, which runs on the same socket) is added to one private epoll
//! set per relay, one-shot and for those events only: it costs one `epoll_ctl` at accept, and
//! nothing while the peer is there; no timer, no polling, no byte consumed, and the socket is
//! not registered twice with tokio's own epoll (that one is another set). The epoll set's own
//! descriptor is what tokio watches. A peer that shut down only its sending side counts as gone,
//! as hyper's `half_close(false)` treats a read EOF.
//!
//! Request handlers find a [`Hangup`] in the request's extensions and await
//! [`Hangup::hung_up`] next to whatever they wait for. On HTTP/2 it is per connection (streams
//! reset by the peer are noticed by hyper).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

/// One connection's hang-up state.
struct Flag {
    hung: AtomicBool,
    notify: Notify,
}

/// A cheap handle (one `Arc`) on a connection's hang-up state, put in each request's
/// extensions by the server. The default handle never resolves (no watcher).
#[derive(Clone, Default)]
pub struct Hangup(Option<Arc<Flag>>);

impl Hangup {
    /// Resolves once the peer closed the connection (FIN, RST or a socket error). Cancel-safe.
    pub async fn hung_up(&self) {
        let Some(flag) = &self.0 else {
            return std::future::pending().await;
        };
        loop {
            let notified = flag.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if flag.hung.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// The hang-up handle of a request (a never-resolving one if the server put none there).
    pub fn of(extensions: &http::Extensions) -> Hangup {
        extensions.get::<Hangup>().cloned().unwrap_or_default()
    }
}

/// The relay's hang-up watcher: the epoll set and which connection each event belongs to.
#[derive(Clone, Default)]
pub struct Watcher(Option<Arc<Inner>>);

struct Inner {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    epoll: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    conns: Mutex<HashMap<u64, Weak<Flag>>>,
    next_id: AtomicU64,
}

/// Keeps a connection's entry while the connection is served; dropping it forgets the
/// connection (the kernel drops the epoll registration when the socket closes).
pub struct Registration {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.inner
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Watcher {
    /// A watcher for this runtime (must be called within it); without epoll (not Linux, or it
    /// failed) one whose handles never resolve, with a warning.
    pub fn new() -> Watcher {
        match Inner::new() {
            Ok(inner) => Watcher(Some(Arc::new(inner))),
            Err(e) => {
                tracing::warn!(error = %e, "no hang-up watcher: a waiting peer that hangs up may keep its path busy");
                Watcher(None)
            }
        }
    }

    /// Watches `tcp`; the handle goes into the connection's requests, the registration lives
    /// as long as the connection is served.
    pub fn watch(&self, tcp: &tokio::net::TcpStream) -> (Hangup, Option<Registration>) {
        let Some(inner) = &self.0 else {
            return (Hangup(None), None);
        };
        let flag = Arc::new(Flag {
            hung: AtomicBool::new(false),
            notify: Notify::new(),
        });
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        inner
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::downgrade(&flag));
        if let Err(e) = inner.add(tcp, id) {
            tracing::debug!(error = %e, "hang-up watcher: epoll_ctl failed");
        }
        let reg = Registration {
            inner: inner.clone(),
            id,
        };
        (Hangup(Some(flag)), Some(reg))
    }

    /// Delivers hang-ups until the relay stops (spawn it; abort it at the end).
    pub async fn run(self) {
        if let Some(inner) = self.0 {
            inner.run().await
        }
    }
}

impl Inner {
    fn mark(&self, id: u64) {
        let flag = self
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .and_then(Weak::upgrade);
        if let Some(flag) = flag {
            flag.hung.store(true, Ordering::Release);
            flag.notify.notify_waiters();
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Inner {
    fn new() -> std::io::Result<Inner> {
        use rustix::event::epoll;
        let fd = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let interest = tokio::io::Interest::READABLE;
        // SAFETY: an `OwnedFd` owns its descriptor, keeps it open until dropped and always
        // returns the same one: what `register_with_interest` requires.
        let epoll = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, interest) }
            .map_err(|e| e.into_parts().1)?;
        Ok(Inner {
            epoll,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        })
    }

    fn add(&self, tcp: &tokio::net::TcpStream, id: u64) -> std::io::Result<()> {
        use rustix::event::epoll::{self, EventData, EventFlags};
        // HUP and ERR are always reported; ONESHOT: one event per connection at most.
        let flags = EventFlags::RDHUP | EventFlags::ONESHOT;
        epoll::add(self.epoll.get_ref(), tcp, EventData::new_u64(id), flags)?;
        Ok(())
    }

    async fn run(&self) {
        loop {
            let mut ready = match self.epoll.readable().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "hang-up watcher stopped");
                    return;
                }
            };
            match self.deliver() {
                Ok(true) => ready.clear_ready(), // drained: wait for the next readiness edge
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "hang-up watcher stopped");
                    return;
                }
            }
        }
    }

    /// Takes the pending events without waiting and marks their connections; true if there
    /// were no more than one batch (the set is drained).
    fn deliver(&self) -> std::io::Result<bool> {
        use rustix::event::epoll;
        const BATCH: usize = 64;
        let mut events: Vec<epoll::Event> = Vec::with_capacity(BATCH);
        let no_wait = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let buf = rustix::buffer::spare_capacity(&mut events);
        match epoll::wait(self.epoll.get_ref(), buf, Some(&no_wait)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        for ev in &events {
            let data = ev.data;
            self.mark(data.u64());
        }
        Ok(events.len() < BATCH)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Inner {
    fn new() -> std::io::Result<Inner> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "epoll is Linux only",
        ))
    }
    fn add(&self, _tcp: &tokio::net::TcpStream, _id: u64) -> std::io::Result<()> {
        Ok(())
    }
    async fn run(&self) {}
}
