//! The code (§14.1), the channel the sender picks (§14.2 step 1), the channel's pipes.

use crate::text::quoted;
use std::fmt;

use super::words::{WordList, EVEN, ODD};
use super::{wrong_code, CHANNEL_MAX, CHANNEL_TIERS, MAX_TRIES};
use crate::client::error::{Error, ErrorCode};
use crate::crypto::RandomSource;

/// A short code `N-ODD-EVEN` (§14.1): the channel, then a word of the PGP "odd" list (three
/// syllables) and one of its "even" list (two syllables), one random byte each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    channel: u16,
    odd: u8,
    even: u8,
}

impl Code {
    /// The code on `channel` (1–9999) with the words of `bytes`.
    pub fn new(channel: u16, bytes: [u8; 2]) -> Result<Code, Error> {
        if !(1..=CHANNEL_MAX).contains(&channel) {
            return Err(Error::usage(format!(
                "a code's channel is 1–{CHANNEL_MAX}, not {channel}"
            )));
        }
        Ok(Code {
            channel,
            odd: bytes[0],
            even: bytes[1],
        })
    }

    /// Reads a code as a person typed it: case-insensitive, parts separated by any run of
    /// `-` and spaces. `WRONG_CODE` naming the part that is wrong.
    pub fn parse(input: &str) -> Result<Code, Error> {
        let lower = input.to_ascii_lowercase();
        let parts: Vec<&str> = lower
            .split(|c: char| c == '-' || c.is_whitespace())
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() != 3 {
            return Err(wrong_code(format!(
                "{} is not a code: a code is a number and two words, like 7-guitarist-revenge",
                quoted(input)
            )));
        }
        let n = parts[0];
        let channel = (!n.is_empty()
            && n.len() <= 4
            && n.bytes().all(|b| b.is_ascii_digit())
            && !n.starts_with('0'))
        .then(|| n.parse::<u16>().ok())
        .flatten()
        .filter(|c| (1..=CHANNEL_MAX).contains(c))
        .ok_or_else(|| {
            wrong_code(format!(
                "the code's number {} is wrong: it is 1–{CHANNEL_MAX}, as the 7 in 7-guitarist-revenge",
                quoted(n)
            ))
        })?;
        let word = |w: &str, list: &WordList, other: &WordList, which: &str| {
            if let Some(b) = list.byte_of(w) {
                return Ok(b);
            }
            let hint = if other.byte_of(w).is_some() {
                " (it is a word of the other place: are the two words swapped?)"
            } else {
                ""
            };
            Err(wrong_code(format!(
                "the code's {which} word {} is not one a code uses{hint}",
                quoted(w)
            )))
        };
        let odd = word(parts[1], &ODD, &EVEN, "first")?;
        let even = word(parts[2], &EVEN, &ODD, "second")?;
        Ok(Code { channel, odd, even })
    }

    /// The channel number N.
    pub fn channel(&self) -> u16 {
        self.channel
    }

    /// The stream path of one of the channel's pipes `a`, `b`, `c`: `/code/v1/N/{pipe}`.
    pub fn pipe_path(&self, pipe: Pipe) -> String {
        pipe_path(self.channel, pipe)
    }
}

impl fmt::Display for Code {
    /// The canonical form, the SPAKE2 password: `7-guitarist-revenge`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{}",
            self.channel,
            ODD.word(self.odd),
            EVEN.word(self.even)
        )
    }
}

/// The channel for the sender's next try, after `busy` busy channels, from a random `r`:
/// uniform in the range of [`CHANNEL_TIERS`] that `busy` has reached: 1–99 for the first 3
/// tries, 1–999 for the next 3, then 1–9999 (§14.2 step 1). Never the lowest free one: a
/// crowd can't tell which channel the next sender takes.
pub fn pick_channel(busy: u32, r: u32) -> u16 {
    let mut tries = busy;
    let mut range = CHANNEL_MAX;
    for (top, count) in CHANNEL_TIERS {
        range = top;
        if tries < count {
            break;
        }
        tries -= count;
    }
    (r % u32::from(range)) as u16 + 1
}

/// The sender's next code after `busy` busy channels: a channel by [`pick_channel`] and two
/// random words. `RELAY_BUSY` after [`MAX_TRIES`] busy channels in a row.
pub fn next_code(busy: u32, rng: &mut dyn RandomSource) -> Result<Code, Error> {
    if busy >= MAX_TRIES {
        return Err(Error::new(
            ErrorCode::RelayBusy,
            format!(
                "the relay's code channels are busy: {busy} channels in a row were taken by \
                 other senders"
            ),
        ));
    }
    let mut r = [0u8; 6];
    rng.fill(&mut r)?;
    let channel = pick_channel(busy, u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
    Code::new(channel, [r[4], r[5]])
}

/// One of a channel's three pipes (§14.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    /// Sender → receiver: `A`.
    A,
    /// Receiver → sender: `B ‖ confirm_r`.
    B,
    /// Sender → receiver: `confirm_s ‖ seal(offer)`.
    C,
}

pub(super) fn pipe_path(channel: u16, pipe: Pipe) -> String {
    let p = match pipe {
        Pipe::A => crate::protocol::paths::CODE_FIRST_PIPE,
        Pipe::B => 'b',
        Pipe::C => 'c',
    };
    crate::protocol::paths::code_pipe_path(channel, p)
}
