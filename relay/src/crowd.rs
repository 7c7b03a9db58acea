//! Per-address limits (`docs/PROTOCOL.md` §9 "Per-address limits", §14.5): what one client
//! address may hold open, so that a crowd of idle connections from a few addresses can't fill
//! the relay's waiting room or the short-code channels.
//!
//! - [`Client`]: the address a request counts against: the TCP peer's, or with
//!   `--trust-proxy` the last `X-Forwarded-For` entry; IPv6 grouped by its prefix.
//! - [`Crowd::wait`]: a waiting peer (Data API producer or consumer not yet matched, a Connect
//!   caller while it waits), at most `max_waiting` per address.
//! - [`Crowd::code_request`]: a request on a code channel (§14.5 rule 1: at most
//!   `max_code_requests` open per address; rule 3: lookups from a token bucket).
//!
//! Each admitted request gets a [`Hold`]; dropping it gives the place back. All state sits
//! behind one `std::sync::Mutex`, never held across an `.await`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::HeaderMap;
use httpipe::protocol::control::Rejection;

/// The limits (from the relay's configuration); 0 turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrowdLimits {
    /// Waiting peers per address (§9).
    pub max_waiting: usize,
    /// Open code channel requests per address (§14.5 rule 1).
    pub max_code_requests: usize,
    /// Code lookups per address and minute (§14.5 rule 3).
    pub code_lookups_per_minute: u32,
    /// IPv6 addresses count by this many leading bits (§9).
    pub ipv6_prefix_len: u8,
}

/// Defaults of the limits (§9, §14.5).
pub const DEFAULT_MAX_WAITING: usize = 1000;
pub const DEFAULT_MAX_CODE_REQUESTS: usize = 16;
pub const DEFAULT_CODE_LOOKUPS_PER_MINUTE: u32 = 60;
pub const DEFAULT_IPV6_PREFIX_LEN: u8 = 56;

impl Default for CrowdLimits {
    fn default() -> Self {
        CrowdLimits {
            max_waiting: DEFAULT_MAX_WAITING,
            max_code_requests: DEFAULT_MAX_CODE_REQUESTS,
            code_lookups_per_minute: DEFAULT_CODE_LOOKUPS_PER_MINUTE,
            ipv6_prefix_len: DEFAULT_IPV6_PREFIX_LEN,
        }
    }
}

/// The address a request counts against (§9): an IPv4 address, or an IPv6 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client(IpAddr);

impl Client {
    /// The client of a request that came from `peer`: with `trust_proxy`, the last entry of
    /// `X-Forwarded-For` when it is an IP address (what the trusted proxy saw), else `peer`.
    pub fn of(peer: IpAddr, headers: &HeaderMap, trust_proxy: bool, v6_prefix_len: u8) -> Client {
        let ip = match trust_proxy {
            true => forwarded_for(headers).unwrap_or(peer),
            false => peer,
        };
        Client::group(ip, v6_prefix_len)
    }

