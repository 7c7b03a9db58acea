//! Exit codes (ZebraStream's, `ZEBRASTREAM_NOTES.md`) and the one error type of the CLI.
//!
//! Every failure ends as one line on stderr, `httpipe: <what happened>; <what to fix>`,
//! and one of the exit codes below.

use std::fmt;

use httpipe::client::{Error as NetError, ErrorCode};

/// The process exit codes, as in `zebrastream` 0.5.4 (`cli.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Generic = 1,
    Usage = 2,
    Auth = 3,
    ConnectTimeout = 4,
    PeerDisconnected = 5,
    ProducerFailed = 6,
    ConsumerFailed = 7,
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// Which end of the pipe this process is (for wording errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Producer,
    Consumer,
}

/// An error the CLI reports: `httpipe: {what}; {fix}`, exit `exit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub exit: Exit,
    pub what: String,
    pub fix: String,
}

impl CliError {
    pub fn new(exit: Exit, what: impl Into<String>, fix: impl Into<String>) -> Self {
        CliError {
            exit,
            what: what.into(),
            fix: fix.into(),
        }
    }

    pub fn usage(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(Exit::Usage, what, fix)
    }

    pub fn generic(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(Exit::Generic, what, fix)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the messages contain.
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let what = one_line(&self.what);
        let fix = one_line(&self.fix);
        if fix.is_empty() {
            write!(f, "httpipe: {what}")
        } else {
            write!(f, "httpipe: {what}; {fix}")
        }
    }
}

impl std::error::Error for CliError {}

/// The exit code for an SDK error code. The one place where this mapping lives.
pub fn exit_for(code: ErrorCode) -> Exit {
    match code {
        ErrorCode::Unauthorized | ErrorCode::Forbidden => Exit::Auth,
        ErrorCode::ConnectTimeout => Exit::ConnectTimeout,
        // The consumer left (producer side) or the producer's stream broke off
        // (consumer side): either way the peer disconnected.
        // An unconfirmed delivery (§12) is the same failure seen from the producer.
        ErrorCode::PeerDisconnected | ErrorCode::Truncated | ErrorCode::Unconfirmed => {
            Exit::PeerDisconnected
        }
        ErrorCode::DecryptFailed
        | ErrorCode::WrongKey
        | ErrorCode::RelayError
        | ErrorCode::Aborted
        | ErrorCode::Network => Exit::Generic,
        ErrorCode::Unsupported | ErrorCode::WrongCode | ErrorCode::RelayBusy => Exit::Generic,
    }
}

/// What to tell the user to do about an SDK error.
pub fn fix_for(code: ErrorCode, role: Role) -> &'static str {
    match (code, role) {
        (ErrorCode::Unauthorized, _) => {
            "give a valid access token in HTTPIPE_ACCESS_TOKEN (or access_token in the config file)"
        }
        (ErrorCode::Forbidden, Role::Producer) => {
            "the token does not allow writing this stream path; use a write token for this path"
        }
        (ErrorCode::Forbidden, Role::Consumer) => {
            "the token does not allow reading this stream path; use a read token for this path"
        }
        (ErrorCode::ConnectTimeout, Role::Producer) => {
            "no consumer connected in time; start the reader, or raise -t/--connect-timeout"
        }
        (ErrorCode::ConnectTimeout, Role::Consumer) => {
            "no producer connected in time; start the writer, or raise -t/--connect-timeout"
        }
        (ErrorCode::PeerDisconnected, Role::Producer) => {
            "the consumer went away before the end; run both sides again"
        }
        (ErrorCode::PeerDisconnected, Role::Consumer) | (ErrorCode::Truncated, _) => {
            "the producer stopped before the end and the data is incomplete; run both sides again"
        }
        (ErrorCode::DecryptFailed, _) => {
            "if the sender did not encrypt, read without a passphrase or -i; otherwise the stream was damaged on the way: send again"
        }
        (ErrorCode::WrongKey, _) => {
            "check the passphrase (HTTPIPE_PASSPHRASE or -p) or the identity file (-i)"
        }
        (ErrorCode::RelayError, _) => "check the stream path and the relay's URL",
        (ErrorCode::Aborted, _) => "the transfer was cancelled; run it again",
        (ErrorCode::Unsupported, _) => "this build or relay can't do that; see httpipe --help",
        (ErrorCode::Network, _) => {
            "check the relay URL (--relay or -U/--connect-url) and the network connection"
        }
        (ErrorCode::Unconfirmed, _) => {
            "the consumer did not confirm it got the data; ask the receiving side, raise --receipt-timeout, or run both sides again"
        }
        (ErrorCode::WrongCode, _) => {
            "check the code with the other side; a code works once: the sender makes a new one"
        }
        (ErrorCode::RelayBusy, _) => {
            "try again in a moment; if it persists, the relay's operator can raise its per-address limits (PROTOCOL.md §9, §14.5)"
        }
    }
}

/// What to do when a break could not be resumed because the bytes the consumer missed had
/// left the producer's replay window (PROTOCOL.md §12.3: "cannot resume: ...").
const GAP_FIX: &str = "the connection broke and the missing bytes were older than the sender's replay window; raise --resume-window on the sending side, then run both sides again";

/// What to do when the relay's TLS certificate was not trusted (rustls: "invalid peer
/// certificate"), e.g. the self-signed one a local relay makes for its https port.
const UNTRUSTED_TLS_FIX: &str = "the relay's TLS certificate is not trusted (a local relay's self-signed one?): use the relay's http:// URL, or set HTTPIPE_INSECURE_TLS=1 for a test relay you trust";

