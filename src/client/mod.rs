//! The SDK's client core, target-independent and sans-IO (`PROTOCOL.md` §11): every protocol
//! decision of the producer and the consumer lives here, as state machines that take answers
//! and events in and say what to do next. They know nothing about HTTP libraries; two thin
//! adapters drive them: `crate::wasm` (the global `fetch`, shipped as the npm package) and
//! `crate::native` (tokio + reqwest, feature `native`, used by the `httpipe` CLI).
//!
//! - `producer`: `send` — rendezvous, streaming vs segmented upload and the fallback, the
//!   part loop and its retries, the status log, failure verdicts.
//! - `consumer`: `receive` — rendezvous, the `GET`, metadata, truncation checks.
//! - `code`: short codes (§14): the code, the exchange of each side as a poll machine (step
//!   order, busy channels, verdicts), the keys and the data path derived.
//! - `consumer_receipt`: the consumer's receipt over its stream's life: which receipt goes
//!   when, once, and how long a driver waits for it (§12.2).
//! - `presence`: a producer's presence call and a waiting consumer's checks (§12.5).
//! - `delivery`: a consumer's receipt on its way, sent again while the relay is away (§12.2).
//! - `rendezvous`: one wait on the Connect API (§5).
//! - `keys` (feature `crypto`): which keys make an encryptor or a decryptor (§7.1), key
//!   files' text included.
//! - `options` (feature `crypto`): the checks and defaults of the options every driver takes,
//!   the transfer id for receipts and resume.
//! - `error`: the one error type ([`error::Error`]: code, message, source).
//! - `request`: the requests the machines ask for.
//! - `status`: the producer's status log (§3.2).
//! - `urls`: data, Connect (§5) and segmented-upload (§4) URLs.
//! - `parts`: cutting a byte stream into segmented-upload parts (§4) with bounded memory.
//! - `transport`: the `upload` option and what is known per relay origin (§10).
//! - `stall`: when a connection that stops without closing counts as stalled (§12.4).
//! - `rate`: progress and transfer rate.
//! - `disposition`: `Content-Disposition` filename encoding and parsing.
//! - `ledger` (feature `crypto`): what each side counts and commits to for a delivery
//!   receipt (§12.2), and the receipt key; every adapter feeds it the same bytes.

pub(crate) mod code;
pub(crate) mod consumer;

pub(crate) mod delivery;
pub(crate) mod disposition;
pub(crate) mod error;
pub(crate) mod keys;
pub(crate) mod ledger;
pub(crate) mod options;
pub(crate) mod parts;
pub(crate) mod presence;
pub(crate) mod producer;
pub(crate) mod rate;
pub(crate) mod receipt;
pub(crate) mod rendezvous;
pub(crate) mod request;
pub(crate) mod resume;
pub(crate) mod stall;
pub(crate) mod status;
pub(crate) mod transport;
pub(crate) mod urls;

// What the CLI, the integration tests and the published crate use of the core; everything
// else is the drivers' business (`pub(crate)`).
pub use code::{Code, CodeKeys, Offer};
pub use error::{Error, ErrorCode};
pub use options::MAX_WAIT_S;
pub use parts::PartCutter;
pub use rate::Progress;
pub use receipt::ReceiptReport;
pub use resume::{agree, DEFAULT_WINDOW, MAX_WINDOW};
pub use transport::{Transport, UploadMode};
pub use urls::{stream_path, ConnectMode};
