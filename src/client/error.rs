//! The SDK's one error type: a stable [`ErrorCode`] (the JavaScript `HttpipeError.code`, the
//! native client's [`Error::code`], the CLI's exit code), a message a person can act on, and
//! the underlying cause. The wasm bindings turn it into an `HttpipeError` once, at the
//! `#[wasm_bindgen]` boundary; the native client returns it as is.

use std::fmt;
use std::sync::Arc;

use crate::protocol::control::{Code, LogLine};
use crate::protocol::headers::ERROR_CODE;

use super::request::{Headers, OnTimeout, Request};

/// A stable, machine-readable error code (the `code` of the JavaScript `HttpipeError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// The caller aborted (JavaScript `AbortSignal`, native `abort()`), or its source failed
    /// (`source_failed`, §11.2 step 5).
    Aborted,
    /// The runtime or the input can't do what was asked (bad options, bad source).
    Unsupported,
    /// The connection to the relay failed or broke.
    Network,
    /// (producer) The consumer promised a receipt and none valid arrived in time (§12).
    Unconfirmed,
    /// A short code (§14) is malformed, no sender waits for it, or the two sides' codes
    /// differ (the key confirmation failed): no data was sent.
    WrongCode,
    /// The relay is at a limit for now (`429`: too many waiting requests or short-code
    /// requests from this address, §9, §14.5), or every short-code channel tried was busy
    /// (§14.2): trying again later may work.
    RelayBusy,
}

impl ErrorCode {
    /// Every code, in documentation order.
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::ConnectTimeout,
        ErrorCode::PeerDisconnected,
        ErrorCode::Truncated,
        ErrorCode::DecryptFailed,
        ErrorCode::WrongKey,
        ErrorCode::RelayError,
        ErrorCode::Aborted,
        ErrorCode::Unsupported,
        ErrorCode::Network,
        ErrorCode::Unconfirmed,
        ErrorCode::WrongCode,
        ErrorCode::RelayBusy,
    ];

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
            ErrorCode::Unconfirmed => "UNCONFIRMED",
            ErrorCode::WrongCode => "WRONG_CODE",
            ErrorCode::RelayBusy => "RELAY_BUSY",
        }
    }

    /// The code for its string form.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cause of an [`Error`], kept for `source()` (and as the JavaScript `cause`).
pub type Source = Arc<dyn std::error::Error + Send + Sync>;

/// An error with a code, a message a person can act on, and its cause.
#[derive(Clone)]
pub struct Error {
    /// What kind of failure (the stable code).
    pub code: ErrorCode,
    /// What happened, in words a person can act on.
    pub message: String,
    source: Option<Source>,
    /// The other side's error code, when it told us (a `failed` receipt, §12.2).
    peer: Option<ErrorCode>,
}

impl Error {
    /// An error with `code` and `message` (no cause).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            source: None,
            peer: None,
        }
    }

    /// The same error with the other side's code (a `failed` receipt, PROTOCOL.md §12.2).
    pub fn with_peer(mut self, peer: ErrorCode) -> Self {
        self.peer = Some(peer);
        self
    }

    /// The other side's error code, when its `failed` receipt named one (§12.2): e.g.
    /// `WRONG_KEY` on a producer whose consumer typed a wrong passphrase.
    pub fn peer(&self) -> Option<ErrorCode> {
        self.peer
    }

    /// The same error with `source` as its cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The same error with an already shared cause.
    pub fn with_shared_source(mut self, source: Option<Source>) -> Self {
        self.source = source;
        self
    }

    /// The cause, shared.
    pub fn cause(&self) -> Option<&Source> {
        self.source.as_ref()
    }

    /// The error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// An `UNSUPPORTED` error: bad options or input.
    pub fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Unsupported, message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("code", &self.code).field("message", &self.message);
        if let Some(p) = self.peer {
            d.field("peer", &p);
        }
        if let Some(s) = &self.source {
            d.field("source", &s.to_string());
        }
        d.finish()
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// A cause described in words only (a JavaScript exception, a transport error's text).
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub struct Cause {
    /// The error's class name, e.g. `TypeError`.
    pub name: String,
    pub message: String,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.name, self.message)
        }
    }
}

