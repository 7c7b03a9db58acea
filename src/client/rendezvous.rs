//! The Connect API (rendezvous, `PROTOCOL.md` §5) as a sans-IO step: the request to make,
//! how long to wait, and what the answer means.

use super::error::{classify_response, Error, ErrorCode, Failure};
use super::request::{Headers, Request};
use super::urls::{parse_connect_body, ConnectMode, RelayBase};
use crate::protocol::headers::{bearer, AUTHORIZATION, HELLO, PEER_HELLO};
use crate::protocol::hello::PeerHello;

/// Seconds the local timer waits beyond the relay's own `timeout` (§5: the relay answers 408
/// at `timeout`; the local timer is the backstop for a relay that doesn't).
pub const LOCAL_TIMEOUT_MARGIN_S: f64 = 2.0;

/// The longest single Connect call, in seconds (§11.2): a longer wait is a chain of calls,
/// since HTTP clients and proxies cut a request whose head takes longer (Node's `fetch` after
/// 300 s, Cloudflare after 100 s) as a network failure.
pub const CONNECT_CALL_MAX_S: f64 = 60.0;

/// A wait on the Connect API (§5, §11.2): one call at a time, of at most
/// [`CONNECT_CALL_MAX_S`]; a `408` to a call that was cut short of the caller's timeout is
/// answered by the next call ([`Rendezvous::on_response`] says `None`, [`Rendezvous::request`]
/// is then the next call, to make).
#[derive(Debug, Clone)]
pub struct Rendezvous {
    request: Request,
    what: String,
    /// What the next call is made of.
    base: RelayBase,
    path: String,
    mode: ConnectMode,
    token: Option<String>,
    hello: Option<String>,
    /// Seconds of the caller's timeout after the call under way (`None`: no timeout).
    left_after_s: Option<f64>,
    /// Whether the call under way was handed to the adapter.
    issued: bool,
}

impl Rendezvous {
    /// `timeout_s`: seconds to wait for the peer (`None`: as long as it takes).
    pub fn new(
        base: &RelayBase,
        path: &str,
        mode: ConnectMode,
        timeout_s: Option<f64>,
        token: Option<&str>,
    ) -> Result<Self, Error> {
        let mut r = Rendezvous {
            request: Request::get(String::new(), Vec::new()),
            what: String::new(),
            base: base.clone(),
            path: path.to_string(),
            mode,
            token: token.map(str::to_string),
            hello: None,
            left_after_s: timeout_s,
            issued: false,
        };
        r.next_call()?;
        Ok(r)
    }

    /// The next call: for what is left of the timeout, at most [`CONNECT_CALL_MAX_S`].
    fn next_call(&mut self) -> Result<(), Error> {
        let call_s = self
            .left_after_s
            .map_or(CONNECT_CALL_MAX_S, |t| t.min(CONNECT_CALL_MAX_S));
        let url = self.base.connect_url(&self.path, self.mode, Some(call_s))?;
        self.what = format!("rendezvous ({}) on {url}", self.mode.as_str());
        let mut request = Request::get(url, auth_headers(self.token.as_deref()));
        request.timeout_ms = Some((call_s + LOCAL_TIMEOUT_MARGIN_S) * 1000.0);
        if let Some(hello) = &self.hello {
            request.headers.push((HELLO, hello.clone()));
        }
        self.request = request;
        self.left_after_s = self.left_after_s.map(|t| (t - call_s.ceil()).max(0.0));
        self.issued = false;
        Ok(())
    }

    /// The same wait with `hello` for the peer (`X-Httpipe-Hello`, §5.1), on every call.
    pub fn with_hello(mut self, hello: String) -> Self {
        self.request.headers.push((HELLO, hello.clone()));
        self.hello = Some(hello);
        self
    }

    /// The `GET /connect/v0/{path}?mode=...` to make; `timeout_ms` is the local backstop,
    /// whose expiry the adapter reports as [`super::error::StopReason::Timeout`].
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The call to make now, once: `None` while its answer is awaited.
    pub fn issue(&mut self) -> Option<Request> {
        (!std::mem::replace(&mut self.issued, true)).then(|| self.request.clone())
    }

    /// The answer (status and text body): the data URL; `None`, the wait goes on with the
    /// next call (a `408` with time left, §11.2); or the error.
    pub fn on_response(&mut self, status: u16, body: &str) -> Result<Option<String>, Error> {
        let goes_on = self.left_after_s.is_none_or(|t| t > 0.0);
        match status {
            200 => parse_connect_body(body).map(Some),
            408 if goes_on => self.next_call().map(|()| None),
            _ => Err(classify_response(status, body, &self.what)),
        }
    }

    /// The request failed below HTTP.
    pub fn on_failure(&self, f: Failure) -> Error {
        f.into_error(ErrorCode::Network, &self.what)
    }
}

