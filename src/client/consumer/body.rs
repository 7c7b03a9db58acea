//! What a consumer's response body means (`PROTOCOL.md` §3.3, §11.3): a cut is `TRUNCATED`,
//! a short body too, and a keyless consumer refuses ciphertext (§11.3 step 5).

use crate::client::error::{Error, ErrorCode, Failure, StopReason};
use crate::crypto::{sniff, Sniff, SNIFF_BYTES};

/// Watches the consumer's response body: a transport failure is `TRUNCATED` (the relay
/// aborts the consumer's response when the producer's stream breaks, §3.3) unless the
/// operation was stopped; a body shorter than its `Content-Length` is `TRUNCATED` too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCheck {
    what: String,
    length: Option<u64>,
    seen: u64,
    /// The stream's first bytes while it is not known whether they begin ciphertext (a
    /// consumer without keys, §11.3 step 5); `None` once known, or when nobody asks.
    start: Option<Vec<u8>>,
}

impl BodyCheck {
    /// The check of a body (`what` it is, for messages) of `length` bytes when known;
    /// `sniff`: look at its start for ciphertext (a keyless consumer, §11.3 step 5).
    pub(super) fn new(what: String, length: Option<u64>, sniff: bool) -> Self {
        BodyCheck {
            what,
            length,
            seen: 0,
            start: sniff.then(Vec::new),
        }
    }

    /// True while [`BodyCheck::check_start`] wants the next chunk's first bytes.
    pub fn checks_start(&self) -> bool {
        self.start.is_some()
    }

    /// Before a chunk is handed out (plain bytes, a consumer without keys): `head` is its
    /// first bytes (at most [`SNIFF_BYTES`]). An age or age-rt start fails `WRONG_KEY`
    /// before the chunk that completes it is handed out (§11.3 step 5).
    pub fn check_start(&mut self, head: &[u8]) -> Result<(), Error> {
        let Some(start) = self.start.as_mut() else {
            return Ok(());
        };
        let room = SNIFF_BYTES.saturating_sub(start.len());
        start.extend_from_slice(&head[..head.len().min(room)]);
        match sniff(start) {
            Sniff::Undecided => Ok(()),
            Sniff::Plain => {
                self.start = None;
                Ok(())
            }
            Sniff::Encrypted(format) => Err(Error::new(
                ErrorCode::WrongKey,
                format!(
                    "{}: the stream is encrypted ({format}) and no passphrase or identities were \
                     given (PROTOCOL.md §11.3); receive with the sender's passphrase or your \
                     identity, or ask for the ciphertext to store it as it is",
                    self.what
                ),
            )),
        }
    }

    /// `n` more bytes arrived.
    pub fn on_bytes(&mut self, n: u64) {
        self.seen += n;
    }

    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Reading the body failed.
    pub fn on_failure(&self, f: Failure) -> Error {
        if f.coded.is_some() || f.stop != StopReason::None {
            return f.into_error(ErrorCode::Truncated, &self.what);
        }
        let cause = f.cause;
        let said = cause
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        Error::new(
            ErrorCode::Truncated,
            format!(
                "{}: the stream broke off before its end (the producer stopped or the connection was cut){said}",
                self.what
            ),
        )
        .with_shared_source(cause)
    }

    /// The body ended cleanly.
    pub fn on_end(&self) -> Result<(), Error> {
        match self.length {
            Some(n) if self.seen < n => Err(Error::new(
                ErrorCode::Truncated,
                format!("{}: got {} of {n} bytes", self.what, self.seen),
            )),
            _ => Ok(()),
        }
    }
}
