//! The public API's error codes and the mapping from relay answers to them.

use std::fmt;

/// A stable, machine-readable error code (the `code` of the JavaScript `HttpipeError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 401: the relay needs a (valid) access token (`PROTOCOL.md` §6).
    Unauthorized,
    /// 403: the token is valid but not for this path or mode (§6).
    Forbidden,
    /// No peer arrived within `timeout` (Connect API 408, §5).
    ConnectTimeout,
    /// The consumer went away before the end (§3.2 `[ERROR:RECEIVER_PREMATURE_DISCONNECT]`).
    PeerDisconnected,
    /// The producer's stream ended without its clean end (§3.3 producer abort).
    Truncated,
    /// Ciphertext failed authentication (§7, §8).
    DecryptFailed,
    /// The passphrase or identities don't open the header (§7, §8).
    WrongKey,
    /// Any other refusal by the relay (4xx/5xx with its `[ERROR]` line).
    RelayError,
    /// The caller's `AbortSignal` fired.
    Aborted,
    /// The runtime or the input can't do what was asked.
    Unsupported,
    /// The connection to the relay failed or broke.
    Network,
}

impl ErrorCode {
    /// The code as the string JavaScript sees, e.g. `"PEER_DISCONNECTED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::ConnectTimeout => "CONNECT_TIMEOUT",
            ErrorCode::PeerDisconnected => "PEER_DISCONNECTED",
            ErrorCode::Truncated => "TRUNCATED",
            ErrorCode::DecryptFailed => "DECRYPT_FAILED",
            ErrorCode::WrongKey => "WRONG_KEY",
            ErrorCode::RelayError => "RELAY_ERROR",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::Unsupported => "UNSUPPORTED",
            ErrorCode::Network => "NETWORK",
        }
    }
}

/// An error with a code and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    pub code: ErrorCode,
    pub message: String,
}

impl ClientError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ClientError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ClientError {}

/// The relay's own words: the first non-empty line of an error body, at most 300 chars.
fn relay_words(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(300).collect()
}

/// Maps a non-success relay answer (status and text body) of a request made for `what`
/// (e.g. `"POST http://relay/p"`) to an error.
pub fn classify_response(status: u16, body: &str, what: &str) -> ClientError {
    let words = relay_words(body);
    let said = if words.is_empty() {
        String::new()
    } else {
        format!(" (relay said: {words})")
    };
    if body.contains("[ERROR:RECEIVER_PREMATURE_DISCONNECT]") {
        return ClientError::new(
            ErrorCode::PeerDisconnected,
            format!("the consumer disconnected before the end of the stream ({what})"),
        );
    }
    match status {
        401 => ClientError::new(
            ErrorCode::Unauthorized,
            format!("{what}: the relay requires a valid access token; pass `token`{said}"),
        ),
        403 => ClientError::new(
            ErrorCode::Forbidden,
            format!("{what}: the access token does not allow this path or mode{said}"),
        ),
        408 => ClientError::new(
            ErrorCode::ConnectTimeout,
            format!("{what}: no peer arrived within the timeout{said}"),
        ),
        _ => ClientError::new(
            ErrorCode::RelayError,
            format!("{what}: the relay answered HTTP {status}{said}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_codes() {
        assert_eq!(
            classify_response(401, "[ERROR:UNAUTHORIZED] x\n", "GET /p").code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            classify_response(403, "", "GET /p").code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            classify_response(408, "[ERROR:CONNECT_TIMEOUT]\n", "GET /p").code,
            ErrorCode::ConnectTimeout
        );
        let e = classify_response(
            400,
            "[ERROR] Another sender has been connected on '/p'.\n",
            "POST /p",
        );
        assert_eq!(e.code, ErrorCode::RelayError);
        assert!(e.message.contains("Another sender"), "{}", e.message);
        assert!(e.message.contains("HTTP 400"));
    }

    #[test]
    fn disconnect_line_wins_over_status() {
        let e = classify_response(
            200,
            "[INFO] x\n[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n",
            "POST /p",
        );
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
    }

    #[test]
    fn long_bodies_are_cut() {
        let body = "x".repeat(10_000);
        assert!(classify_response(500, &body, "GET /p").message.len() < 400);
    }
}
