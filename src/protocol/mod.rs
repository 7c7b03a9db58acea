//! Wire pieces shared by the SDK and the relay (`docs/PROTOCOL.md` §2–§6).
//!
//! Everything here is plain data and pure functions: it compiles for `wasm32-unknown-unknown`
//! (no sockets, no clock — callers pass the current time in).
//!
//! - [`control`]: the producer's status-log lines (`[STATE:TRANSFER_SUCCESSFUL]`, ...) and the
//!   relay's error bodies (§3.2, §3.5, §5).
//! - [`token`]: access tokens `hp1.<claims>.<mac>` — mint, verify, scope (§6).
//! - [`upload`]: segmented-upload parameter names and limits (§4).
//! - [`paths`]: reserved paths and stream-path limits (§2).
//! - [`query`]: Data/Connect API query parameter names (§3.1, §5, §6).
//! - [`hello`]: the items of Connect hellos and delivery receipts (§5.1, §12).
//! - [`headers`]: header names and the `X-Piping: httpipe-size=N` declaration (§3.3, §11).
//! - `base64`: base64 in the three flavours the formats use, canonical only (tokens §6, receipts
//!   §12.2, age headers and armor).

pub(crate) mod base64;
pub mod channel;
pub mod control;
pub mod headers;
pub mod hello;
pub mod paths;
pub mod query;
pub mod token;
pub mod upload;
