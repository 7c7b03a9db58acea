//! Short codes (`PROTOCOL.md` §14), sans-IO: the code (`7-guitarist-revenge`), the SPAKE2
//! exchange of each side as a state machine that takes the bytes read from a pipe and returns
//! the bytes to write next, the keys derived from it (the data path, the age identity and
//! recipient of the transfer), the sealed offer, the channel requests and how to read their
//! answers. The adapters (`crate::wasm::code`, `crate::native::code`) only move bytes.
//!
//! Sender: [`CodeSender::new`] → `A` (POST pipe `a`) → [`CodeSender::on_b`] with pipe `b`'s
//! bytes → always POST its `c`, then fail `WRONG_CODE` or send to [`CodeKeys`].
//! Receiver: [`Code::parse`] → [`CodeReceiver::on_a`] with pipe `a`'s bytes → POST its
//! `B ‖ confirm_r` to `b` → [`CodeReceiver::on_c`] with pipe `c`'s bytes → [`CodeKeys`] and
//! the [`Offer`], or `WRONG_CODE`.
//!
//! - `channel`: the code (§14.1), the channel the sender picks, the channel's pipes.
//! - `relay`: the requests of the exchange and how to read their answers.
//! - `keys`: what HKDF derives from the SPAKE2 key (§14.3).
//! - `spake`: each side's SPAKE2 exchange and the sealed offer.
//! - `words`: the PGP word list.

mod channel;
mod keys;
mod relay;
mod spake;
mod words;

use super::error::{Error, ErrorCode};

pub use channel::{next_code, pick_channel, Code, Pipe};
pub use keys::CodeKeys;
pub use relay::{on_await_sender, on_get, on_post, on_post_log, CodeRelay, Posted};
pub use spake::{CodeReceiver, CodeSender, Offer, SenderReply};
pub use words::{EVEN, ODD};

/// The SPAKE2 identity of both sides (symmetric mode), and the prefix of every HKDF `info`.
pub const SPAKE2_IDENTITY: &str = "httpipe-code-v1";
/// Seconds each of steps 2–4 waits for the other side (§14.2).
pub const CODE_STEP_S: f64 = 30.0;
/// Seconds the receiver waits for a sender on the channel before `WRONG_CODE` (§14.2 step 2).
pub const SENDER_WAIT_S: f64 = 10.0;
/// Highest channel number.
pub const CHANNEL_MAX: u16 = 999;
/// Channels tried first (1 to this); after [`NARROW_TRIES`] busy ones, 1 to [`CHANNEL_MAX`].
pub const CHANNEL_NARROW: u16 = 99;
/// Busy channels in 1–99 before the sender picks in 1–999.
pub const NARROW_TRIES: u32 = 3;
/// Busy channels after which the sender gives up (`RELAY_ERROR`).
pub const MAX_TRIES: u32 = 20;
/// A SPAKE2 message: one side byte and a compressed Ed25519 point.
pub const SPAKE2_MSG_LEN: usize = 33;
/// A key confirmation.
pub const CONFIRM_LEN: usize = 32;
/// The Poly1305 tag of the sealed offer.

/// A `WRONG_CODE` error: its message starts "wrong code: ".
fn wrong_code(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::WrongCode, format!("wrong code: {message}"))
}

/// A POST on pipe `b` (receiver) or `c` (sender) found another writer there: someone else is in
/// this code's exchange (§14.4).
pub fn busy_pipe(pipe: Pipe) -> Error {
    match pipe {
        Pipe::C => wrong_code("someone else is answering on this code's channel; make a new code"),
        Pipe::A | Pipe::B => wrong_code("someone else answered this code first"),
    }
}

#[cfg(test)]
mod tests;
