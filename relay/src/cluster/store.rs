//! The cluster's Redis adapter (`docs/PROTOCOL.md` §13.1): each operation one Lua script, one
//! round trip, atomic, bounded by [`REDIS_TIMEOUT`]. redis-rs's `ConnectionManager` reconnects
//! by itself after Redis comes back.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;
use sha2::{Digest, Sha256};

use super::{CLAIM_TTL, NODE_TTL, SETTLE_TIME};

/// `httpipe:node:{id}` → the node's URL.
const NODE_KEY: &str = "httpipe:node:";
/// Sorted set: node id → last heartbeat (ms).
const NODES_KEY: &str = "httpipe:nodes";
/// `httpipe:path:{sha256 hex}` → `{id}:{epoch}`.
const PATH_KEY: &str = "httpipe:path:";
/// A Redis call with no answer in this time failed (§13.2 step 3).
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(1);

/// Starts the settling period if Redis lost its data (restarted empty: no `httpipe:up`), and
/// says whether it runs (§13.4). Shared by the claim and heartbeat scripts.
const SETTLE: &str = r#"
local function settling(settle_ms)
  if redis.call('EXISTS', 'httpipe:up') == 0 then
    redis.call('SET', 'httpipe:up', '1')
    redis.call('SET', 'httpipe:settling', '1', 'PX', settle_ms)
  end
  return redis.call('EXISTS', 'httpipe:settling') == 1
end
"#;

/// While settling → "-" (ask again later). No claim, ours, or one whose node is gone → ours
/// (answers ""); the claimer's node key is written with it, so no claim is ever without the key
/// that keeps it. Else the owner's URL.
const CLAIM: &str = r#"
if settling(tonumber(ARGV[7])) then return '-' end
local v = redis.call('GET', KEYS[1])
if v then
  local owner = string.match(v, '^([^:]*):')
  if owner and owner ~= ARGV[3] then
    local url = redis.call('GET', ARGV[4] .. owner)
    if url then return url end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', ARGV[4] .. ARGV[3], ARGV[5], 'PX', ARGV[6])
return ''
"#;

/// Deletes a claim if it is still the given one.
const RELEASE: &str = r#"
local n = 0
for i, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[i] then n = n + redis.call('DEL', k) end
end
return n
"#;

