//! The producer's status log (`PROTOCOL.md` §3.2): newline-terminated lines; the last one is
//! `[STATE:TRANSFER_SUCCESSFUL]` on success, `[ERROR:RECEIVER_PREMATURE_DISCONNECT]` when the
//! consumer left. `[INFO]` lines are not parsed.

use super::error::{ClientError, ErrorCode};

/// The line that ends a successful transfer.
pub const SUCCESS_LINE: &str = "[STATE:TRANSFER_SUCCESSFUL]";
/// The line the relay writes when a consumer leaves early.
pub const DISCONNECT_LINE: &str = "[ERROR:RECEIVER_PREMATURE_DISCONNECT]";

/// What the log says so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing decisive yet.
    Pending,
    /// The consumer left: the producer must stop.
    PeerDisconnected,
}

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
        // A status line is short; a relay that sends a huge line is not worth buffering.
        if self.partial.len() > 64 * 1024 {
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
        if line.starts_with(DISCONNECT_LINE) {
            self.disconnected = true;
        }
        self.last_line = Some(line);
    }

    /// The log ended: `Ok(final state line)` on success, else the error to report.
    pub fn finish(mut self) -> Result<String, ClientError> {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.take_line(&rest);
        }
        if self.disconnected {
            return Err(ClientError::new(
                ErrorCode::PeerDisconnected,
                "the consumer disconnected before the end of the stream",
            ));
        }
        match self.last_line {
            Some(l) if l == SUCCESS_LINE => Ok(l),
            Some(l) => Err(ClientError::new(
                ErrorCode::RelayError,
                format!("the relay did not confirm the transfer; its last status line was: {l}"),
            )),
            None => Err(ClientError::new(
                ErrorCode::Network,
                "the relay closed the producer's response without a final status line",
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
        assert_eq!(log.finish().unwrap(), SUCCESS_LINE);
    }

    #[test]
    fn success_without_final_newline() {
        let mut log = StatusLog::new();
        log.push(b"[INFO] a\n[STATE:TRANSFER_SUCCESSFUL]");
        assert!(log.finish().is_ok());
    }

    #[test]
    fn disconnect_is_seen_at_once() {
        let mut log = StatusLog::new();
        assert_eq!(
            log.push(b"[INFO] a\n[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n"),
            Verdict::PeerDisconnected
        );
        assert_eq!(log.finish().unwrap_err().code, ErrorCode::PeerDisconnected);
    }

    #[test]
    fn missing_success_is_an_error() {
        let mut log = StatusLog::new();
        log.push(b"[INFO] Start sending to 1 receiver(s)!\n");
        assert_eq!(log.finish().unwrap_err().code, ErrorCode::RelayError);
        assert_eq!(
            StatusLog::new().finish().unwrap_err().code,
            ErrorCode::Network
        );
    }
}
