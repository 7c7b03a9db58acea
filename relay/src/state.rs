//! Shared relay state: configuration, the rendezvous table, tokens, uploads, metrics.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::auth::Auth;
use crate::config::Config;
use crate::data::Handoff;
use crate::metrics::Metrics;
use crate::pairing::Hub;
use crate::segmented::Uploads;

/// Everything a request handler needs; one per relay, shared by `Arc`.
pub struct State {
    pub config: Config,
    pub hub: Hub<Handoff>,
    pub metrics: Metrics,
    /// `Some` in auth mode (§6).
    pub auth: Option<Auth>,
    pub uploads: Uploads,
}

/// Shared handle to [`State`].
pub type Shared = Arc<State>;

/// Facts about the connection a request came on, put in the request's extensions.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    /// Arrived on the TLS port.
    pub tls: bool,
    pub peer: SocketAddr,
    /// The local address (port) it came in on.
    pub local: SocketAddr,
}

impl State {
    /// A stream path as it may appear in logs (§9): truncated in open mode, hashed in auth
    /// mode (paths may be secrets there).
    pub fn log_path(&self, path: &str) -> String {
        if self.auth.is_some() {
            use sha2::{Digest, Sha256};
            let h = Sha256::digest(path.as_bytes());
            format!("sha256:{}", hex::encode(&h[..8]))
        } else if path.len() > 64 {
            let mut end = 64;
            while !path.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}...", &path[..end])
        } else {
            path.to_string()
        }
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