/// Registers the node, refreshes (or re-asserts) its claims, answers {lost claims' indexes
/// (1-based), {id, url, id, url, ...} of the live nodes}.
const HEARTBEAT: &str = r#"
settling(tonumber(ARGV[7]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('SET', ARGV[5] .. ARGV[1], ARGV[2], 'PX', ttl)
redis.call('ZADD', ARGV[6], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', ARGV[6], '-inf', now - ttl)
local lost = {}
for i, k in ipairs(KEYS) do
  local want = ARGV[7 + i]
  local v = redis.call('GET', k)
  if v == want then
    redis.call('PEXPIRE', k, ARGV[4])
  elseif not v then
    redis.call('SET', k, want, 'PX', ARGV[4])
  else
    table.insert(lost, i)
  end
end
local nodes = {}
for _, id in ipairs(redis.call('ZRANGE', ARGV[6], 0, -1)) do
  local url = redis.call('GET', ARGV[5] .. id)
  if url then
    table.insert(nodes, id)
    table.insert(nodes, url)
  end
end
return {lost, nodes}
"#;

/// Removes the node's key and membership (its claims go with [`Store::release`]).
const LEAVE: &str = r#"
redis.call('DEL', ARGV[2] .. ARGV[1])
redis.call('ZREM', ARGV[3], ARGV[1])
return 1
"#;

/// What a Redis call can fail with: unreachable, timed out, or an error answer.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The answer to a claim.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The claim is this node's now.
    Mine,
    /// Another live node owns the path: its URL.
    Owner(String),
    /// Redis restarted empty a moment ago: the nodes are re-asserting their claims (§13.4).
    Settling,
}

/// The answer to a heartbeat.
pub struct Beat {
    /// Indexes (into the claims refreshed) of those another node holds now.
    pub lost: Vec<usize>,
    /// The live nodes: (id, url).
    pub nodes: Vec<(String, String)>,
}

/// One node's connection to the cluster's Redis.
#[derive(Clone)]
pub struct Store {
    conn: ConnectionManager,
    scripts: std::sync::Arc<[Script; 4]>,
    calls: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The Redis key of a stream path's claim: the path itself never reaches Redis (§13.1).
pub fn path_key(path: &str) -> String {
    format!("{PATH_KEY}{}", hex::encode(Sha256::digest(path.as_bytes())))
}

impl Store {
    /// A store for `url` (`redis://HOST:PORT[/DB]`); connects on first use. Errors: the URL.
    pub fn new(url: &str) -> Result<Store, String> {
        let client = redis::Client::open(url).map_err(|e| {
            format!("--cluster {url:?} is not a Redis URL ({e}); e.g. redis://127.0.0.1:6379/0")
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("--cluster {url:?}: {e}"))?;
        Ok(Store {
            conn,
            scripts: std::sync::Arc::new([
                Script::new(&format!("{SETTLE}{CLAIM}")),
                Script::new(RELEASE),
                Script::new(&format!("{SETTLE}{HEARTBEAT}")),
                Script::new(LEAVE),
            ]),
            calls: Default::default(),
        })
    }

    /// Script calls made (`/metrics`).
    pub fn calls(&self) -> u64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        inv: redis::ScriptInvocation<'_>,
    ) -> Result<T, Unavailable> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut conn = self.conn.clone();
        match tokio::time::timeout(REDIS_TIMEOUT, inv.invoke_async(&mut conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Unavailable(e.to_string())),
            Err(_) => Err(Unavailable(format!(
                "no answer in {} ms",
                REDIS_TIMEOUT.as_millis()
            ))),
        }
    }

    /// Claims `path` for `node_id` with `value` (§13.2 step 2).
    pub async fn claim(
        &self,
        path: &str,
        value: &str,
        node_id: &str,
        node_url: &str,
    ) -> Result<Claimed, Unavailable> {
        let mut inv = self.scripts[0].prepare_invoke();
        inv.key(path_key(path))
            .arg(value)
            .arg(CLAIM_TTL.as_millis() as u64)
            .arg(node_id)
            .arg(NODE_KEY)
            .arg(node_url)
            .arg(NODE_TTL.as_millis() as u64)
            .arg(SETTLE_TIME.as_millis() as u64);
        let owner: String = self.run(inv).await?;
        Ok(match owner.as_str() {
            "" => Claimed::Mine,
            "-" => Claimed::Settling,
            _ => Claimed::Owner(owner),
        })
    }

    /// Deletes the claims that are still the given ones.
    pub async fn release(&self, claims: &[(String, String)]) -> Result<(), Unavailable> {
        if claims.is_empty() {
            return Ok(());
        }
        let mut inv = self.scripts[1].prepare_invoke();
        for (path, value) in claims {
            inv.key(path_key(path)).arg(value);
        }
        self.run::<i64>(inv).await.map(drop)
    }

    /// Registers the node and refreshes its `claims` (path, value).
    pub async fn heartbeat(
        &self,
        node_id: &str,
        url: &str,
        claims: &[(String, String)],
    ) -> Result<Beat, Unavailable> {
        let mut inv = self.scripts[2].prepare_invoke();
        inv.arg(node_id)
            .arg(url)
            .arg(NODE_TTL.as_millis() as u64)
            .arg(CLAIM_TTL.as_millis() as u64)
            .arg(NODE_KEY)
            .arg(NODES_KEY)
            .arg(SETTLE_TIME.as_millis() as u64);
        for (path, value) in claims {
            inv.key(path_key(path)).arg(value);
        }
        let (lost, flat): (Vec<usize>, Vec<String>) = self.run(inv).await?;
        let nodes = flat
            .chunks_exact(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        Ok(Beat {
            lost: lost.into_iter().filter_map(|i| i.checked_sub(1)).collect(),
            nodes,
        })
    }

    /// Takes the node out of the cluster (at shutdown).
    pub async fn leave(&self, node_id: &str) -> Result<(), Unavailable> {
        let mut inv = self.scripts[3].prepare_invoke();
        inv.arg(node_id).arg(NODE_KEY).arg(NODES_KEY);
        self.run::<i64>(inv).await.map(drop)
    }
}
