//! The producer's status log (`PROTOCOL.md` §3.2), read incrementally: newline-terminated
//! lines; the last one is `[STATE:TRANSFER_SUCCESSFUL]` on success; a
//! `[ERROR:RECEIVER_PREMATURE_DISCONNECT]` line means the consumer left. `[INFO]` lines are
//! not parsed. The line vocabulary is `crate::protocol::control`.

use super::error::{Error, ErrorCode};
use crate::protocol::control::{LogLine, TRANSFER_SUCCESSFUL};

/// What the log says so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing decisive yet.
    Pending,
    /// The consumer left: the producer must stop.
    PeerDisconnected,
}

/// A status line is short; a longer unterminated piece is dropped rather than buffered.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Incremental reader of the status log (fed with response body bytes as they arrive).
#[derive(Debug, Default)]
pub struct StatusLog {
    partial: Vec<u8>,
    last_line: Option<String>,
    disconnected: bool,
}

impl StatusLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds body bytes; returns [`Verdict::PeerDisconnected`] as soon as that line arrived.
    pub fn push(&mut self, bytes: &[u8]) -> Verdict {
        self.partial.extend_from_slice(bytes);
        while let Some(nl) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            self.take_line(&line[..line.len() - 1]);
        }
        if self.partial.len() > MAX_LINE_BYTES {
            self.partial.clear();
        }
        if self.disconnected {
            Verdict::PeerDisconnected
        } else {
            Verdict::Pending
        }
    }

    fn take_line(&mut self, raw: &[u8]) {
        let line = String::from_utf8_lossy(raw).trim().to_string();
        if line.is_empty() {
            return;
        }
        if LogLine::classify(&line) == LogLine::ReceiverPrematureDisconnect {
            self.disconnected = true;
        }
        self.last_line = Some(line);
    }

    /// The log ended: `Ok(final state line)` on success, else the error to report (`what`
    /// names the request, e.g. "streaming upload to http://relay/p").
    pub fn finish(mut self, what: &str) -> Result<String, Error> {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.take_line(&rest);
        }
        if self.disconnected {
            return Err(Error::new(
                ErrorCode::PeerDisconnected,
                format!("{what}: the consumer disconnected before the end of the stream"),
            ));
        }
        match self.last_line {
            Some(l) if LogLine::classify(&l) == LogLine::TransferSuccessful => {
                Ok(TRANSFER_SUCCESSFUL.to_string())
            }
            Some(l) => Err(Error::new(
                ErrorCode::RelayError,
                format!(
                    "{what}: the relay did not confirm the transfer; its last status line was: {l}"
                ),
            )),
            None => Err(Error::new(
                ErrorCode::Network,
                format!(
                    "{what}: the relay closed the producer's response without a final status line"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_in_pieces() {
        let mut log = StatusLog::new();
        for piece in [
            "[INFO] Waiting for 1 receiver(s)...\n[IN",
            "FO] x\n[STATE:TRANSFER_",
            "SUCCESSFUL]\n",
        ] {
            assert_eq!(log.push(piece.as_bytes()), Verdict::Pending);
        }
        assert_eq!(log.finish("t").unwrap(), TRANSFER_SUCCESSFUL);
    }

    #[test]
    fn success_without_final_newline() {
        let mut log = StatusLog::new();
        log.push(b"[INFO] a\n[STATE:TRANSFER_SUCCESSFUL]");
        assert!(log.finish("t").is_ok());
    }

    #[test]
    fn disconnect_is_seen_at_once() {
        let mut log = StatusLog::new();
        assert_eq!(
            log.push(b"[INFO] a\n[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n"),
            Verdict::PeerDisconnected
        );
        assert_eq!(
            log.finish("t").unwrap_err().code,
            ErrorCode::PeerDisconnected
        );
    }

    #[test]
    fn missing_success_is_an_error() {
        let mut log = StatusLog::new();
        log.push(b"[INFO] Start sending to 1 receiver(s)!\n");
        assert_eq!(log.finish("t").unwrap_err().code, ErrorCode::RelayError);
        assert_eq!(
            StatusLog::new().finish("t").unwrap_err().code,
            ErrorCode::Network
        );
    }

    #[test]
    fn success_then_more_lines_is_not_success() {
        let mut log = StatusLog::new();
        log.push(b"[STATE:TRANSFER_SUCCESSFUL]\n[ERROR] shutting down\n");
        assert_eq!(log.finish("t").unwrap_err().code, ErrorCode::RelayError);
    }

    #[test]
    fn a_huge_line_is_dropped_not_buffered() {
        let mut log = StatusLog::new();
        log.push(&vec![b'x'; 100_000]);
        log.push(b"\n[STATE:TRANSFER_SUCCESSFUL]\n");
        assert!(log.finish("t").is_ok());
    }
}
