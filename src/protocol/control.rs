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

/// A request the relay refuses, with the exact status, code and body of §3.5. Every refusal
/// the relay sends is one of these (401/403 come from the token check, §6); the code travels
/// in [`crate::protocol::headers::ERROR_CODE`] so clients read it instead of guessing from the
/// status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// 400: a producer on a reserved path (§2).
    ReservedPath(String),
    /// 400: a second producer while one is waiting or transferring.
    AnotherSender(String),
    /// 400: one consumer more than `n`.
    TooManyReceivers,
    /// 400: producer and consumer disagree on `n` (`expected` is the path's `n`).
    ReceiverCountMismatch {
        /// The path's `n`.
        expected: usize,
        /// The request's `n`.
        got: usize,
    },
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
    /// 400: a malformed or too long request header the relay reads (name given), e.g.
    /// `X-Httpipe-Hello` (§5.1).
    InvalidHeader(&'static str),
    /// 400: `/connect/v0/` without a stream path (§5).
    ConnectNeedsPath,
    /// 404: none of the relay's own paths (§2).
    NotFound,
    /// 404: a segmented part names an upload the relay doesn't know or already ended (§4).
    UnknownUpload,
    /// 409: a part number other than the next one (§4).
    PartOutOfOrder {
        /// The next part's number.
        expected: u64,
        /// The part number sent.
        got: u64,
    },
    /// 409: a retry of an accepted part with another length (§4).
    PartLengthMismatch {
        /// The part's number.
        part: u64,
    },
    /// 413: a part longer than the relay's `--max-part-bytes` (§4).
    PartTooLarge {
        /// The relay's limit in bytes.
        max: usize,
    },
    /// 400: a part's request body failed before its end (§4).
    PartBodyFailed,
    /// 503: the relay is shutting down; waiting peers are sent away (§9).
    ShuttingDown,
    /// 503: a relay cluster node can't reach its coordination store (§13.2).
    ClusterUnavailable,
    /// 503: the cluster node serving the path does not answer (§13.3).
    OwnerUnreachable,
    /// 404: the token endpoint on a relay in open mode (§6).
    TokensNotNeeded,
    /// 400: the token endpoint's form is invalid (the field's rule given) (§6).
    InvalidTokenRequest(&'static str),
    /// 410: to a consumer, when the producer it met withdrew (§3.10): it failed before sending
    /// anything.
    ProducerWithdrew,
    /// 429: the client's address holds the relay's most waiting peers (§9 "Per-address
    /// limits"; the limit given).
    TooManyWaiting {
        /// The relay's limit per address.
        max: usize,
    },
    /// 404: a `GET` on pipe `a` of a code channel with no sender waiting there (§14.5 rule 2).
    NoSender,
    /// 429: the client's address holds the relay's most code channel requests (§14.5 rule 1).
    TooManyCodeRequests {
        /// The relay's limit per address.
        max: usize,
    },
    /// 429: the client's address made too many code lookups (§14.5 rule 3).
    TooManyCodeLookups {
        /// The relay's limit per address and minute.
        per_minute: u32,
    },
}

impl Rejection {
    /// HTTP status code for this rejection.
    pub fn status(&self) -> u16 {
        match self {
            Rejection::UnsupportedMethod(_) => 405,
            Rejection::PathTooLong => 414,
            Rejection::NotFound
            | Rejection::UnknownUpload
            | Rejection::TokensNotNeeded
            | Rejection::NoSender => 404,
            Rejection::TooManyWaiting { .. }
            | Rejection::TooManyCodeRequests { .. }
            | Rejection::TooManyCodeLookups { .. } => 429,
            Rejection::PartOutOfOrder { .. } | Rejection::PartLengthMismatch { .. } => 409,
            Rejection::PartTooLarge { .. } => 413,
            Rejection::ProducerWithdrew => 410,
            Rejection::ShuttingDown
            | Rejection::ClusterUnavailable
            | Rejection::OwnerUnreachable => 503,
            _ => 400,
        }
    }

    /// Seconds a refused client should wait before it tries again (`Retry-After`), for the
    /// per-address limits (§9, §14.5): 1, or for lookups the time one more takes to refill.
    pub fn retry_after_s(&self) -> Option<u32> {
        match self {
            Rejection::TooManyWaiting { .. } | Rejection::TooManyCodeRequests { .. } => Some(1),
            Rejection::TooManyCodeLookups { per_minute } => {
                Some(60u32.div_ceil((*per_minute).max(1)))
            }
            _ => None,
        }
    }

    /// The machine-readable code (§3.5), sent in `X-Httpipe-Error`.
    pub fn code(&self) -> Code {
        match self {
            Rejection::ReservedPath(_) => Code::ReservedPath,
            Rejection::AnotherSender(_) => Code::AnotherSender,
            Rejection::TooManyReceivers => Code::TooManyReceivers,
            Rejection::ReceiverCountMismatch { .. } => Code::ReceiverCountMismatch,
            Rejection::InvalidN => Code::InvalidN,
            Rejection::ServiceWorker => Code::ServiceWorker,
            Rejection::ContentRange => Code::ContentRange,
            Rejection::UnsupportedMethod(_) => Code::UnsupportedMethod,
            Rejection::PathTooLong => Code::PathTooLong,
            Rejection::InvalidParameter(_) => Code::InvalidParameter,
            Rejection::InvalidHeader(_) => Code::InvalidHeader,
            Rejection::ConnectNeedsPath => Code::ConnectNeedsPath,
            Rejection::NotFound => Code::NotFound,
            Rejection::UnknownUpload => Code::UnknownUpload,
            Rejection::PartOutOfOrder { .. } => Code::PartOutOfOrder,
            Rejection::PartLengthMismatch { .. } => Code::PartLengthMismatch,
            Rejection::PartTooLarge { .. } => Code::PartTooLarge,
            Rejection::PartBodyFailed => Code::PartBodyFailed,
            Rejection::ShuttingDown => Code::ShuttingDown,
            Rejection::ClusterUnavailable => Code::ClusterUnavailable,
            Rejection::OwnerUnreachable => Code::OwnerUnreachable,
            Rejection::TokensNotNeeded => Code::TokensNotNeeded,
            Rejection::InvalidTokenRequest(_) => Code::InvalidTokenRequest,
            Rejection::ProducerWithdrew => Code::ProducerWithdrew,
            Rejection::TooManyWaiting { .. } => Code::TooManyWaiting,
            Rejection::NoSender => Code::NoSender,
            Rejection::TooManyCodeRequests { .. } => Code::TooManyCodeRequests,
            Rejection::TooManyCodeLookups { .. } => Code::TooManyCodeLookups,
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
            Rejection::InvalidHeader(name) => format!("[ERROR] Invalid \"{name}\" header.\n"),
            Rejection::ConnectNeedsPath => format!(
                "[ERROR] The Connect API needs a stream path: {}{{path}}\n",
                super::paths::CONNECT_PREFIX
            ),
            Rejection::NotFound => "[ERROR] Not found.\n".to_string(),
            Rejection::UnknownUpload => "[ERROR] Unknown or expired upload id.\n".to_string(),
            Rejection::PartOutOfOrder { expected, got } => {
                format!("[ERROR] Expected part {expected}, got part {got}.\n")
            }
            Rejection::PartLengthMismatch { part } => {
                format!("[ERROR] Part {part} was already accepted with another length.\n")
            }
            Rejection::PartTooLarge { max } => {
                format!("[ERROR] A part may have at most {max} bytes.\n")
            }
            Rejection::PartBodyFailed => "[ERROR] The part's body failed.\n".to_string(),
            Rejection::ShuttingDown => {
                "[ERROR] The relay is shutting down; try again in a moment.\n".to_string()
            }
            Rejection::ClusterUnavailable => "[ERROR] The relay cluster is unavailable (its \
                coordination store does not answer): try again shortly.\n"
                .to_string(),
            Rejection::OwnerUnreachable => "[ERROR] The relay node serving this path does not \
                answer: try again shortly.\n"
                .to_string(),
            Rejection::TokensNotNeeded => {
                "[ERROR] This relay runs in open mode (no auth key): no tokens are needed.\n"
                    .to_string()
            }
            Rejection::InvalidTokenRequest(rule) => format!("[ERROR] {rule}\n"),
            Rejection::ProducerWithdrew => {
                "[ERROR] The sender failed before sending anything (it withdrew).\n".to_string()
            }
            Rejection::TooManyWaiting { max } => format!(
                "[ERROR] Too many waiting requests from your address (at most {max}): close \
                 some, or try again later.\n"
            ),
            Rejection::NoSender => "[ERROR] No sender waits on this code channel.\n".to_string(),
            Rejection::TooManyCodeRequests { max } => format!(
                "[ERROR] Too many short-code requests from your address at once (at most \
                 {max}): try again in a moment.\n"
            ),
            Rejection::TooManyCodeLookups { per_minute } => format!(
                "[ERROR] Too many short-code lookups from your address (at most {per_minute} a \
                 minute): wait a moment, then try again.\n"
            ),
        }
    }
}

/// The machine-readable refusal codes of §3.5 (header `X-Httpipe-Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The code of [`Rejection::ReservedPath`].
    ReservedPath,
    /// The code of [`Rejection::AnotherSender`].
    AnotherSender,
    /// The code of [`Rejection::TooManyReceivers`].
    TooManyReceivers,
    /// The code of [`Rejection::ReceiverCountMismatch`].
    ReceiverCountMismatch,
    /// The code of [`Rejection::InvalidN`].
    InvalidN,
    /// The code of [`Rejection::ServiceWorker`].
    ServiceWorker,
    /// The code of [`Rejection::ContentRange`].
    ContentRange,
    /// The code of [`Rejection::UnsupportedMethod`].
    UnsupportedMethod,
    /// The code of [`Rejection::PathTooLong`].
    PathTooLong,
    /// The code of [`Rejection::InvalidParameter`].
    InvalidParameter,
    /// The code of [`Rejection::InvalidHeader`].
    InvalidHeader,
    /// The code of [`Rejection::ConnectNeedsPath`].
    ConnectNeedsPath,
    /// The code of [`Rejection::NotFound`].
    NotFound,
    /// The code of [`Rejection::UnknownUpload`].
    UnknownUpload,
    /// The code of [`Rejection::PartOutOfOrder`].
    PartOutOfOrder,
    /// The code of [`Rejection::PartLengthMismatch`].
    PartLengthMismatch,
    /// The code of [`Rejection::PartTooLarge`].
    PartTooLarge,
    /// The code of [`Rejection::PartBodyFailed`].
    PartBodyFailed,
    /// The code of [`Rejection::ShuttingDown`].
    ShuttingDown,
    /// The code of [`Rejection::ClusterUnavailable`].
    ClusterUnavailable,
    /// The code of [`Rejection::OwnerUnreachable`].
    OwnerUnreachable,
    /// The code of [`Rejection::TokensNotNeeded`].
    TokensNotNeeded,
    /// The code of [`Rejection::InvalidTokenRequest`].
    InvalidTokenRequest,
    /// The code of [`Rejection::ProducerWithdrew`].
    ProducerWithdrew,
    /// The code of [`Rejection::TooManyWaiting`].
    TooManyWaiting,
    /// The code of [`Rejection::NoSender`].
    NoSender,
    /// The code of [`Rejection::TooManyCodeRequests`].
    TooManyCodeRequests,
    /// The code of [`Rejection::TooManyCodeLookups`].
    TooManyCodeLookups,
}

