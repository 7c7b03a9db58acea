//! httpipe-relay: the relay of `docs/PROTOCOL.md` — Data API (§3, Piping Server compatible),
//! segmented upload (§4), Connect API (§5, ZebraStream v0 compatible), access tokens (§6),
//! static demo files (§2) and operations endpoints (§9), over HTTP/1.1 and h2c on the plain
//! port and HTTP/1.1 + h2 (ALPN) on the TLS port.
//!
//! Start one in-process with [`server::start`] (tests do) or run the `httpipe-relay` binary.
//! Everything else is internal (`pub(crate)`).

pub mod auth;
pub(crate) mod cluster;
pub mod config;
pub(crate) mod conn;
pub(crate) mod connect;
pub mod crowd;
pub(crate) mod data;
pub(crate) mod hangup;
pub mod memory;
pub(crate) mod metrics;
pub(crate) mod ops;
pub(crate) mod pairing;
pub(crate) mod params;
pub(crate) mod request_body;
pub(crate) mod respond;
pub(crate) mod router;
pub mod server;
pub(crate) mod state;
pub(crate) mod static_files;
pub(crate) mod tls;

pub use config::Config;
pub use server::{start, Running};
