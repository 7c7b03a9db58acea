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

/// One wait on the Connect API.
#[derive(Debug, Clone)]
pub struct Rendezvous {
    request: Request,
    what: String,
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
        let url = base.connect_url(path, mode, timeout_s)?;
        let what = format!("rendezvous ({}) on {url}", mode.as_str());
        let mut request = Request::get(url, auth_headers(token));
        request.timeout_ms = timeout_s.map(|t| (t + LOCAL_TIMEOUT_MARGIN_S) * 1000.0);
        Ok(Rendezvous { request, what })
    }

    /// The same wait with `hello` for the peer (`X-Httpipe-Hello`, §5.1).
    pub fn with_hello(mut self, hello: String) -> Self {
        self.request.headers.push((HELLO, hello));
        self
    }

    /// The `GET /connect/v0/{path}?mode=...` to make; `timeout_ms` is the local backstop,
    /// whose expiry the adapter reports as [`super::error::StopReason::Timeout`].
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The answer (status and text body): the data URL, or the error.
    pub fn on_response(&self, status: u16, body: &str) -> Result<String, Error> {
        if status != 200 {
            return Err(classify_response(status, body, &self.what));
        }
        parse_connect_body(body)
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
    Rendezvous(Rendezvous),
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
            Rendezvous::new(base, path, mode, timeout_s, token).map(Begin::Rendezvous)
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
        assert_eq!(rv(None).request().timeout_ms, None);
    }

    #[test]
    fn answers() {
        let r = rv(None);
        assert_eq!(
            r.on_response(200, "http://h:1/p\n").unwrap(),
            "http://h:1/p"
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