/// Each code and its wire spelling (the only place the spellings live).
const CODES: [(Code, &str); 28] = [
    (Code::ReservedPath, "reserved-path"),
    (Code::AnotherSender, "another-sender"),
    (Code::TooManyReceivers, "too-many-receivers"),
    (Code::ReceiverCountMismatch, "receiver-count-mismatch"),
    (Code::InvalidN, "invalid-n"),
    (Code::ServiceWorker, "service-worker"),
    (Code::ContentRange, "content-range"),
    (Code::UnsupportedMethod, "unsupported-method"),
    (Code::PathTooLong, "path-too-long"),
    (Code::InvalidParameter, "invalid-parameter"),
    (Code::InvalidHeader, "invalid-header"),
    (Code::ConnectNeedsPath, "connect-needs-path"),
    (Code::NotFound, "not-found"),
    (Code::UnknownUpload, "unknown-upload"),
    (Code::PartOutOfOrder, "part-out-of-order"),
    (Code::PartLengthMismatch, "part-length-mismatch"),
    (Code::PartTooLarge, "part-too-large"),
    (Code::PartBodyFailed, "part-body-failed"),
    (Code::ShuttingDown, "shutting-down"),
    (Code::ClusterUnavailable, "cluster-unavailable"),
    (Code::OwnerUnreachable, "owner-unreachable"),
    (Code::TokensNotNeeded, "tokens-not-needed"),
    (Code::InvalidTokenRequest, "invalid-token-request"),
    (Code::ProducerWithdrew, "producer-withdrew"),
    (Code::TooManyWaiting, "too-many-waiting"),
    (Code::NoSender, "no-sender"),
    (Code::TooManyCodeRequests, "too-many-code-requests"),
    (Code::TooManyCodeLookups, "too-many-code-lookups"),
];

