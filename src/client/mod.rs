//! Target-independent SDK logic: everything the JavaScript bindings (`src/wasm/`) decide that
//! does not need a JavaScript runtime, so it is tested natively with `cargo test`.
//!
//! - [`error`]: the stable error codes of the public API and how relay answers map to them.
//! - [`status`]: the producer's status log (`PROTOCOL.md` §3.2).
//! - [`urls`]: data, Connect (§5) and segmented-upload (§4) URLs.
//! - [`parts`]: cutting a byte stream into segmented-upload parts (§4) with bounded memory.
//! - [`transport`]: choosing streaming vs segmented upload, remembered per relay origin (§10).
//! - [`rate`]: progress and transfer rate.
//! - [`disposition`]: `Content-Disposition` filename encoding and parsing.

pub mod disposition;
pub mod error;
pub mod parts;
pub mod rate;
pub mod status;
pub mod transport;
pub mod urls;
