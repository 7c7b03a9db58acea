//! The requests the sans-IO machines ask an adapter to make (`fetch` in wasm, reqwest
//! natively), and the response headers they read back.

use crate::protocol::hello::{FAILURE_NOTICE_WAIT_MS, LAST_WORD_LINGER_S};
use crate::protocol::query;

/// The most bytes of an answer's body the core is given to judge (an error body, a status
/// log, a Connect answer); the rest is read and dropped.
pub const TEXT_LIMIT: usize = 64 * 1024;

/// The two methods the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    /// A producer's withdrawal (§3.10).
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// What it means when a request's [`Request::timeout_ms`] passes without an answer: decided
/// where the request is built, reported by the driver as [`Failure::timed_out`] (`PROTOCOL.md`
/// §11, "A request's own timeout").
///
/// [`Failure::timed_out`]: super::error::Failure::timed_out
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// Nobody came within the wait the caller asked for (a rendezvous, a consumer's wait for
    /// its stream, a producer's wait for the receipt, a short code's steps): the operation
    /// stops with `CONNECT_TIMEOUT` ([`StopReason::Timeout`]), and so do its other requests.
    ///
    /// [`StopReason::Timeout`]: super::error::StopReason::Timeout
    NoPeer,
    /// The request hung (a connection that carries nothing, §12.4, where the relay would have
    /// answered in time): a network failure of this request alone, answered as a broken
    /// connection is (a resume, presence or stall call or a receipt's delivery made again, a
    /// probe counted as failed, a last word given up).
    Hung,
}

/// One HTTP request: method, absolute URL, headers (names from `crate::protocol::headers`).
/// The body, if any, is given by the step that asked for the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    /// The adapter gives up on this request after this many milliseconds (`None`: never).
    pub timeout_ms: Option<f64>,
    /// What giving up after `timeout_ms` means.
    pub on_timeout: OnTimeout,
    /// A last word: a receipt (`docs/PROTOCOL.md` §12.2) or a failure notice (§12.3), which
    /// the caller may be about to stop right after (a page being closed). An adapter whose
    /// runtime cancels a caller's requests when it goes away (a browser page) sends it so
    /// that it outlives the caller (`fetch(…, { keepalive: true })`).
    pub last_word: bool,
}

impl Request {
    pub fn get(url: impl Into<String>, headers: Vec<(&'static str, String)>) -> Self {
        Request {
            method: Method::Get,
            url: url.into(),
            headers,
            timeout_ms: None,
            on_timeout: OnTimeout::NoPeer,
            last_word: false,
        }
    }

    /// This request, whose timeout means it hung ([`OnTimeout::Hung`]).
    pub fn hung_on_timeout(self) -> Self {
        Request {
            on_timeout: OnTimeout::Hung,
            ..self
        }
    }

    /// This request as a last word (see [`Request::last_word`]): nobody waits on it, so its
    /// timeout stops nothing else ([`OnTimeout::Hung`]).
    pub fn into_last_word(self) -> Self {
        Request {
            last_word: true,
            ..self.hung_on_timeout()
        }
    }

    /// This channel call (§5.1) as a last word whose hello lingers on the channel for
    /// [`LAST_WORD_LINGER_S`] after its caller left (`linger`): a peer still reading bytes
    /// that were in flight meets it after this side's process or page is gone. Hung up when
    /// unanswered after [`FAILURE_NOTICE_WAIT_MS`] (§5.1): the relay keeps the hello, and an
    /// open call would only keep the caller's process alive (Node, while a `fetch` is out).
    pub fn into_lingering_last_word(mut self) -> Self {
        self.url = format!(
            "{}&{}={}",
            self.url,
            query::LINGER,
            LAST_WORD_LINGER_S as u64
        );
        self.timeout_ms = Some(FAILURE_NOTICE_WAIT_MS);
        self.into_last_word()
    }

    pub fn post(url: impl Into<String>, headers: Vec<(&'static str, String)>) -> Self {
        Request {
            method: Method::Post,
            ..Request::get(url, headers)
        }
    }

    /// `"POST http://relay/p"`, for messages.
    pub fn describe(&self) -> String {
        format!("{} {}", self.method.as_str(), self.url)
    }
}

/// Response headers as an adapter exposes them (case-insensitive names; several values of
/// one name joined with `", "`, as `Headers.get` does).
pub trait Headers {
    fn get(&self, name: &str) -> Option<String>;
}

impl Headers for &[(&str, &str)] {
    fn get(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }
}

impl Headers for Vec<(&str, &str)> {
    fn get(&self, name: &str) -> Option<String> {
        Headers::get(&self.as_slice(), name)
    }
}

/// No headers (for answers whose headers don't matter).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub struct NoHeaders;

impl Headers for NoHeaders {
    fn get(&self, _name: &str) -> Option<String> {
        None
    }
}

/// The calls a side makes when it fails, to tell its peer (the producer's last words, the
/// consumer's word that it left before its stream started: `PROTOCOL.md` §3.10, §12.3, §12.5).
#[derive(Debug)]
pub struct LastWords {
    /// The calls, made together; each goes on in the background after the wait. Once one told
    /// the peer ([`LastWords::told`]) the others are stopped: superfluous, and one may wait for
    /// nobody (a call to a channel the peer no longer listens on would keep a Node process, or
    /// the native client's exit, waiting for its timeout).
    pub calls: Vec<Request>,
    /// Milliseconds to wait, at most, for a call that told the peer ([`LastWords::told`])
    /// before the failure is reported; a page going away waits for none.
    pub wait_ms: f64,
}

impl LastWords {
    /// Whether a call answered with `status` (`None`: it failed below HTTP) told the peer, so
    /// the wait is over: a success — the notice met a resuming consumer (§12.3), the
    /// withdrawal's log ended with the waiting consumers refused (§3.10), the consumer's word
    /// met the producer's presence call (§12.5). A refusal told
    /// nobody: a withdrawal refused because the path stayed busy with the broken transfer
    /// (§3.10: the relay waits a moment for it, then refuses) leaves a consumer that got the
    /// cut and is resuming, and only the notice reaches it. Found in CI with a Worker's
    /// `send()`, whose calls die with its response: it answered on that refusal, and the
    /// consumer, never told, waited out its resume time.
    pub fn told(status: Option<u16>) -> bool {
        matches!(status, Some(200..=299))
    }
}
