//! Shared relay state: configuration, the rendezvous table, tokens, uploads, metrics.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::auth::Auth;
use crate::config::Config;
use crate::crowd::Client;
use crate::data::Plane;
use crate::metrics::Metrics;

/// The relay's state, one per relay, shared by `Arc`. The router hands each handler only the
/// part it uses (the Data API gets the [`Plane`]).
pub struct State {
    pub config: Config,
    /// The Data API: pairing table, segmented uploads, limits, shutdown phase.
    pub data: Arc<Plane>,
    pub metrics: Arc<Metrics>,
    /// `Some` in auth mode (§6).
    pub auth: Option<Auth>,
    /// `Some` when the node is part of a cluster (§13).
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// Shared handle to [`State`].
pub type Shared = Arc<State>;

/// Facts about the connection a request came on, put in the request's extensions.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    /// Arrived on the TLS port.
    pub tls: bool,
    /// The local address (port) it came in on.
    pub local: SocketAddr,
    /// The peer's address (the client's, or a proxy's: [`State::client`]).
    pub peer: std::net::IpAddr,
}

impl State {
    /// The address a request counts against for the per-address limits (§9): the peer's, or
    /// with `--trust-proxy` the last `X-Forwarded-For` entry. `None` without connection facts.
    pub fn client(&self, headers: &http::HeaderMap, conn: Option<&ConnInfo>) -> Option<Client> {
        let c = &self.config;
        conn.map(|i| Client::of(i.peer, headers, c.trust_proxy, c.crowd.ipv6_prefix_len))
    }

    /// `scheme://host` for URLs shown to this request's client (§5): `--public-url`, or the
    /// request's Host (`:authority`) and scheme, or (with `--trust-proxy`) `X-Forwarded-*`.
    pub fn base_url(
        &self,
        headers: &http::HeaderMap,
        uri: &http::Uri,
        conn: Option<&ConnInfo>,
    ) -> String {
        if let Some(u) = &self.config.public_url {
            return u.trim_end_matches('/').to_string();
        }
        let hdr = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.trim().to_string())
        };
        let mut scheme = if conn.is_some_and(|c| c.tls) {
            "https".to_string()
        } else {
            "http".to_string()
        };
        let mut host = uri
            .authority()
            .map(|a| a.to_string())
            .or_else(|| hdr("host"))
            .or_else(|| conn.map(|c| c.local.to_string()))
            .unwrap_or_else(|| "localhost".to_string());
        if self.config.trust_proxy {
            if let Some(p) = hdr("x-forwarded-proto")
                .and_then(|p| p.split(',').next().map(|s| s.trim().to_string()))
            {
                if p == "http" || p == "https" {
                    scheme = p;
                }
            }
            if let Some(h) = hdr("x-forwarded-host")
                .and_then(|h| h.split(',').next().map(|s| s.trim().to_string()))
            {
                host = h;
            }
        }
        format!("{scheme}://{host}")
    }
}
