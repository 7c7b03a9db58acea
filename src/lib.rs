#![warn(missing_docs)]
//! httpipe: HTTP-native byte pipes for the browser and the edge.
//!
//! - [`protocol`]: wire pieces shared by the SDK and the relay (`PROTOCOL.md` §3–§6):
//!   control lines, access tokens, segmented-upload parameters.
//! - `client` (feature `crypto`): the clients' sans-IO core — every protocol decision of the
//!   producer and the consumer (`docs/ARCHITECTURE.md`); the drivers below only do I/O.
//! - [`csv`]: strict RFC 4180 CSV splitting (bytes in chunks → records) behind `csv.decode`.
//! - `crypto` (feature `crypto`, on by default): streaming age v1 and age-rt v0.2
//!   encryption (`PROTOCOL.md` §7–§8).
//! - `wasm` (only on `wasm32`): the JavaScript bindings shipped as the npm package.
//! - `native` (feature `native`, not on `wasm32`): the tokio + reqwest client used by the
//!   `httpipe` CLI.

pub mod protocol;

// The clients' core; the relay (built without `crypto`) shares only `protocol`.
#[cfg(feature = "crypto")]
pub mod client;

pub mod csv;

#[cfg(feature = "crypto")]
mod text;

#[cfg(feature = "crypto")]
pub mod crypto;

// The JS bindings: their contract is docs/js-api.md and js/index.d.ts; public for the
// wasm-bindgen tests (tests/wasm_bindings.rs) only.
#[cfg(all(target_arch = "wasm32", feature = "crypto"))]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod wasm;

#[cfg(all(feature = "native", not(target_arch = "wasm32")))]
pub mod native;
