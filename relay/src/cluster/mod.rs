//! The relay cluster (`docs/PROTOCOL.md` §13): nodes behind one load balancer, coordinated
//! through one Redis, so the two peers of a pipe meet whichever node each one reaches.
//!
//! - [`holds`]: which paths this node serves, and the claim value of each (sans-IO).
//! - [`store`]: the Redis adapter (one Lua script per operation).
//! - [`forward`]: a request for a path another node owns, sent there (hyper's client).
//!
//! [`Cluster::place`] decides where a request is served; the router does the rest
//! ([`crate::router`]). A background task ([`Cluster::run`]) heartbeats, refreshes the
//! claims of the paths held and releases those no longer held.

pub mod forward;
pub mod holds;
pub mod store;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use holds::{Begin, Hold, Holds, Release};
use store::{Claimed, Store};

/// A node writes its key and refreshes its claims this often (§13.1).
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// A node key expires this long after its last heartbeat: a dead node is gone (§13.4).
pub const NODE_TTL: Duration = Duration::from_secs(3);
/// A claim nobody refreshes expires after this (§13.4).
pub const CLAIM_TTL: Duration = Duration::from_secs(10);
/// After Redis restarted empty, claims wait this long: every node re-asserts the claims of
/// the paths it serves at its next heartbeat (§13.4) before a new claim could take one.
pub const SETTLE_TIME: Duration = Duration::from_secs(2);
/// Claims refreshed per heartbeat script call.
const REFRESH_BATCH: usize = 1000;
/// An unreachable owner is asked again after this (§13.3).
pub const RETRY_OWNER: Duration = Duration::from_millis(500);

/// Where a request is served (§13.2).
pub enum Place {
    /// Here: the hold keeps the path this node's until dropped.
    Here(Hold),
    /// At this node URL.
    There(String),
    /// Redis doesn't answer (the reason, for the log).
    Unavailable(String),
    /// The claim names a node that can't serve it yet (a previous run of this node on the
    /// same URL): ask again after [`RETRY_OWNER`], until its node key expires.
    Retry(String),
}

/// What this node last learned of the cluster (for `/healthz`, `/metrics`).
#[derive(Default)]
struct View {
    /// The live nodes (id, url) at the last heartbeat.
    nodes: Vec<(String, String)>,
    /// Redis answered the last heartbeat.
    up: bool,
    /// Since when it has not (and why).
    down_since: Option<(Instant, String)>,
}

/// This node's membership of a cluster.
pub struct Cluster {
    node_id: String,
    node_url: String,
    holds: Holds,
    store: Store,
    view: Mutex<View>,
    forwarded: std::sync::atomic::AtomicU64,
    releases: Mutex<Option<mpsc::UnboundedReceiver<Release>>>,
}

impl Cluster {
    /// Joins the cluster of `redis_url` as `node_url` (nothing is sent before [`Cluster::run`]).
    /// Errors: a URL that isn't one.
    pub fn new(redis_url: &str, node_url: &str) -> Result<Arc<Cluster>, String> {
        let url = node_url.trim_end_matches('/');
        match url.parse::<http::Uri>() {
            Ok(u) if u.scheme_str() == Some("http") && u.authority().is_some() && u.path() == "/" => {}
            _ => {
                return Err(format!(
                    "--node-url {node_url:?} must be http://HOST:PORT (how the other nodes reach this one)"
                ))
            }
        }
        let store = Store::new(redis_url)?;
        let mut id = [0u8; 8];
        getrandom::fill(&mut id).map_err(|e| format!("no randomness for the node id: {e}"))?;
        let node_id = hex::encode(id);
        let (tx, rx) = mpsc::unbounded_channel();
        let holds = Holds::new(
            node_id.clone(),
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        Ok(Arc::new(Cluster {
            node_id,
            node_url: url.to_string(),
            holds,
            store,
            view: Mutex::new(View::default()),
            forwarded: Default::default(),
            releases: Mutex::new(Some(rx)),
        }))
    }

    /// How clients and nodes reach this node: the base of its Connect answers (§13.3).
    pub fn node_url(&self) -> &str {
        &self.node_url
    }

    /// Where a request on `path` is served (§13.2).
    pub async fn place(&self, path: &str) -> Place {
        let (hold, value) = match self.holds.begin(path) {
            Begin::Held(hold) => return Place::Here(hold),
            Begin::Claim { hold, value } => (hold, value),
        };
        match self
            .store
            .claim(path, &value, &self.node_id, &self.node_url)
            .await
        {
            Ok(Claimed::Mine) => {
                self.holds.confirm(path, &value);
                Place::Here(hold)
            }
            Ok(Claimed::Owner(url)) => {
                drop(hold);
                if url == self.node_url {
                    // our own URL under an older node id (this node restarted on it): that
                    // node is gone; its claim expires with its node key
                    return Place::Retry(
                        "the path's claim is a previous run's of this node".into(),
                    );
                }
                self.forwarded
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Place::There(url)
            }
            Ok(Claimed::Settling) => {
                drop(hold);
                Place::Retry(
                    "Redis came back empty: the nodes are re-asserting their claims".into(),
                )
            }
            Err(e) => Place::Unavailable(e.0),
        }
    }

    /// Heartbeats, refreshes claims and releases paths no longer held, until aborted.
    pub async fn run(self: Arc<Self>) {
        let Some(mut releases) = self
            .releases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut tick = tokio::time::interval(HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.beat().await,
                Some(first) = releases.recv() => {
                    let mut batch = vec![(first.path, first.value)];
                    while let Ok(r) = releases.try_recv() {
                        batch.push((r.path, r.value));
                    }
                    if let Err(e) = self.store.release(&batch).await {
                        // they expire by themselves (CLAIM_TTL)
                        tracing::debug!(error = %e, claims = batch.len(), "cluster: release failed");
                    }
                }
            }
        }
    }