/// Its words (not derived: `{:?}` of a string costs the wasm module core's Unicode tables).
impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cause({self})")
    }
}

impl std::error::Error for Cause {}

/// Why an operation was stopped from outside the protocol (first reason wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopReason {
    /// Not stopped.
    #[default]
    None,
    /// The caller aborted (`AbortSignal`, `abort()`).
    User,
    /// The `timeout` elapsed while waiting for the peer.
    Timeout,
    /// The SDK stopped the operation itself (the error is reported separately).
    Internal,
}

/// A request that gave up after its `timeout_ms`, in whole milliseconds (no float formatter
/// in the module, issue #27), as [`Failure::timed_out`]'s cause.
#[derive(Debug)]
pub struct TimedOut(pub u64);

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no answer within {} ms", self.0)
    }
}

impl std::error::Error for TimedOut {}

/// A request that failed below HTTP, as an adapter saw it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Whether the operation had been stopped when the request failed.
    pub stop: StopReason,
    /// True for a plain network failure (`fetch`'s `TypeError`, a connection error): the
    /// kind that a retry or a fallback may cure.
    pub network: bool,
    /// An error that already carries its code (e.g. the source's own `HttpipeError`).
    pub coded: Option<Error>,
    /// What the transport said.
    pub cause: Option<Source>,
}

impl Failure {
    /// A plain network failure with its cause.
    pub fn network(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Failure {
            stop: StopReason::None,
            network: true,
            coded: None,
            cause: Some(Arc::new(cause)),
        }
    }

    /// The failure of an operation that was stopped (`reason`).
    pub fn stopped(reason: StopReason, cause: Option<Source>) -> Self {
        Failure {
            stop: reason,
            network: false,
            coded: None,
            cause,
        }
    }

    /// `req` got no answer within its `timeout_ms`: what its [`OnTimeout`] says that means.
    pub fn timed_out(req: &Request) -> Self {
        let cause = TimedOut(req.timeout_ms.unwrap_or(0.0) as u64);
        match req.on_timeout {
            OnTimeout::NoPeer => Failure::stopped(StopReason::Timeout, Some(Arc::new(cause))),
            OnTimeout::Hung => Failure::network(cause),
        }
    }

    /// A failure that already is one of our errors.
    pub fn coded(e: Error) -> Self {
        Failure {
            stop: StopReason::None,
            network: false,
            coded: Some(e),
            cause: None,
        }
    }

    /// The error to report for a request made for `what`: a coded error passes unchanged;
    /// after a stop the stop's code; else `fallback` with the transport's words.
    pub fn into_error(self, fallback: ErrorCode, what: &str) -> Error {
        if let Some(e) = self.coded {
            return e;
        }
        let (code, message) = match self.stop {
            StopReason::User => (ErrorCode::Aborted, format!("{what}: aborted by the caller")),
            StopReason::Timeout => (
                ErrorCode::ConnectTimeout,
                format!("{what}: no peer arrived within the timeout"),
            ),
            _ => match &self.cause {
                Some(c) => (fallback, format!("{what}: {c}")),
                None => (fallback, what.to_string()),
            },
        };
        Error::new(code, message).with_shared_source(self.cause)
    }
}

/// The relay's own words: the first non-empty line of an error body, at most 300 chars.
fn relay_words(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(300).collect()
}

/// A consumer's refusal that says its producer withdrew (§3.10, code `producer-withdrew`): the
/// stream was cut before its first byte (`resumed`: before the first byte of its resumed
/// upload, §12.3), `TRUNCATED` (§11.3).
pub fn withdrawn(headers: &dyn Headers, what: &str, resumed: bool) -> Option<Error> {
    let code = headers.get(ERROR_CODE).and_then(|c| Code::parse(&c))?;
    (code == Code::ProducerWithdrew).then(|| {
        Error::new(
            ErrorCode::Truncated,
            format!(
                "{what}: the sender failed before sending {} (it withdrew, PROTOCOL.md §3.10)",
                match resumed {
                    true => "the rest",
                    false => "anything",
                }
            ),
        )
    })
}

