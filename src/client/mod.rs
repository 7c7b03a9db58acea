//! The SDK's client core, target-independent and sans-IO (`PROTOCOL.md` §11): every protocol
//! decision of the producer and the consumer lives here, as state machines that take answers
//! and events in and say what to do next. They know nothing about HTTP libraries; two thin
//! adapters drive them: `crate::wasm` (the global `fetch`, shipped as the npm package) and
//! `crate::native` (tokio + reqwest, feature `native`, used by the `httpipe` CLI).
//!
//! - [`producer`]: `send` — rendezvous, streaming vs segmented upload and the fallback, the
//!   part loop and its retries, the status log, failure verdicts.
//! - [`consumer`]: `receive` — rendezvous, the `GET`, metadata, truncation checks.
//! - `code` (feature `crypto`): short codes (§14): the code, the exchange of each side as a
//!   poll machine (step order, busy channels, verdicts), the keys and the data path derived.
//! - [`rendezvous`]: one wait on the Connect API (§5).
//! - `keys` (feature `crypto`): which keys make an encryptor or a decryptor (§7.1), key
//!   files' text included.
//! - [`error`]: the one error type ([`error::Error`]: code, message, source).
//! - [`request`]: the requests the machines ask for.
//! - [`status`]: the producer's status log (§3.2).
//! - [`urls`]: data, Connect (§5) and segmented-upload (§4) URLs.
//! - [`parts`]: cutting a byte stream into segmented-upload parts (§4) with bounded memory.
//! - [`transport`]: the `upload` option and what is known per relay origin (§10).
//! - [`stall`]: when a connection that stops without closing counts as stalled (§12.4).
//! - [`rate`]: progress and transfer rate.
//! - [`disposition`]: `Content-Disposition` filename encoding and parsing.
//! - `ledger` (feature `crypto`): what each side counts and commits to for a delivery
//!   receipt (§12.2), and the receipt key; every adapter feeds it the same bytes.

#[cfg(feature = "crypto")]
pub mod code;
pub mod consumer;
pub mod disposition;
pub mod error;
#[cfg(feature = "crypto")]
pub mod keys;
#[cfg(feature = "crypto")]
pub mod ledger;
pub mod parts;
pub mod producer;
pub mod rate;
pub mod receipt;
pub mod rendezvous;
pub mod request;
pub mod resume;
pub mod stall;
pub mod status;
pub mod transport;
pub mod urls;

pub use error::{Error, ErrorCode};
