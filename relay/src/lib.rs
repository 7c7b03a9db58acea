//! httpipe-relay: the relay of `docs/PROTOCOL.md` — Data API (§3, Piping Server compatible),
//! segmented upload (§4), Connect API (§5, ZebraStream v0 compatible), access tokens (§6),
//! static demo files (§2) and operations endpoints (§9), over HTTP/1.1 and h2c on the plain
//! port and HTTP/1.1 + h2 (ALPN) on the TLS port.
//!
//! Start one in-process with [`server::start`] (tests do) or run the `httpipe-relay` binary.

pub mod auth;
pub mod config;
pub mod conn;
pub mod connect;
pub mod data;
pub mod hangup;
pub mod memory;
pub mod metrics;
pub mod ops;
pub mod pairing;
pub mod params;
pub mod request_body;
pub mod respond;
pub mod router;
pub mod server;
pub mod state;
pub mod static_files;
pub mod tls;

pub use config::Config;
pub use server::{start, Running};