/// What to do when a short code's exchange (on the code namespace, PROTOCOL.md §14) was
/// refused for its token: a read or write token doesn't open it, a code token does (§6).
const CODE_TOKEN_FIX: &str = "short codes on this relay need a code token on both sides (httpipe-relay token --mode code), in HTTPIPE_ACCESS_TOKEN";

/// An SDK error as the CLI reports it.
pub fn from_net(err: &NetError, role: Role) -> CliError {
    let gap = matches!(err.code, ErrorCode::PeerDisconnected | ErrorCode::Truncated)
        && err.message.starts_with("cannot resume:");
    let untrusted =
        err.code == ErrorCode::Network && err.message.contains("invalid peer certificate");
    let code_token = matches!(err.code, ErrorCode::Unauthorized | ErrorCode::Forbidden)
        && err
            .message
            .contains(httpipe::protocol::paths::CODE_NAMESPACE);
    let fix = if gap {
        GAP_FIX
    } else if untrusted {
        UNTRUSTED_TLS_FIX
    } else if code_token {
        CODE_TOKEN_FIX
    } else {
        fix_for(err.code, role)
    };
    CliError::new(exit_for(err.code), err.message.clone(), fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_zebrastreams() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Generic.code(), 1);
        assert_eq!(Exit::Usage.code(), 2);
        assert_eq!(Exit::Auth.code(), 3);
        assert_eq!(Exit::ConnectTimeout.code(), 4);
        assert_eq!(Exit::PeerDisconnected.code(), 5);
        assert_eq!(Exit::ProducerFailed.code(), 6);
        assert_eq!(Exit::ConsumerFailed.code(), 7);
    }

    #[test]
    fn an_untrusted_certificate_says_how_to_reach_a_local_relay() {
        let e = NetError::new(
            ErrorCode::Network,
            "POST https://127.0.0.1:8443/code/v1/21/a: error sending request: client error (Connect): invalid peer certificate: UnknownIssuer",
        );
        let c = from_net(&e, Role::Producer);
        assert_eq!(c.exit, Exit::Generic);
        assert!(c.to_string().contains("HTTPIPE_INSECURE_TLS=1"), "{c}");
        assert!(c.to_string().contains("http:// URL"), "{c}");
    }

    #[test]
    fn a_short_code_refused_for_its_token_asks_for_a_code_token() {
        let e = NetError::new(
            ErrorCode::Forbidden,
            "POST http://127.0.0.1:8080/code/v1/21/a: the access token does not allow this path or mode",
        );
        let c = from_net(&e, Role::Producer);
        assert_eq!(c.exit, Exit::Auth);
        assert!(c.to_string().contains("--mode code"), "{c}");
        let busy = NetError::new(ErrorCode::RelayBusy, "the relay's code channels are busy");
        assert!(from_net(&busy, Role::Producer)
            .to_string()
            .contains("try again"));
    }

    #[test]
    fn error_code_mapping() {
        assert_eq!(exit_for(ErrorCode::Unauthorized), Exit::Auth);
        assert_eq!(exit_for(ErrorCode::Forbidden), Exit::Auth);
        assert_eq!(exit_for(ErrorCode::ConnectTimeout), Exit::ConnectTimeout);
        assert_eq!(
            exit_for(ErrorCode::PeerDisconnected),
            Exit::PeerDisconnected
        );
        assert_eq!(exit_for(ErrorCode::Truncated), Exit::PeerDisconnected);
        for c in [
            ErrorCode::DecryptFailed,
            ErrorCode::WrongKey,
            ErrorCode::RelayError,
            ErrorCode::Aborted,
            ErrorCode::Unsupported,
            ErrorCode::Network,
            ErrorCode::WrongCode,
            ErrorCode::RelayBusy,
        ] {
            assert_eq!(exit_for(c), Exit::Generic, "{c}");
        }
        // Every code has a fix for both roles.
        for c in ErrorCode::ALL {
            assert!(!fix_for(c, Role::Producer).is_empty());
            assert!(!fix_for(c, Role::Consumer).is_empty());
        }
    }

    #[test]
    fn a_gap_older_than_the_window_says_what_to_raise() {
        let e = httpipe::client::agree(10, 20, 3, true).expect_err("gap");
        let c = from_net(&e, Role::Consumer);
        assert_eq!(c.exit, Exit::PeerDisconnected);
        assert!(c.fix.contains("--resume-window"), "{c}");
        let e = httpipe::client::agree(10, 20, 3, false).expect_err("gap");
        let c = from_net(&e, Role::Producer);
        assert_eq!(c.exit, Exit::PeerDisconnected);
        assert!(c.fix.contains("--resume-window"), "{c}");
        assert_eq!(exit_for(ErrorCode::Unconfirmed), Exit::PeerDisconnected);
    }

    /// docs/errors.md's table names the exit code of every SDK code, as `exit_for` has it.
    #[test]
    fn the_docs_error_table_has_the_exit_codes() {
        let doc = include_str!("../../docs/errors.md");
        for code in ErrorCode::ALL {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{code}` |")))
                .unwrap_or_else(|| panic!("docs/errors.md has no row for {code}"));
            let exit = row
                .trim_end_matches('|')
                .rsplit('|')
                .next()
                .unwrap_or("")
                .trim();
            assert_eq!(exit, exit_for(code).code().to_string(), "{code}: {row}");
        }
    }

    #[test]
    fn net_error_is_one_line() {
        let e = NetError::new(ErrorCode::ConnectTimeout, "no peer\nafter 5 s");
        let c = from_net(&e, Role::Consumer);
        assert_eq!(c.exit, Exit::ConnectTimeout);
        let line = c.to_string();
        assert!(
            line.starts_with("httpipe: no peer after 5 s; no producer"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