/// How an operation begins (§11.2, §11.3): a wait on the Connect API, or straight at the
/// data URL.
#[derive(Debug)]
pub enum Begin {
    Rendezvous(Box<Rendezvous>),
    Data(String),
}

impl Begin {
    pub fn new(
        base: &RelayBase,
        path: &str,
        mode: ConnectMode,
        rendezvous: bool,
        timeout_s: Option<f64>,
        token: Option<&str>,
    ) -> Result<Self, Error> {
        if rendezvous {
            Rendezvous::new(base, path, mode, timeout_s, token)
                .map(|r| Begin::Rendezvous(Box::new(r)))
        } else {
            base.data_url(path).map(Begin::Data)
        }
    }
}

/// The token header of every request of an operation (§6).
/// What the peer's hello in a rendezvous answer says (§12.1; nothing when it sent none).
pub fn peer_hello(headers: &dyn Headers) -> PeerHello {
    headers
        .get(PEER_HELLO)
        .map(|h| PeerHello::parse(&h))
        .unwrap_or_default()
}

pub fn auth_headers(token: Option<&str>) -> Vec<(&'static str, String)> {
    token
        .map(|t| vec![(AUTHORIZATION, bearer(t))])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::error::StopReason;

    fn rv(timeout: Option<f64>) -> Rendezvous {
        let base = RelayBase::parse("http://h:1").unwrap();
        Rendezvous::new(&base, "/p", ConnectMode::AwaitReader, timeout, Some("tok")).unwrap()
    }

    #[test]
    fn request_carries_mode_timeout_and_token() {
        let r = rv(Some(1.5));
        assert_eq!(
            r.request().url,
            "http://h:1/connect/v0/p?mode=await-reader&timeout=2"
        );
        assert_eq!(
            r.request().headers,
            vec![("Authorization", "Bearer tok".to_string())]
        );
        assert_eq!(r.request().timeout_ms, Some(3500.0));
    }

    /// §11.2: no call waits longer than 60 s for its head (Node's `fetch` cut a wait without
    /// a timeout after 300 s as NETWORK: a new user's trial, `serve()` gone after 5 idle
    /// minutes); a 408 with time left is answered by the next call.
    #[test]
    fn a_long_wait_is_a_chain_of_calls() {
        let mut r = rv(None).with_hello("h=1".into());
        let call = r.request().clone();
        assert!(
            call.url.ends_with("?mode=await-reader&timeout=60"),
            "{}",
            call.url
        );
        assert_eq!(call.timeout_ms, Some(62_000.0));
        assert_eq!(r.issue(), Some(call.clone()));
        assert_eq!(r.issue(), None, "one call at a time");
        for _ in 0..100 {
            assert_eq!(r.on_response(408, "[ERROR:CONNECT_TIMEOUT]\n"), Ok(None));
            assert_eq!(
                r.issue().as_ref(),
                Some(&call),
                "the same call again, hello and all"
            );
        }
        assert_eq!(
            r.on_response(200, "http://h:1/p\n"),
            Ok(Some("http://h:1/p".into()))
        );

        // the caller's 90 s: a call of 60, then one of 30, then CONNECT_TIMEOUT
        let mut r = rv(Some(90.0));
        assert!(r.request().url.ends_with("&timeout=60"));
        assert_eq!(r.on_response(408, ""), Ok(None));
        assert!(
            r.request().url.ends_with("&timeout=30"),
            "{}",
            r.request().url
        );
        assert_eq!(r.request().timeout_ms, Some(32_000.0));
        let e = r.on_response(408, "[ERROR:CONNECT_TIMEOUT]\n").unwrap_err();
        assert_eq!(e.code, ErrorCode::ConnectTimeout);
        // a timeout within one call ends with that call's 408
        let mut r = rv(Some(2.0));
        assert_eq!(
            r.on_response(408, "").unwrap_err().code,
            ErrorCode::ConnectTimeout
        );
    }

    #[test]
    fn answers() {
        let mut r = rv(Some(5.0));
        assert_eq!(
            r.on_response(200, "http://h:1/p\n").unwrap(),
            Some("http://h:1/p".into())
        );
        assert_eq!(
            r.on_response(408, "[ERROR:CONNECT_TIMEOUT]\n")
                .unwrap_err()
                .code,
            ErrorCode::ConnectTimeout
        );
        assert_eq!(
            r.on_response(401, "[ERROR:UNAUTHORIZED]\n")
                .unwrap_err()
                .code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            r.on_response(200, "nonsense").unwrap_err().code,
            ErrorCode::RelayError
        );
        assert_eq!(
            r.on_failure(Failure::stopped(StopReason::Timeout, None))
                .code,
            ErrorCode::ConnectTimeout
        );
    }
}