/// Statuses that say the relay can't be reached *now* (`PROTOCOL.md` §12.3, §13.4): `503`
/// from the relay itself (shutting down, §9; a cluster node that can't coordinate, §13) and
/// `502` / `504` from a balancer in front of it whose upstream node is gone. `NETWORK` in
/// every client; a call that the protocol repeats (a resume call, a receipt) is made again.
pub fn unavailable_now(status: u16) -> bool {
    matches!(status, 502..=504)
}

/// Maps a non-success relay answer (status and text body) of a request made for `what`
/// (e.g. `"POST http://relay/p"`) to an error (§3.5, §5, §6).
pub fn classify_response(status: u16, body: &str, what: &str) -> Error {
    let words = relay_words(body);
    let said = if words.is_empty() {
        String::new()
    } else {
        format!(" (relay said: {words})")
    };
    if body
        .lines()
        .any(|l| LogLine::classify(l) == LogLine::ReceiverPrematureDisconnect)
    {
        return Error::new(
            ErrorCode::PeerDisconnected,
            format!("the consumer disconnected before the end of the stream ({what})"),
        );
    }
    match status {
        401 => Error::new(
            ErrorCode::Unauthorized,
            format!("{what}: the relay requires a valid access token; pass a token{said}"),
        ),
        403 => Error::new(
            ErrorCode::Forbidden,
            format!("{what}: the access token does not allow this path or mode{said}"),
        ),
        408 => Error::new(
            ErrorCode::ConnectTimeout,
            format!("{what}: no peer arrived within the timeout{said}"),
        ),
        // The relay is shutting down (`shutting-down`, §9), a cluster node can't coordinate
        // (`cluster-unavailable`, `owner-unreachable`, §13), or a proxy in front of it can't
        // reach it: either way the relay can't be reached now; trying again later may work.
        s if unavailable_now(s) => Error::new(
            ErrorCode::Network,
            format!("{what}: the relay is not available right now (HTTP {s}){said}"),
        ),
        // A per-address limit of the relay (§9, §14.5): its words say which.
        429 => Error::new(
            ErrorCode::RelayBusy,
            format!("{what}: the relay is at a limit for now (HTTP 429){said}"),
        ),
        _ => Error::new(
            ErrorCode::RelayError,
            format!("{what}: the relay answered HTTP {status}{said}"),
        ),
    }
}

/// The producer's source failed (§11.2 step 5): `ABORTED` — the producer's own side stopped
/// the transfer, as a caller's abort does — saying so with the source's words (`what`); the
/// driver keeps the source's error as the cause.
pub fn source_failed(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Aborted, format!("the source failed: {what}"))
}

/// A reopened source gave other bytes than the first time (§12.3): the producer fails rather
/// than send them (and an encrypting one never seals other plaintext under a used nonce).
pub fn source_changed(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!("cannot resume: the source changed since it was sent ({what}); a file must not change while it is sent (PROTOCOL.md §12.3)"),
    )
}

