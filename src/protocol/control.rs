//! Status-log lines and error bodies (`docs/PROTOCOL.md` §3.2, §3.5, §5).
//!
//! The producer's response body is a log of newline-terminated lines. Clients MUST NOT parse
//! `[INFO]` lines; they look for the two machine-readable lines below. Every error body the
//! relay sends is one of the [`Rejection`] texts (or starts with [`UNAUTHORIZED_PREFIX`] /
//! [`FORBIDDEN_PREFIX`]).

/// Last line of a producer's log after every consumer received the last byte (§3.2).
pub const TRANSFER_SUCCESSFUL: &str = "[STATE:TRANSFER_SUCCESSFUL]";
/// A consumer hung up before the end of the stream (§3.2).
pub const RECEIVER_PREMATURE_DISCONNECT: &str = "[ERROR:RECEIVER_PREMATURE_DISCONNECT]";
/// Body of a Connect API `408` (§5).
pub const CONNECT_TIMEOUT: &str = "[ERROR:CONNECT_TIMEOUT]";
/// Prefix of every `401` body (§6).
pub const UNAUTHORIZED_PREFIX: &str = "[ERROR:UNAUTHORIZED]";
/// Prefix of every `403` body (§6).
pub const FORBIDDEN_PREFIX: &str = "[ERROR:FORBIDDEN]";

/// What one line of a producer's status log means to a client (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLine {
    /// `[STATE:TRANSFER_SUCCESSFUL]`: every consumer received every byte.
    TransferSuccessful,
    /// `[ERROR:RECEIVER_PREMATURE_DISCONNECT]`: a consumer left before the end.
    ReceiverPrematureDisconnect,
    /// Any other `[ERROR...` line (the transfer failed).
    OtherError,
    /// `[INFO]` or anything else: informative only.
    Info,
}

impl LogLine {
    /// Classifies one status-log line (trailing `\r`/`\n` ignored).
    pub fn classify(line: &str) -> LogLine {
        let line = line.trim_end_matches(['\r', '\n']);
        if line == TRANSFER_SUCCESSFUL {
            LogLine::TransferSuccessful
        } else if line == RECEIVER_PREMATURE_DISCONNECT {
            LogLine::ReceiverPrematureDisconnect
        } else if line.starts_with("[ERROR") {
            LogLine::OtherError
        } else {
            LogLine::Info
        }
    }
}

/// A request the relay refuses, with the exact status and body of §3.5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// 400: a producer on a reserved path (§2).
    ReservedPath(String),
    /// 400: a second producer while one is waiting or transferring.
    AnotherSender(String),
    /// 400: one consumer more than `n`.
    TooManyReceivers,
    /// 400: producer and consumer disagree on `n` (`expected` is the path's `n`).
    ReceiverCountMismatch { expected: usize, got: usize },
    /// 400: `n` is not a positive integer.
    InvalidN,
    /// 400: `GET` with `Service-Worker: script`.
    ServiceWorker,
    /// 400: `POST`/`PUT` with `Content-Range`.
    ContentRange,
    /// 405: any other method on a stream path.
    UnsupportedMethod(String),
    /// 414: the stream path is longer than [`crate::protocol::paths::MAX_PATH_BYTES`].
    PathTooLong,
    /// 400: a malformed query parameter (name given).
    InvalidParameter(&'static str),
}

impl Rejection {
    /// HTTP status code for this rejection.
    pub fn status(&self) -> u16 {
        match self {
            Rejection::UnsupportedMethod(_) => 405,
            Rejection::PathTooLong => 414,
            _ => 400,
        }
    }

    /// The newline-terminated `text/plain` body (§3.5).
    pub fn body(&self) -> String {
        match self {
            Rejection::ReservedPath(p) => {
                format!("[ERROR] Cannot send to the reserved path '{p}'.\n")
            }
            Rejection::AnotherSender(p) => {
                format!("[ERROR] Another sender has been connected on '{p}'.\n")
            }
            Rejection::TooManyReceivers => {
                "[ERROR] The number of receivers has reached limits.\n".to_string()
            }
            Rejection::ReceiverCountMismatch { expected, got } => {
                format!("[ERROR] The number of receivers should be {expected} but {got}.\n")
            }
            Rejection::InvalidN => "[ERROR] Invalid \"n\" query parameter\n".to_string(),
            Rejection::ServiceWorker => {
                "[ERROR] Service Worker registration is rejected.\n".to_string()
            }
            Rejection::ContentRange => "[ERROR] Content-Range is not supported.\n".to_string(),
            Rejection::UnsupportedMethod(m) => format!("[ERROR] Unsupported method: {m}.\n"),
            Rejection::PathTooLong => format!(
                "[ERROR] The path is longer than {} bytes.\n",
                super::paths::MAX_PATH_BYTES
            ),
            Rejection::InvalidParameter(name) => {
                format!("[ERROR] Invalid \"{name}\" query parameter\n")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_lines() {
        assert_eq!(
            LogLine::classify("[STATE:TRANSFER_SUCCESSFUL]\n"),
            LogLine::TransferSuccessful
        );
        assert_eq!(
            LogLine::classify("[ERROR:RECEIVER_PREMATURE_DISCONNECT]\r\n"),
            LogLine::ReceiverPrematureDisconnect
        );
        assert_eq!(LogLine::classify("[ERROR] boom"), LogLine::OtherError);
        assert_eq!(
            LogLine::classify("[INFO] Waiting for 1 receiver(s)..."),
            LogLine::Info
        );
    }

    #[test]
    fn rejection_bodies_match_the_table() {
        assert_eq!(
            Rejection::ReservedPath("/help".into()).body(),
            "[ERROR] Cannot send to the reserved path '/help'.\n"
        );
        assert_eq!(
            Rejection::ReceiverCountMismatch {
                expected: 2,
                got: 3
            }
            .body(),
            "[ERROR] The number of receivers should be 2 but 3.\n"
        );
        assert_eq!(Rejection::UnsupportedMethod("DELETE".into()).status(), 405);
        assert_eq!(
            Rejection::InvalidN.body(),
            "[ERROR] Invalid \"n\" query parameter\n"
        );
    }
}
