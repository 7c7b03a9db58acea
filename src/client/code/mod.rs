//! Short codes (`PROTOCOL.md` §14), sans-IO: the code (`7-guitarist-revenge`), the exchange
//! of each side as a poll machine ([`CodeSend`], [`CodeReceive`]: which request comes next,
//! the busy-channel loop, when to show the code, the verdicts), the SPAKE2 steps they take,
//! the keys derived from it (the data path, the age identity and recipient of the transfer)
//! and the sealed offer. The drivers (`crate::native::code`, `crate::wasm::code`) only
//! perform the machines' requests and feed the answers back.
//!
//! - `exchange`: the two machines.
//! - `call`: what a machine asks ([`CodeStep`]), what it takes ([`CodeMachine`]), and one
//!   request's life from its step to its whole answer.
//! - `channel`: the code (§14.1), the channel the sender picks, the channel's pipes.
//! - `relay`: the requests of the exchange and how to read their answers.
//! - `spake`: each side's SPAKE2 steps and the sealed offer.
//! - `offer_json`: the offer's JSON, written and read.
//! - `keys`: what HKDF derives from the SPAKE2 key (§14.3).
//! - `words`: the PGP word list.

mod call;
mod channel;
mod exchange;
mod keys;
mod offer_json;
mod relay;
mod spake;
mod words;

use super::error::{Error, ErrorCode};
use crate::client::options::number_text;

pub use call::{CodeMachine, CodeStep};
pub use channel::{Code, Pipe};
pub use exchange::{CodeReceive, CodeSend};
pub use keys::CodeKeys;
pub use relay::CodeRelay;
pub use spake::Offer;
// What the unit tests (`tests.rs`, `use super::*`) drive directly.
#[cfg(test)]
use {
    call::BODY_LIMIT,
    channel::{next_code, pick_channel},
    spake::{CodeReceiver, CodeSender, SenderReply},
    words::{EVEN, ODD},
};

/// The SPAKE2 identity of both sides (symmetric mode), and the prefix of every HKDF `info`.
pub const SPAKE2_IDENTITY: &str = "httpipe-code-v1";
/// Seconds each of steps 2–4 waits for the other side (§14.2).
pub const CODE_STEP_S: f64 = 30.0;
/// Seconds the receiver waits for a sender on the channel before `WRONG_CODE` (§14.2 step 2).
pub const SENDER_WAIT_S: f64 = 10.0;
/// Highest channel number (§14.1).
pub const CHANNEL_MAX: u16 = crate::protocol::paths::CODE_CHANNEL_MAX;
/// The sender's channel ranges (§14.2 step 1): each `(highest channel, busy channels before
/// the next range)`; the last range is the rest of the tries, up to [`MAX_TRIES`].
pub const CHANNEL_TIERS: [(u16, u32); 3] = [(99, 3), (999, 3), (CHANNEL_MAX, u32::MAX)];
/// Busy channels after which the sender gives up (`RELAY_BUSY`).
pub const MAX_TRIES: u32 = 20;
/// A SPAKE2 message: one side byte and a compressed Ed25519 point.
pub const SPAKE2_MSG_LEN: usize = 33;
/// A key confirmation.
pub const CONFIRM_LEN: usize = 32;

/// A `WRONG_CODE` error: its message starts "wrong code: ".
fn wrong_code(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::WrongCode, format!("wrong code: {message}"))
}

/// A step of the exchange (§14.2 steps 2–4) that ran out of its [`CODE_STEP_S`]: `WRONG_CODE`
/// saying which side did not answer (not "no peer arrived": it was there a moment ago, and the
/// code is used up either way); `late` is that side and why it may be so.
fn step_late(e: Error, late: Late) -> Error {
    if e.code != ErrorCode::ConnectTimeout {
        return e;
    }
    let (who, why) = match late {
        Late::Receiver => (
            "the receiver that took this code's first message",
            "it left, or it was someone else trying the code",
        ),
        Late::Sender => (
            "the sender",
            "it left, or someone else is on this code's channel",
        ),
    };
    let cause = e.cause().cloned();
    wrong_code(format!(
        "{who} did not answer within {} s ({why}); nothing was sent ({})",
        number_text(CODE_STEP_S),
        e.message
    ))
    .with_shared_source(cause)
}

/// The side a step of the exchange waits for ([`step_late`]).
#[derive(Debug, Clone, Copy)]
enum Late {
    Receiver,
    Sender,
}

/// A POST on pipe `b` (receiver) or `c` (sender) found another writer there: someone else is in
/// this code's exchange (§14.4).
fn busy_pipe(pipe: Pipe) -> Error {
    match pipe {
        Pipe::C => wrong_code("someone else is answering on this code's channel"),
        Pipe::A | Pipe::B => wrong_code("someone else answered this code first"),
    }
}

#[cfg(test)]
mod tests;
