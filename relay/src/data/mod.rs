//! Data API (`docs/PROTOCOL.md` §3): `POST`/`PUT /{path}` produce, `GET /{path}` consumes.
//!
//! - [`producer`]: registers, answers with the live status log, and pumps the upload into
//!   every matched consumer with backpressure (the slowest consumer throttles all).
//! - [`consumer`]: registers and waits; its response starts when the transfer starts.
//! - [`body`]: the two streaming response bodies (status log, relayed bytes).
//! - [`source`]: the producer's upload: the raw body (read ahead a little while waiting,
//!   which is how a waiting producer that hangs up is noticed) or a multipart first part.
//! - [`headers`]: which request headers the consumers get (§3.3).

pub mod body;
pub mod consumer;
pub mod headers;
pub mod producer;
pub mod source;

use tokio::sync::oneshot;

/// What a consumer hands to the pairing table: the producer sends the consumer its response
/// through it when the transfer starts.
pub type Handoff = oneshot::Sender<Start>;

/// The start of a consumer's response: forwarded headers and the relayed bytes.
pub struct Start {
    pub headers: http::HeaderMap,
    pub body: body::ConsumerBody,
}
