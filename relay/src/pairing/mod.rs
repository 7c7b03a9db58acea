//! Pairing: the rendezvous of producers and consumers on stream paths
//! (`docs/PROTOCOL.md` §3.1, §3.6, §5, §5.1).
//!
//! This module knows nothing about HTTP. It keeps, per stream path, who is waiting:
//!
//! - at most one **producer** and up to `n` **consumers** (Data API). When the producer and
//!   exactly `n` consumers are present, they are *matched*: the producer receives every
//!   consumer's hand-off value `C` (the data module passes a channel through which it sends
//!   the consumer its response) and a [`Transfer`] guard. While that guard lives the path is
//!   busy (new peers are rejected); dropping it frees the path.
//! - **Connect waiters** (§5): `await-reader` callers return when a consumer is present,
//!   `await-writer` callers when a producer is present; an `await-reader` and an
//!   `await-writer` on the same path release each other, and each receives the other's
//!   hello (§5.1; a caller released by a Data API peer receives none).
//! - **Channels** (§5.1): a slot is keyed by the stream path and a [`Room`]. A Connect caller
//!   with a channel waits in a [`Room::Connect`] slot, where no Data API peer ever registers:
//!   it meets only Connect callers with the same channel on the same path. A Data API peer
//!   with a channel ("Data API channels", §5.1) registers in a [`Room::Data`] slot, where no
//!   Connect caller ever waits: it meets only Data API peers with the same channel on the same
//!   path. Peers without a channel (Data API and Connect) share the [`Room::Plain`] slot.
//!
//! Every registration returns a guard; dropping it (the HTTP request went away) unregisters
//! at once, so a peer that hangs up while waiting never blocks the path (§3.6: the two
//! piping-server-rust bugs). The one exception is asked for: a channel caller's last word
//! that lingers (§5.1 `linger`, [`ConnectWait::linger_until`]) stays, unanswerable, until the
//! next caller of the opposite role takes its hello or its time ends. All state sits behind
//! one `std::sync::Mutex`; no `.await` runs while it is held.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use httpipe::protocol::control::Rejection;
use tokio::sync::oneshot;

/// What a matched producer receives.
pub struct Match<C> {
    /// The consumers' hand-off values, in arrival order (exactly `n`).
    pub consumers: Vec<C>,
    /// Keeps the path busy until dropped.
    pub transfer: Transfer<C>,
}

/// Which peer a Connect caller waits for (§5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Await {
    /// `mode=await-reader`: a producer waiting for a consumer.
    Reader,
    /// `mode=await-writer`: a consumer waiting for a producer.
    Writer,
}

/// Counts for `/metrics` (§9).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub waiting_producers: usize,
    pub waiting_consumers: usize,
    pub active_transfers: usize,
    pub connect_waiters: usize,
    /// Hellos of channel callers that left, lingering (§5.1).
    pub lingering: usize,
}

/// The rendezvous table. Cheap to clone (shared state).
pub struct Hub<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Hub<C> {
    fn clone(&self) -> Self {
        Hub {
            inner: self.inner.clone(),
        }
    }
}

/// Which room of a stream path a peer waits in (§5.1): the one place deciding who can meet.
///
/// Only peers in the same room of the same path ever meet, so a Connect channel and a Data
/// API channel with the same id are apart (§5.1 "Data API channels": a Data API channel never
/// meets a Connect caller, with or without channel, nor a request without channel).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Room {
    /// No channel: Data API peers and Connect callers meet each other (§3, §5).
    Plain,
    /// `channel=ID` on a Connect call (§5.1): Connect callers only.
    Connect(String),
    /// `channel=ID` on a Data API request (§5.1 "Data API channels"): Data API peers only.
    Data(String),
}

impl Room {
    /// The room of a Data API request with an optional `channel=ID`.
    pub fn data(channel: Option<&str>) -> Room {
        channel.map_or(Room::Plain, |c| Room::Data(c.to_string()))
    }

    /// The room of a Connect call with an optional `channel=ID`.
    pub fn connect(channel: Option<&str>) -> Room {
        channel.map_or(Room::Plain, |c| Room::Connect(c.to_string()))
    }
}

/// A slot's key: the stream path and the room on it (§5.1).
type Key = (String, Room);

struct Inner<C> {
    paths: Mutex<HashMap<Key, Slot<C>>>,
    next_id: AtomicU64,
    /// Hellos lingering after their callers left (§5.1), at most [`LINGER_MAX`]; changed
    /// under the lock.
    lingering: AtomicUsize,
}

/// The most hellos the relay keeps for callers that left (§5.1 `linger`): 10 000 × at most
/// 1024 bytes. Beyond it a `linger` is ignored.
pub const LINGER_MAX: usize = 10_000;

