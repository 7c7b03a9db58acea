//! Response helpers: the relay's body type, plain-text answers and CORS headers
//! (`docs/PROTOCOL.md` §3.5, §3.7).

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};
use httpipe::protocol::control::Rejection;
use httpipe::protocol::headers::ERROR_CODE;

/// Every response body the relay sends. A body error aborts the response (HTTP/1.1: the
/// connection closes without a terminating chunk; HTTP/2: the stream is reset).
pub type Body = BoxBody<Bytes, std::io::Error>;
/// The relay's response type.
pub type Resp = Response<Body>;

/// A complete body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// An empty body.
pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed()
}

/// `status` with a `text/plain` body and `Access-Control-Allow-Origin: *`.
pub fn text(status: StatusCode, body: impl Into<Bytes>) -> Resp {
    let mut r = plain_text(full(body));
    *r.status_mut() = status;
    r
}

/// A 200 `text/plain` response streaming `body`, readable cross-origin (§3.2, §3.5).
pub fn plain_text(body: Body) -> Resp {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}

/// 431 for an HTTP/1.1 request head over `--max-header-bytes` (§9); the connection closes, as
/// when hyper refuses a head itself.
pub fn head_too_large() -> Resp {
    let mut r = text(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "Request header fields too large\n",
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The §3.5 answer to a rejection: its status, body and code (`X-Httpipe-Error`, readable by
/// browsers); 405 carries `Allow`.
pub fn rejection(r: &Rejection) -> Resp {
    let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = text(status, r.body());
    let h = resp.headers_mut();
    h.insert(ERROR_CODE, HeaderValue::from_static(r.code().as_str()));
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(ERROR_CODE),
    );
    if let Some(s) = r.retry_after_s() {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    if status == StatusCode::METHOD_NOT_ALLOWED {
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(ALLOW_METHODS));
    }
    resp
}

/// The methods of a stream path (§3.5 `Allow`): the Data API's, DELETE a withdrawal (§3.10).
pub const ALLOW_METHODS: &str = "GET, POST, PUT, DELETE, OPTIONS";
/// Value of `Access-Control-Allow-Methods` in a preflight answer (§3.7).
pub const PREFLIGHT_METHODS: &str = "GET, HEAD, POST, PUT, DELETE, OPTIONS";

/// Value of `Access-Control-Allow-Headers` in a preflight answer (§3.7).
pub const ALLOW_HEADERS: &str =
    "Content-Type, Content-Disposition, X-Piping, Authorization, X-Httpipe-Upload, X-Httpipe-Hello, X-Httpipe-Channel-Key";

/// The §3.7 answer to `OPTIONS` on any path.
pub fn preflight(private_network: bool) -> Resp {
    let mut r = Response::new(empty());
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(PREFLIGHT_METHODS),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Access-Control-Allow-Headers"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    if private_network {
        h.insert(
            "access-control-allow-private-network",
            HeaderValue::from_static("true"),
        );
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    r
}