    /// `ip` as it counts: IPv4-mapped IPv6 as IPv4, IPv6 cut to its first `len` bits.
    pub fn group(ip: IpAddr, len: u8) -> Client {
        match ip {
            IpAddr::V4(v4) => Client(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Client(IpAddr::V4(v4)),
                None => {
                    let len = u32::from(len.min(128));
                    let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
                    Client(IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)))
                }
            },
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The last entry of the last `X-Forwarded-For` header, if it is an IP address (bare, or with
/// a port: `1.2.3.4:5`, `[::1]:5`).
fn forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let value = headers.get_all("x-forwarded-for").iter().next_back()?;
    let last = value.to_str().ok()?.rsplit(',').next()?.trim();
    last.parse::<IpAddr>()
        .ok()
        .or_else(|| last.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// What one address holds.
#[derive(Default)]
struct Held {
    waiting: usize,
    code: usize,
    /// Code lookups left and when they were counted; `None`: a full bucket.
    lookups: Option<(f64, Instant)>,
}

impl Held {
    /// The lookups left now (refilled since they were counted), at most `per_minute`.
    fn lookups_now(&self, per_minute: u32, now: Instant) -> f64 {
        let full = f64::from(per_minute);
        match self.lookups {
            None => full,
            Some((left, at)) => {
                let refill = now.duration_since(at).as_secs_f64() * full / 60.0;
                (left + refill).min(full)
            }
        }
    }

    /// Nothing held and a full bucket: the entry can go.
    fn idle(&self, per_minute: u32, now: Instant) -> bool {
        self.waiting == 0
            && self.code == 0
            && self.lookups_now(per_minute, now) >= f64::from(per_minute)
    }
}

struct Table {
    clients: HashMap<Client, Held>,
    swept: Instant,
}

/// How often idle entries (refilled buckets) are dropped from the table.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The per-address counts of one relay node.
pub struct Crowd {
    limits: CrowdLimits,
    table: Mutex<Table>,
    /// Requests refused, by limit: waiting peers, code requests, code lookups (`/metrics`).
    refused: [AtomicU64; 3],
}

/// What an admitted request holds; dropping it gives the place back.
pub struct Hold {
    crowd: Arc<Crowd>,
    client: Client,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Waiting,
    Code,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.crowd.release(self.client, self.kind);
    }
}

impl Crowd {
    pub fn new(limits: CrowdLimits) -> Arc<Crowd> {
        Arc::new(Crowd {
            limits,
            table: Mutex::new(Table {
                clients: HashMap::new(),
                swept: Instant::now(),
            }),
            refused: Default::default(),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> CrowdLimits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding this lock would be a bug here; keep serving anyway.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A waiting peer from `client` (§9): its hold, or `too-many-waiting`. No client (a
    /// request without connection facts) or no limit: nothing to hold.
    pub fn wait(self: &Arc<Self>, client: Option<Client>) -> Result<Option<Hold>, Rejection> {
        let max = self.limits.max_waiting;
        let Some(client) = client.filter(|_| max > 0) else {
            return Ok(None);
        };
        let mut table = self.lock();
        let held = table.clients.entry(client).or_default();
        if held.waiting >= max {
            self.refused[0].fetch_add(1, Relaxed);
            return Err(Rejection::TooManyWaiting { max });
        }
        held.waiting += 1;
        Ok(Some(self.hold(client, Kind::Waiting)))
    }

    /// A request on a code channel from `client` (§14.5): rule 1 (open requests), then for a
    /// `lookup` (a Connect call, or a `GET` on pipe `a`) rule 3 (the bucket). Its hold, or the
    /// refusal; a refused request takes nothing.
    pub fn code_request(
        self: &Arc<Self>,
        client: Option<Client>,
        lookup: bool,
    ) -> Result<Option<Hold>, Rejection> {
        let CrowdLimits {
            max_code_requests: max,
            code_lookups_per_minute: per_minute,
            ..
        } = self.limits;
        let Some(client) = client.filter(|_| max > 0 || (lookup && per_minute > 0)) else {
            return Ok(None);
        };
        let now = Instant::now();
        let mut table = self.lock();
        sweep(&mut table, per_minute, now);
        let held = table.clients.entry(client).or_default();
        if max > 0 && held.code >= max {
            self.refused[1].fetch_add(1, Relaxed);
            return Err(Rejection::TooManyCodeRequests { max });
        }
        if lookup && per_minute > 0 {
            let left = held.lookups_now(per_minute, now);
            if left < 1.0 {
                self.refused[2].fetch_add(1, Relaxed);
                return Err(Rejection::TooManyCodeLookups { per_minute });
            }
            held.lookups = Some((left - 1.0, now));
        }
        if max == 0 {
            return Ok(None);
        }
        held.code += 1;
        Ok(Some(self.hold(client, Kind::Code)))
    }

    fn hold(self: &Arc<Self>, client: Client, kind: Kind) -> Hold {
        Hold {
            crowd: self.clone(),
            client,
            kind,
        }
    }

    fn release(&self, client: Client, kind: Kind) {
        let per_minute = self.limits.code_lookups_per_minute;
        let mut table = self.lock();
        let Some(held) = table.clients.get_mut(&client) else {
            return;
        };
        match kind {
            Kind::Waiting => held.waiting = held.waiting.saturating_sub(1),
            Kind::Code => held.code = held.code.saturating_sub(1),
        }
        if held.idle(per_minute, Instant::now()) {
            table.clients.remove(&client);
        }
    }

    /// Addresses with something held or counted.
    pub fn clients(&self) -> usize {
        self.lock().clients.len()
    }

    /// The `/metrics` lines (§9): the addresses counted, and the requests refused by each
    /// limit (a crowd at work shows here first).
    pub fn metrics(&self) -> String {
        let mut s = format!(
            "# HELP httpipe_limited_addresses Client addresses holding waiting or short-code requests.\n\
             # TYPE httpipe_limited_addresses gauge\nhttpipe_limited_addresses {}\n\
             # HELP httpipe_refused_total Requests refused by a per-address limit, by refusal code.\n\
             # TYPE httpipe_refused_total counter\n",
            self.clients()
        );
        let codes = [
            Rejection::TooManyWaiting { max: 0 },
            Rejection::TooManyCodeRequests { max: 0 },
            Rejection::TooManyCodeLookups { per_minute: 0 },
        ];
        for (r, n) in codes.iter().zip(&self.refused) {
            let code = r.code().as_str();
            let _ = writeln!(
                s,
                "httpipe_refused_total{{code=\"{code}\"}} {}",
                n.load(Relaxed)
            );
        }
        s
    }
}

/// Drops the entries of addresses that hold nothing and whose bucket has refilled, once a
/// [`SWEEP_EVERY`] (an address that only looked up leaves an entry behind).
fn sweep(table: &mut Table, per_minute: u32, now: Instant) {
    if now.duration_since(table.swept) < SWEEP_EVERY {
        return;
    }
    table.swept = now;
    table.clients.retain(|_, h| !h.idle(per_minute, now));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn limits(waiting: usize, code: usize, lookups: u32) -> CrowdLimits {
        CrowdLimits {
            max_waiting: waiting,
            max_code_requests: code,
            code_lookups_per_minute: lookups,
            ipv6_prefix_len: 56,
        }
    }

    #[test]
    fn the_client_address() {
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", "6.6.6.6, 10.0.0.7".parse().unwrap());
        let peer = ip("192.0.2.1");
        // without trust the header is anyone's words
        assert_eq!(Client::of(peer, &h, false, 56), Client(peer));
        assert_eq!(Client::of(peer, &h, true, 56), Client(ip("10.0.0.7")));
        // the last header's last entry; a port is fine; garbage falls back to the peer
        h.append("x-forwarded-for", "[2001:db8::1]:443".parse().unwrap());
        assert_eq!(Client::of(peer, &h, true, 128), Client(ip("2001:db8::1")));
        let mut bad = HeaderMap::new();
        bad.insert("x-forwarded-for", "unknown".parse().unwrap());
        assert_eq!(Client::of(peer, &bad, true, 56), Client(peer));
        // IPv6 by prefix, IPv4-mapped as IPv4
        let a = Client::group(ip("2001:db8:1:2ff::1"), 56);
        assert_eq!(a, Client::group(ip("2001:db8:1:200::9"), 56));
        assert_ne!(a, Client::group(ip("2001:db8:1:300::1"), 56));
        assert_eq!(a, Client(ip("2001:db8:1:200::")));
        assert_eq!(
            Client::group(ip("::ffff:192.0.2.9"), 56),
            Client(ip("192.0.2.9"))
        );
        assert_eq!(Client::group(ip("2001:db8::1"), 0), Client(ip("::")));
    }

    #[test]
    fn waiting_peers_per_address() {
        let crowd = Crowd::new(limits(2, 0, 0));
        let (a, b) = (Some(Client(ip("192.0.2.1"))), Some(Client(ip("192.0.2.2"))));
        let h1 = crowd.wait(a).unwrap();
        let _h2 = crowd.wait(a).unwrap();
        assert_eq!(
            crowd.wait(a).err(),
            Some(Rejection::TooManyWaiting { max: 2 })
        );
        // another address is not affected; no address, no limit
        assert!(crowd.wait(b).unwrap().is_some());
        assert!(crowd.wait(None).unwrap().is_none());
        drop(h1);
        assert!(crowd.wait(a).unwrap().is_some());
        assert!(Crowd::new(limits(0, 0, 0)).wait(a).unwrap().is_none());
    }

    #[test]
    fn code_requests_and_lookups() {
        let crowd = Crowd::new(limits(0, 2, 3));
        let a = Some(Client(ip("192.0.2.1")));
        let h1 = crowd.code_request(a, false).unwrap();
        let h2 = crowd.code_request(a, true).unwrap();
        assert_eq!(
            crowd.code_request(a, true).err(),
            Some(Rejection::TooManyCodeRequests { max: 2 })
        );
        drop((h1, h2));
        // 1 lookup used: 2 more, then the bucket is empty (a refused request takes nothing)
        drop(crowd.code_request(a, true).unwrap());
        drop(crowd.code_request(a, true).unwrap());
        assert_eq!(
            crowd.code_request(a, true).err(),
            Some(Rejection::TooManyCodeLookups { per_minute: 3 })
        );
        // a request that is no lookup still passes; the entry stays while the bucket refills
        drop(crowd.code_request(a, false).unwrap());
        assert_eq!(crowd.clients(), 1);
        assert_eq!(
            Rejection::TooManyCodeLookups { per_minute: 3 }.retry_after_s(),
            Some(20)
        );
    }

    #[test]
    fn holds_given_back_leave_nothing() {
        let crowd = Crowd::new(limits(5, 5, 0));
        let a = Some(Client(ip("192.0.2.1")));
        let holds: Vec<_> = (0..5)
            .map(|_| crowd.code_request(a, true).unwrap())
            .chain((0..5).map(|_| crowd.wait(a).unwrap()))
            .collect();
        assert_eq!(crowd.clients(), 1);
        drop(holds);
        assert_eq!(crowd.clients(), 0);
    }
}