/// A waiting Connect caller (§5, §5.1).
struct ConnectWaiter {
    id: u64,
    want: Await,
    /// What the caller sent as its hello; handed to the Connect caller it pairs with.
    hello: Option<String>,
    /// Releases the caller, with the peer's hello (`None`: the peer sent none, or it is a
    /// Data API peer).
    tx: oneshot::Sender<Option<String>>,
    /// The caller left and its hello lingers until then (§5.1).
    left_until: Option<Instant>,
}

impl ConnectWaiter {
    /// Whether a caller awaiting `want` meets this one at `now`: its caller waits, or left
    /// and its hello still lingers.
    fn meets(&self, want: Await, now: Instant) -> bool {
        self.want != want && self.left_until.is_none_or(|t| t > now)
    }
}

/// The state of one stream path. Removed from the table when empty.
struct Slot<C> {
    /// The `n` every Data API peer on this path must agree on (set by the first one).
    n: usize,
    producer: Option<(u64, oneshot::Sender<Match<C>>)>,
    consumers: Vec<(u64, C)>,
    /// A matched transfer is running: new Data API peers are rejected.
    busy: bool,
    connect: Vec<ConnectWaiter>,
}

impl<C> Slot<C> {
    fn new(n: usize) -> Self {
        Slot {
            n,
            producer: None,
            consumers: Vec::new(),
            busy: false,
            connect: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        !self.busy
            && self.producer.is_none()
            && self.consumers.is_empty()
            && self.connect.is_empty()
    }

    fn has_data_peers(&self) -> bool {
        self.busy || self.producer.is_some() || !self.consumers.is_empty()
    }
}

impl<C> Default for Hub<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C> Hub<C> {
    /// An empty table.
    pub fn new() -> Self {
        Hub {
            inner: Arc::new(Inner {
                paths: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                lingering: AtomicUsize::new(0),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Slot<C>>> {
        // A panic while holding this lock would be a bug in this module; keep serving anyway.
        self.inner.paths.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a producer for `n` consumers on `path`, with the Data API `channel` if given
    /// (§5.1: it then meets only consumers with that channel). Rejected (§3.5) if another
    /// producer is there or a transfer runs, or if the path's peers expect another `n` (both
    /// within the same channel).
    pub fn producer(
        &self,
        path: &str,
        channel: Option<&str>,
        n: usize,
    ) -> Result<ProducerWait<C>, Rejection> {
        let (tx, rx) = oneshot::channel();
        let id = self.id();
        let key = (path.to_string(), Room::data(channel));
        let mut paths = self.lock();
        let slot = paths.entry(key.clone()).or_insert_with(|| Slot::new(n));
        if slot.busy || slot.producer.is_some() {
            return Err(Rejection::AnotherSender(path.to_string()));
        }
        if slot.has_data_peers() && slot.n != n {
            return Err(Rejection::ReceiverCountMismatch {
                expected: slot.n,
                got: n,
            });
        }
        slot.n = n;
        slot.producer = Some((id, tx));
        wake(slot, Await::Writer);
        try_match(self, &key, slot);
        Ok(ProducerWait {
            hub: self.clone(),
            key,
            id,
            rx,
        })
    }

    /// Registers a consumer of an `n`-consumer transfer on `path`, with the Data API `channel`
    /// if given (§5.1); `handoff` goes to the producer when matched. Rejected if `n` consumers
    /// are already there (or a transfer runs) or `n` disagrees.
    pub fn consumer(
        &self,
        path: &str,
        channel: Option<&str>,
        n: usize,
        handoff: C,
    ) -> Result<ConsumerWait<C>, Rejection> {
        self.consumer_with(path, channel, n, handoff, false)
    }

    /// As [`Hub::consumer`]; with `producer_first`, only if a producer waits there now: else
    /// `no-sender`, and nothing is registered (a code channel's pipe `a`, §14.5 rule 2).
    pub fn consumer_with(
        &self,
        path: &str,
        channel: Option<&str>,
        n: usize,
        handoff: C,
        producer_first: bool,
    ) -> Result<ConsumerWait<C>, Rejection> {
        let id = self.id();
        let key = (path.to_string(), Room::data(channel));
        let mut paths = self.lock();
        if producer_first && paths.get(&key).is_none_or(|s| s.producer.is_none()) {
            return Err(Rejection::NoSender);
        }
        let slot = paths.entry(key.clone()).or_insert_with(|| Slot::new(n));
        if slot.has_data_peers() && slot.n != n {
            let expected = slot.n;
            return Err(Rejection::ReceiverCountMismatch { expected, got: n });
        }
        if slot.busy || slot.consumers.len() >= n {
            return Err(Rejection::TooManyReceivers);
        }
        slot.n = n;
        slot.consumers.push((id, handoff));
        wake(slot, Await::Reader);
        try_match(self, &key, slot);
        Ok(ConsumerWait {
            hub: self.clone(),
            key,
            id,
        })
    }

    /// Registers a Connect caller (§5) sending `hello` (§5.1). Returns a guard whose
    /// [`ConnectWait::ready`] resolves when the awaited peer is present: without a `channel`,
    /// a waiting Data API peer of the other role (now or later), or a Connect caller awaiting
    /// the opposite role (both are released, each with the other's hello); with a `channel`,
    /// only a Connect caller awaiting the opposite role with the same channel on `path` (never
    /// a Data API peer, with or without channel: §5.1).
    pub fn await_peer(
        &self,
        path: &str,
        channel: Option<&str>,
        want: Await,
        hello: Option<String>,
    ) -> ConnectWait<C> {
        let (tx, rx) = oneshot::channel();
        let id = self.id();
        let key = (path.to_string(), Room::connect(channel));
        let mut paths = self.lock();
        let slot = paths.entry(key.clone()).or_insert_with(|| Slot::new(1));
        // a `Room::Connect` slot never holds Data API peers (they register in `Plain`/`Data`)
        let present = match want {
            Await::Reader => !slot.consumers.is_empty(),
            Await::Writer => slot.producer.is_some(),
        };
        let now = Instant::now();
        if present {
            let _ = tx.send(None);
        } else if let Some(pos) = slot.connect.iter().position(|w| w.meets(want, now)) {
            let peer = slot.connect.remove(pos);
            if peer.left_until.is_some() {
                self.inner.lingering.fetch_sub(1, Ordering::Relaxed);
            }
            // a caller that left can't be answered: its hello is all there is
            let _ = peer.tx.send(hello);
            let _ = tx.send(peer.hello);
        } else {
            slot.connect.push(ConnectWaiter {
                id,
                want,
                hello,
                tx,
                left_until: None,
            });
        }
        if slot.is_empty() {
            paths.remove(&key);
        }
        ConnectWait {
            hub: self.clone(),
            key,
            id,
            rx,
            linger_until: None,
        }
    }

    /// Current counts (for `/metrics`).
    pub fn counts(&self) -> Counts {
        let paths = self.lock();
        let mut c = Counts::default();
        for slot in paths.values() {
            c.waiting_producers += slot.producer.is_some() as usize;
            c.waiting_consumers += slot.consumers.len();
            c.active_transfers += slot.busy as usize;
            let left = slot
                .connect
                .iter()
                .filter(|w| w.left_until.is_some())
                .count();
            c.connect_waiters += slot.connect.len() - left;
            c.lingering += left;
        }
        c
    }

    /// Removes registration `id` (producer, consumer or Connect caller) if still waiting,
    /// and drops the slot when it became empty.
    fn unregister(&self, key: &Key, id: u64) {
        Self::unregister_in(&mut self.lock(), key, id);
    }

    /// [`Hub::unregister`] under a lock already held.
    fn unregister_in(paths: &mut HashMap<Key, Slot<C>>, key: &Key, id: u64) {
        if let Some(slot) = paths.get_mut(key) {
            if slot.producer.as_ref().is_some_and(|(pid, _)| *pid == id) {
                slot.producer = None;
            }
            slot.consumers.retain(|(cid, _)| *cid != id);
            slot.connect.retain(|w| w.id != id);
            if slot.is_empty() {
                paths.remove(key);
            }
        }
    }

    /// A channel caller `id` leaves: its hello lingers until `until` if it is still waiting
    /// (not released), `until` is still ahead and fewer than [`LINGER_MAX`] linger; else it
    /// is unregistered. A lingering hello ends when a caller takes it or at the next
    /// [`Hub::sweep_lingering`] after `until` (a caller never meets it after `until`).
    fn leave_lingering(&self, key: &Key, id: u64, until: Instant) {
        let mut paths = self.lock();
        let room = self.inner.lingering.load(Ordering::Relaxed) < LINGER_MAX;
        let waiter = paths
            .get_mut(key)
            .and_then(|slot| slot.connect.iter_mut().find(|w| w.id == id));
        match waiter {
            Some(w) if room && until > Instant::now() => {
                w.left_until = Some(until);
                self.inner.lingering.fetch_add(1, Ordering::Relaxed);
            }
            _ => Self::unregister_in(&mut paths, key, id),
        }
    }

    /// Drops the lingering hellos whose time is over (the relay calls it every few seconds).
    pub fn sweep_lingering(&self) {
        if self.lingering() == 0 {
            return;
        }
        let now = Instant::now();
        let mut paths = self.lock();
        let mut gone = 0;
        paths.retain(|_, slot| {
            let before = slot.connect.len();
            slot.connect
                .retain(|w| w.left_until.is_none_or(|until| until > now));
            gone += before - slot.connect.len();
            !slot.is_empty()
        });
        self.inner.lingering.fetch_sub(gone, Ordering::Relaxed);
    }

    /// Hellos lingering now (§5.1), for tests and metrics.
    pub fn lingering(&self) -> usize {
        self.inner.lingering.load(Ordering::Relaxed)
    }

    fn end_transfer(&self, key: &Key) {
        let mut paths = self.lock();
        if let Some(slot) = paths.get_mut(key) {
            slot.busy = false;
            if slot.is_empty() {
                paths.remove(key);
            }
        }
    }
}

/// Releases the Connect callers waiting for `who` (a Data API peer of that role just
/// arrived): they get no peer hello (§5.1), and their own hellos are dropped.
fn wake<C>(slot: &mut Slot<C>, who: Await) {
    let mut kept = Vec::with_capacity(slot.connect.len());
    for w in slot.connect.drain(..) {
        if w.want == who {
            let _ = w.tx.send(None);
        } else {
            kept.push(w);
        }
    }
    slot.connect = kept;
}

/// Matches the producer with the consumers once exactly `n` are present.
fn try_match<C>(hub: &Hub<C>, key: &Key, slot: &mut Slot<C>) {
    if slot.busy || slot.consumers.len() != slot.n {
        return;
    }
    let Some((_, producer)) = slot.producer.take() else {
        return;
    };
    let consumers = slot.consumers.drain(..).map(|(_, c)| c).collect();
    slot.busy = true;
    let transfer = Transfer {
        hub: hub.clone(),
        key: key.clone(),
    };
    // If the producer's request went away in this instant, the Match (and with it the
    // Transfer guard) is dropped right here, which frees the path again; the consumers see
    // their hand-off dropped and re-register.
    let _ = producer.send(Match {
        consumers,
        transfer,
    });
}

/// A registered producer. Await [`ProducerWait::matched`]; dropping unregisters.
pub struct ProducerWait<C> {
    hub: Hub<C>,
    key: Key,
    id: u64,
    rx: oneshot::Receiver<Match<C>>,
}

impl<C> ProducerWait<C> {
    /// Resolves when `n` consumers are present. Cancel-safe: dropping the future unregisters.
    pub async fn matched(&mut self) -> Match<C> {
        match (&mut self.rx).await {
            Ok(m) => m,
            // The sender lives in the table until it is used, and the table outlives us.
            Err(_) => std::future::pending().await,
        }
    }
}

impl<C> Drop for ProducerWait<C> {
    fn drop(&mut self) {
        self.hub.unregister(&self.key, self.id);
    }
}

/// A registered consumer; dropping it unregisters (if not matched yet).
pub struct ConsumerWait<C> {
    hub: Hub<C>,
    key: Key,
    id: u64,
}

impl<C> Drop for ConsumerWait<C> {
    fn drop(&mut self) {
        self.hub.unregister(&self.key, self.id);
    }
}

/// A registered Connect caller; await [`ConnectWait::ready`]; dropping unregisters (unless
/// its hello lingers: [`ConnectWait::linger_until`]).
pub struct ConnectWait<C> {
    hub: Hub<C>,
    key: Key,
    id: u64,
    rx: oneshot::Receiver<Option<String>>,
    linger_until: Option<Instant>,
}

impl<C> ConnectWait<C> {
    /// Resolves when the awaited peer is present, with the peer's hello (§5.1): `Some` only
    /// when the peer is a Connect caller that sent one. Cancel-safe: dropping the future
    /// keeps the registration, dropping the guard unregisters.
    pub async fn ready(&mut self) -> Option<String> {
        match (&mut self.rx).await {
            Ok(hello) => hello,
            // The sender lives in the table until it is used, and the table outlives us.
            Err(_) => std::future::pending().await,
        }
    }

    /// When this caller leaves unreleased (hangs up, or its timeout passes), its hello stays
    /// on its channel until `until` for the next caller of the opposite role (§5.1 `linger`).
    /// Only on a channel: a caller without one is unregistered as always.
    pub fn linger_until(&mut self, until: Instant) {
        if matches!(self.key.1, Room::Connect(_)) {
            self.linger_until = Some(until);
        }
    }
}

impl<C> Drop for ConnectWait<C> {
    fn drop(&mut self) {
        match self.linger_until {
            Some(until) => self.hub.leave_lingering(&self.key, self.id, until),
            None => self.hub.unregister(&self.key, self.id),
        }
    }
}

/// A running transfer; the path is busy until this is dropped.
pub struct Transfer<C> {
    hub: Hub<C>,
    key: Key,
}

impl<C> Drop for Transfer<C> {
    fn drop(&mut self) {
        self.hub.end_transfer(&self.key);
    }
}

#[cfg(test)]
mod tests;