    async fn beat(&self) {
        let claims = self.holds.confirmed();
        // Refreshes in batches: one script call blocks Redis for ~3 µs per claim
        // (docs/cluster.md), so a node with many paths never stalls the others' claims long.
        let mut result = Ok(Vec::new());
        let mut lost = Vec::new();
        for (n, batch) in claims.chunks(REFRESH_BATCH).enumerate() {
            match self
                .store
                .heartbeat(&self.node_id, &self.node_url, batch)
                .await
            {
                Ok(beat) => {
                    lost.extend(beat.lost.iter().map(|i| n * REFRESH_BATCH + i));
                    result = Ok(beat.nodes);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if claims.is_empty() {
            result = self
                .store
                .heartbeat(&self.node_id, &self.node_url, &[])
                .await
                .map(|b| b.nodes);
        }
        let mut view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(nodes) => {
                for i in lost {
                    if let Some((path, value)) = claims.get(i) {
                        tracing::warn!(
                            "cluster: another node claimed a path this node serves (after Redis was unreachable); new peers go there"
                        );
                        self.holds.lost(path, value);
                    }
                }
                if let Some((since, _)) = view.down_since.take() {
                    tracing::info!(
                        down_s = since.elapsed().as_secs_f64(),
                        nodes = nodes.len(),
                        "cluster: Redis answers again"
                    );
                } else if !view.up {
                    tracing::info!(node = %self.node_id, url = %self.node_url, nodes = nodes.len(), "cluster: joined");
                }
                view.nodes = nodes;
                view.up = true;
            }
            Err(e) => {
                if view.down_since.is_none() {
                    tracing::warn!(error = %e, "cluster: Redis is unreachable: new paths get 503 cluster-unavailable until it answers");
                    view.down_since = Some((Instant::now(), e.0));
                }
                view.up = false;
            }
        }
    }

    /// Leaves the cluster (at shutdown): node key, membership and claims go now rather than
    /// when they expire.
    pub async fn leave(&self) {
        let claims = self.holds.confirmed();
        let _ = self.store.release(&claims).await;
        let _ = self.store.leave(&self.node_id).await;
    }

    /// `/healthz` lines after `ok` (§13.5).
    pub fn health(&self) -> String {
        let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = String::new();
        if view.up {
            s.push_str(&format!("cluster: {} nodes\n", view.nodes.len()));
        } else {
            match &view.down_since {
                Some((since, why)) => s.push_str(&format!(
                    "cluster: Redis unreachable for {} s ({why}): new paths get 503\n",
                    since.elapsed().as_secs()
                )),
                None => s.push_str("cluster: joining\n"),
            }
        }
        for (id, url) in &view.nodes {
            let me = if *id == self.node_id {
                " (this node)"
            } else {
                ""
            };
            s.push_str(&format!("node {id} {url}{me}\n"));
        }
        s
    }

    /// `/metrics` lines (§13.5).
    pub fn metrics(&self) -> String {
        let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        let forwarded = self.forwarded.load(std::sync::atomic::Ordering::Relaxed);
        format!(
            "# HELP httpipe_cluster_nodes Live nodes of the cluster at the last heartbeat.\n\
             # TYPE httpipe_cluster_nodes gauge\n\
             httpipe_cluster_nodes {}\n\
             # HELP httpipe_cluster_redis_up 1 if Redis answered the last heartbeat.\n\
             # TYPE httpipe_cluster_redis_up gauge\n\
             httpipe_cluster_redis_up {}\n\
             # HELP httpipe_cluster_paths_held Stream paths this node serves.\n\
             # TYPE httpipe_cluster_paths_held gauge\n\
             httpipe_cluster_paths_held {}\n\
             # HELP httpipe_cluster_forwarded_total Requests forwarded to the owning node.\n\
             # TYPE httpipe_cluster_forwarded_total counter\n\
             httpipe_cluster_forwarded_total {forwarded}\n\
             # HELP httpipe_cluster_redis_calls_total Redis script calls made by this node.\n\
             # TYPE httpipe_cluster_redis_calls_total counter\n\
             httpipe_cluster_redis_calls_total {}\n",
            view.nodes.len(),
            u8::from(view.up),
            self.holds.len(),
            self.store.calls(),
        )
    }
}
