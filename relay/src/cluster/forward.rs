//! Forwarding a request to the node that owns its stream path (`docs/PROTOCOL.md` §13.3):
//! one plain HTTP/1.1 connection per forwarded request (hyper's client), both bodies
//! streamed, nothing buffered. The connection lives as long as the response body does;
//! dropping either end closes it, so the owner sees a hang-up as a direct peer would (§3.6).

use std::time::Duration;

use http::header::{self, HeaderName, HeaderValue};
use http::{Request, Uri, Version};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::hangup::Hangup;
use crate::request_body::RequestBody;
use crate::respond::Resp;

/// `X-Httpipe-Hops`: how many times a request was forwarded (§13.3).
pub const HOPS: HeaderName = HeaderName::from_static("x-httpipe-hops");
/// A request is forwarded at most this many times (§13.3).
pub const MAX_HOPS: u32 = 2;
/// Connecting to the owner (§13.3).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Hop-by-hop headers: never forwarded, in either direction (§13.3).
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
    header::EXPECT,
    header::TRAILER,
];

fn strip(headers: &mut http::HeaderMap) {
    for h in HOP_BY_HOP {
        headers.remove(h);
    }
    headers.remove(header::PROXY_AUTHORIZATION);
    headers.remove(header::PROXY_AUTHENTICATE);
    headers.remove("proxy-connection");
}

/// The hop count a request arrived with (0: from a client).
pub fn hops(headers: &http::HeaderMap) -> u32 {
    headers
        .get(&HOPS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Why a request could not be forwarded.
pub enum Failed {
    /// The owner could not be reached before anything was sent: the request comes back.
    Unreachable(Box<Request<RequestBody>>, String),
    /// The forwarded exchange failed after it started (the request is gone): the answer.
    Broken(String),
}

/// Aborts the connection task when dropped (closing the connection to the owner).
struct Conn(tokio::task::JoinHandle<()>);
impl Drop for Conn {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Forwards `req` to `owner` (`http://host:port`); answers the owner's response, its body
/// streamed. `hangup`: the client's connection (HTTP/1.1 peers that leave while waiting).
pub async fn forward(
    owner: &str,
    req: Request<RequestBody>,
    hangup: Hangup,
) -> Result<Resp, Failed> {
    let authority = match owner.parse::<Uri>() {
        Ok(u) if u.scheme_str() == Some("http") && u.authority().is_some() => {
            u.authority().map(|a| a.to_string()).unwrap_or_default()
        }
        _ => {
            return Err(Failed::Unreachable(
                Box::new(req),
                format!("node URL {owner:?} is not http://HOST:PORT"),
            ))
        }
    };
    let addr = if authority.contains(':') {
        authority.clone()
    } else {
        format!("{authority}:80")
    };
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addr)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(Failed::Unreachable(Box::new(req), format!("{owner}: {e}"))),
        Err(_) => {
            return Err(Failed::Unreachable(
                Box::new(req),
                format!("{owner}: connect timed out"),
            ))
        }
    };
    let _ = tcp.set_nodelay(true);
    let (mut sender, conn) = match hyper::client::conn::http1::Builder::new()
        .handshake::<_, RequestBody>(TokioIo::new(tcp))
        .await
    {
        Ok(x) => x,
        Err(e) => return Err(Failed::Unreachable(Box::new(req), format!("{owner}: {e}"))),
    };
    let conn = Conn(tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "forwarded connection ended with an error");
        }
    }));

    let (mut parts, body) = req.into_parts();
    let hops = hops(&parts.headers) + 1;
    // HTTP/2 requests carry the authority in the URI: it becomes the Host header.
    if !parts.headers.contains_key(header::HOST) {
        if let Some(a) = parts.uri.authority() {
            if let Ok(v) = HeaderValue::from_str(a.as_str()) {
                parts.headers.insert(header::HOST, v);
            }
        }
    }
    strip(&mut parts.headers);
    parts.headers.insert(HOPS, HeaderValue::from(hops));
    parts.uri = parts
        .uri
        .path_and_query()
        .map(|pq| pq.as_str())
        .unwrap_or("/")
        .parse()
        .unwrap_or_default();
    parts.version = Version::HTTP_11;
    parts.extensions = http::Extensions::new();
    let upstream = Request::from_parts(parts, body);

    let answer = tokio::select! {
        r = sender.send_request(upstream) => r,
        // The client left while the owner had not answered (a waiting peer, §3.6): dropping
        // `conn` closes the connection, and the owner sees the same hang-up.
        _ = hangup.hung_up() => return Err(Failed::Broken("the client hung up".into())),
    };
    let resp = match answer {
        Ok(r) => r,
        Err(e) => return Err(Failed::Broken(format!("{owner}: {e}"))),
    };
    let (mut parts, body) = resp.into_parts();
    strip(&mut parts.headers);
    let body = body
        .map_err(move |e| {
            // `conn` lives as long as the body: the connection is the body's.
            let _keep = &conn;
            std::io::Error::other(e)
        })
        .boxed();
    Ok(http::Response::from_parts(parts, body))
}