#[cfg(feature = "crypto")]
impl From<crate::crypto::Error> for Error {
    /// The public code of a crypto core error, with a hint for the two a person can fix.
    fn from(e: crate::crypto::Error) -> Self {
        use crate::crypto::Error as C;
        if let C::SourceChanged { .. } = e {
            return source_changed(&e).with_source(e);
        }
        let code = match &e {
            C::NoMatchingIdentity | C::WrongPassphrase => ErrorCode::WrongKey,
            C::Truncated => ErrorCode::Truncated,
            C::InvalidKey(_)
            | C::Usage(_)
            | C::UnsupportedRecipient(_)
            | C::UnsupportedLegacyFormat
            | C::Random(_) => ErrorCode::Unsupported,
            _ => ErrorCode::DecryptFailed,
        };
        let hint = match code {
            ErrorCode::WrongKey => " (check the passphrase or identities)",
            ErrorCode::Truncated => " (the producer stopped before the end)",
            _ => "",
        };
        Error::new(code, format!("{e}{hint}")).with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §11, "A request's own timeout": what the core decided when it built the request.
    #[test]
    fn a_timeout_means_no_peer_or_a_request_that_hung() {
        let mut req = Request::get("http://h/connect/v0/p?timeout=30", Vec::new());
        req.timeout_ms = Some(32_000.0);
        let f = Failure::timed_out(&req);
        assert_eq!(f.stop, StopReason::Timeout);
        let e = f.into_error(ErrorCode::Network, "rendezvous");
        assert_eq!(e.code, ErrorCode::ConnectTimeout);
        let f = Failure::timed_out(&req.clone().hung_on_timeout());
        assert_eq!((f.stop, f.network), (StopReason::None, true));
        let e = f.into_error(ErrorCode::Network, "resuming");
        assert_eq!(e.code, ErrorCode::Network);
        assert!(
            e.message.contains("no answer within 32000 ms"),
            "{}",
            e.message
        );
        // a last word never stops anything else
        let w = Request::get("http://h/x", Vec::new()).into_last_word();
        assert_eq!(w.on_timeout, OnTimeout::Hung);
    }

    /// §3.10, §11.3: the code `producer-withdrew` is a cut stream; other codes are not.
    #[test]
    fn a_withdrawn_producer_is_truncated() {
        let h = vec![("x-httpipe-error", "producer-withdrew")];
        let e = withdrawn(&h, "GET /p", false).expect("withdrawn");
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(
            e.message.contains("before sending anything"),
            "{}",
            e.message
        );
        assert!(withdrawn(
            &vec![("x-httpipe-error", "another-sender")],
            "GET /p",
            false
        )
        .is_none());
        assert!(withdrawn(&Vec::<(&str, &str)>::new(), "GET /p", false).is_none());
    }

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
        // a relay shutting down (regression: the demo said "The transfer failed.")
        let e = classify_response(
            503,
            "[ERROR] The relay is shutting down; try again in a moment.\n",
            "GET /p",
        );
        assert_eq!(e.code, ErrorCode::Network);
        assert!(e.message.contains("shutting down"), "{e}");
        // a per-address limit says which (§9, §14.5)
        let e = classify_response(
            429,
            "[ERROR] Too many waiting requests from your address (at most 1000): close some, or try again later.\n",
            "GET /p",
        );
        assert_eq!(e.code, ErrorCode::RelayBusy);
        assert!(e.message.contains("from your address"), "{e}");
    }

    #[test]
    fn codes_round_trip() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCode::parse("NOPE"), None);
    }

    /// The JavaScript list of transfer codes (js/api.js) and the declared type
    /// (js/index.d.ts) are this enum's mirror: same codes, same order.
    #[test]
    fn javascript_lists_mirror_the_codes() {
        let ours: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let api = include_str!("../../js/api.js");
        let list = api
            .split("const TRANSFER_CODES = [")
            .nth(1)
            .and_then(|r| r.split("];").next())
            .expect("TRANSFER_CODES in js/api.js");
        let js: Vec<&str> = list
            .split(',')
            .map(|s| s.trim().trim_matches('\''))
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(js, ours, "js/api.js TRANSFER_CODES");
        let dts = include_str!("../../js/index.d.ts");
        for c in &ours {
            assert!(
                dts.contains(&format!("| '{c}'")),
                "js/index.d.ts HttpipeErrorCode lacks {c}"
            );
        }
    }

    #[test]
    fn failures_keep_codes_and_causes() {
        let cause = Cause {
            name: "TypeError".into(),
            message: "fetch failed".into(),
        };
        let e = Failure::network(cause.clone()).into_error(ErrorCode::Network, "GET /p");
        assert_eq!(e.code, ErrorCode::Network);
        assert!(e.message.contains("fetch failed"), "{}", e.message);
        assert_eq!(
            std::error::Error::source(&e).map(|s| s.to_string()),
            Some(cause.to_string())
        );
        let e = Failure::stopped(StopReason::User, None).into_error(ErrorCode::Network, "x");
        assert_eq!(e.code, ErrorCode::Aborted);
        let e = Failure::stopped(StopReason::Timeout, None).into_error(ErrorCode::Network, "x");
        assert_eq!(e.code, ErrorCode::ConnectTimeout);
        let coded = Error::new(ErrorCode::WrongKey, "k");
        assert_eq!(
            Failure::coded(coded.clone()).into_error(ErrorCode::Network, "x"),
            coded
        );
    }
}