impl Code {
    /// The wire spelling, e.g. `unknown-upload`.
    pub fn as_str(self) -> &'static str {
        CODES
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, s)| *s)
            .unwrap_or("unknown")
    }

    /// A code read from `X-Httpipe-Error`; `None` for one this version doesn't know.
    pub fn parse(s: &str) -> Option<Code> {
        let s = s.trim();
        CODES.iter().find(|(_, name)| *name == s).map(|(c, _)| *c)
    }
}

/// Seconds a client waits for its withdrawal's answer (§3.10, §11.2 step 6): the consumer the
/// rendezvous paired it with comes within moments.
pub const WITHDRAW_WAIT_S: f64 = 5.0;

/// The answer to a segmented upload's abandonment (§4 "Abandoning").
pub const UPLOAD_ABANDONED: &str = "[INFO] The upload was abandoned.";

/// `[ERROR]` lines of the producer's status log when a transfer fails (§3.2); the consumer
/// sees the truncation (§3.3).
pub mod failure_line {
    /// The producer's upload broke before its end.
    pub const UPLOAD_FAILED: &str = "[ERROR] The sender's upload failed.";
    /// A segmented upload got no part for the gap timeout (§4).
    pub const UPLOAD_GAP_TIMEOUT: &str = "[ERROR] No part arrived in time: the upload was dropped.";
    /// The relay shut down while the producer waited or the transfer ran (§9).
    pub const SHUTTING_DOWN: &str = "[ERROR] The relay is shutting down: the transfer was aborted.";
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
    fn every_code_is_known_to_clients() {
        let all = [
            Rejection::ReservedPath("/p".into()),
            Rejection::AnotherSender("/p".into()),
            Rejection::TooManyReceivers,
            Rejection::ReceiverCountMismatch {
                expected: 1,
                got: 2,
            },
            Rejection::InvalidN,
            Rejection::ServiceWorker,
            Rejection::ContentRange,
            Rejection::UnsupportedMethod("X".into()),
            Rejection::PathTooLong,
            Rejection::InvalidParameter("n"),
            Rejection::InvalidHeader("X-Httpipe-Hello"),
            Rejection::ConnectNeedsPath,
            Rejection::NotFound,
            Rejection::UnknownUpload,
            Rejection::PartOutOfOrder {
                expected: 1,
                got: 2,
            },
            Rejection::PartLengthMismatch { part: 1 },
            Rejection::PartTooLarge { max: 1 },
            Rejection::PartBodyFailed,
            Rejection::ShuttingDown,
            Rejection::ClusterUnavailable,
            Rejection::OwnerUnreachable,
            Rejection::TokensNotNeeded,
            Rejection::InvalidTokenRequest("x"),
            Rejection::ProducerWithdrew,
            Rejection::TooManyWaiting { max: 1 },
            Rejection::NoSender,
            Rejection::TooManyCodeRequests { max: 1 },
            Rejection::TooManyCodeLookups { per_minute: 1 },
        ];
        assert_eq!(all.len(), CODES.len());
        for r in &all {
            assert_eq!(Code::parse(r.code().as_str()), Some(r.code()));
            assert!(r.body().starts_with("[ERROR] ") && r.body().ends_with('\n'));
        }
        assert_eq!(Code::parse("nope"), None);
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
        assert_eq!(Rejection::UnknownUpload.status(), 404);
        assert_eq!(Rejection::PartTooLarge { max: 9 }.status(), 413);
        assert_eq!(Rejection::ShuttingDown.status(), 503);
        assert_eq!(Rejection::TooManyWaiting { max: 9 }.status(), 429);
        assert_eq!(
            Rejection::TooManyCodeRequests { max: 16 }.body(),
            "[ERROR] Too many short-code requests from your address at once (at most 16): try \
             again in a moment.\n"
        );
        assert_eq!(Rejection::NoSender.status(), 404);
        assert_eq!(
            Rejection::InvalidN.body(),
            "[ERROR] Invalid \"n\" query parameter\n"
        );
        let hello = Rejection::InvalidHeader(crate::protocol::headers::HELLO);
        assert_eq!(
            hello.body(),
            "[ERROR] Invalid \"X-Httpipe-Hello\" header.\n"
        );
        assert_eq!(
            (hello.status(), hello.code().as_str()),
            (400, "invalid-header")
        );
    }
}
