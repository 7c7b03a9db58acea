//! Forwarding a request to the node that owns its stream path (`docs/PROTOCOL.md` §13.3):
//! one plain HTTP/1.1 connection per forwarded request (hyper's client), both bodies
//! streamed, nothing buffered. The connection lives as long as the response body does;
//! dropping either end closes it, so the owner sees a hang-up as a direct peer would (§3.6).
//! A forwarded consumer's request carries the entry node's delivery confirmation (§13.3).

use std::future::Future;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, Uri, Version};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use httpipe::protocol::paths;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::conn::ConnFd;
use crate::hangup::Hangup;
use crate::request_body::RequestBody;
use crate::respond::Resp;

/// `X-Httpipe-Hops`: how many times a request was forwarded (§13.3).
pub const HOPS: HeaderName = HeaderName::from_static("x-httpipe-hops");
/// A request is forwarded at most this many times (§13.3).
pub const MAX_HOPS: u32 = 2;
/// Connecting to the owner (§13.3).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// `X-Httpipe-Delivery: confirm`: a forwarded consumer whose request body the entry node
/// ends once its client acknowledged the whole response (§13.3).
pub const DELIVERY: HeaderName = HeaderName::from_static("x-httpipe-delivery");
const CONFIRM: &str = "confirm";
/// After the exchange, how long the forwarded connection may take to finish cleanly.
const CONFIRM_FLUSH: Duration = Duration::from_secs(1);

/// Whether a consumer's request is a forwarded one whose delivery the entry node confirms.
pub fn confirms(headers: &http::HeaderMap) -> bool {
    headers
        .get(&DELIVERY)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(CONFIRM.as_bytes()))
}

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
    headers.remove(&DELIVERY);
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
    /// This node started shutting down before the owner answered (§9): `503 shutting-down`.
    ShuttingDown,
}

/// The connection to the owner. Dropped before its exchange ended cleanly, it resets the
/// connection (RST): a FIN would queue behind the bytes still unsent to an owner that has
/// stopped reading (a waiting producer's full read-ahead), and the owner would never see it.
struct Conn {
    task: tokio::task::JoinHandle<()>,
    /// The same socket (a duplicate descriptor): the reset is set on it while it is open.
    socket: Option<OwnedFd>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(socket) = self.socket.take() {
            let _ = socket2::SockRef::from(&socket).set_linger(Some(Duration::ZERO));
            self.task.abort();
            drop(socket); // the last descriptor of the socket: closes it with a reset
        }
    }
}

impl Conn {
    /// The exchange ended: lets the connection finish on its own (at most `within`), then
    /// closes it normally.
    async fn finish(mut self, within: Duration) {
        let _ = tokio::time::timeout(within, &mut self.task).await;
        self.task.abort();
        self.socket = None;
    }
}

/// Forwards `req` to `owner` (`http://host:port`); answers the owner's response, its body
/// streamed. Until the owner answers, a client that hangs up (`Hangup` in the request's
/// extensions) or `draining` ends the exchange; after, the client's hang-up still does.
pub async fn forward(
    owner: &str,
    req: Request<RequestBody>,
    draining: impl Future<Output = ()>,
) -> Result<Resp, Failed> {
    let (mut sender, conn) = match connect_to_owner(owner).await {
        Ok(c) => c,
        Err(why) => return Err(Failed::Unreachable(Box::new(req), why)),
    };
    let (upstream, hangup, confirm) = forwarded_request(req);

    let hung_up = {
        let hangup = hangup.clone();
        async move { hangup.hung_up().await }
    };
    let mut hung_up: Pin<Box<dyn Future<Output = ()> + Send + Sync>> = Box::pin(hung_up);
    let answer = tokio::select! {
        r = sender.send_request(upstream) => r,
        // The client left while the owner had not answered (a waiting peer, §3.6): dropping
        // `conn` closes the connection, and the owner sees the same hang-up.
        _ = hung_up.as_mut() => return Err(Failed::Broken("the client hung up".into())),
        _ = draining => return Err(Failed::ShuttingDown),
    };
    let resp = match answer {
        Ok(r) => r,
        Err(e) => return Err(Failed::Broken(format!("{owner}: {e}"))),
    };
    let (mut parts, body) = resp.into_parts();
    strip(&mut parts.headers);
    let body = Relayed {
        inner: body,
        conn: Some(conn),
        hung_up,
        confirm,
        relayed: 0,
    }
    .boxed();
    Ok(http::Response::from_parts(parts, body))
}

/// Opens the connection to `owner` (`http://host:port`, §13.3): its sender and the
/// connection's task. Why the owner could not be reached, if it could not.
async fn connect_to_owner(owner: &str) -> Result<(http1::SendRequest<Upstream>, Conn), String> {
    let authority = match owner.parse::<Uri>() {
        Ok(u) if u.scheme_str() == Some("http") && u.authority().is_some() => {
            u.authority().map(|a| a.to_string()).unwrap_or_default()
        }
        _ => return Err(format!("node URL {owner:?} is not http://HOST:PORT")),
    };
    let addr = if authority.contains(':') {
        authority.clone()
    } else {
        format!("{authority}:80")
    };
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addr)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(format!("{owner}: {e}")),
        Err(_) => return Err(format!("{owner}: connect timed out")),
    };
    let _ = tcp.set_nodelay(true);
    let socket = match tcp.as_fd().try_clone_to_owned() {
        Ok(s) => s,
        Err(e) => return Err(format!("{owner}: {e}")),
    };
    let (sender, conn) = match http1::Builder::new()
        .handshake::<_, Upstream>(TokioIo::new(tcp))
        .await
    {
        Ok(x) => x,
        Err(e) => return Err(format!("{owner}: {e}")),
    };
    let conn = Conn {
        task: tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "forwarded connection ended with an error");
            }
        }),
        socket: Some(socket),
    };
    Ok((sender, conn))
}

/// The request as forwarded to the owner (§13.3): hop-by-hop headers stripped, the hop count
/// one more, HTTP/1.1; a Data API consumer's body is its delivery confirmation. With the
/// client's hang-up, and what confirming a consumer's delivery takes.
fn forwarded_request(req: Request<RequestBody>) -> (Request<Upstream>, Hangup, Option<Confirm>) {
    let (mut parts, body) = req.into_parts();
    let hangup = Hangup::of(&parts.extensions);
    let http2 = parts.version >= Version::HTTP_2;
    let client = parts
        .extensions
        .get::<Arc<ConnFd>>()
        .cloned()
        .map(|c| (c, http2));
    // A Data API consumer: its delivery is confirmed through the request body (§13.3).
    let consumer =
        parts.method == Method::GET && !parts.uri.path().starts_with(paths::CONNECT_PREFIX);
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
    let (body, confirm) = if consumer {
        parts.headers.remove(header::CONTENT_LENGTH);
        parts
            .headers
            .insert(DELIVERY, HeaderValue::from_static(CONFIRM));
        // hyper sends a GET's body of unknown length only when told to
        parts.headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        let (tx, rx) = oneshot::channel();
        (Upstream::Confirm(rx), Some(Confirm { tx, client }))
    } else {
        (Upstream::Client(body), None)
    };
    (Request::from_parts(parts, body), hangup, confirm)
}

/// The forwarded request's body: the client's, or (a consumer) the delivery confirmation.
enum Upstream {
    Client(RequestBody),
    /// Ends when the sender fires, fails when it is dropped (§13.3).
    Confirm(oneshot::Receiver<()>),
}

impl Body for Upstream {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            Upstream::Client(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(std::io::Error::other))),
            Upstream::Confirm(rx) => match ready!(Pin::new(rx).poll(cx)) {
                Ok(()) => Poll::Ready(None),
                Err(_) => Poll::Ready(Some(Err(std::io::Error::other(
                    "the consumer did not receive the whole response",
                )))),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Upstream::Client(b) => b.is_end_stream(),
            Upstream::Confirm(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Upstream::Client(b) => b.size_hint(),
            Upstream::Confirm(_) => SizeHint::default(),
        }
    }
}

/// What confirming a forwarded consumer's delivery takes (§13.3).
struct Confirm {
    tx: oneshot::Sender<()>,
    /// The client's connection, whose acknowledgements are waited for, and whether it is
    /// HTTP/2.
    client: Option<(Arc<ConnFd>, bool)>,
}

impl Confirm {
    /// Once the response (`data` bytes) has ended here: waits until the client acknowledged
    /// every byte up to its end (§3.2, `conn/`), then ends the forwarded request body; if the
    /// client failed, closes the connection instead. The end is noted at once (synchronously,
    /// where hyper polls the body): a connection already closed then is a client that failed.
    fn start(self, conn: Option<Conn>, data: u64) {
        let end = self.client.as_ref().map(|(c, http2)| match http2 {
            true => c.end_h2(data),
            false => c.end_h1(),
        });
        tokio::spawn(async move {
            let received = match end {
                Some(end) => end.delivered().await,
                None => true,
            };
            if !received {
                return;
            }
            let _ = self.tx.send(());
            if let Some(conn) = conn {
                conn.finish(CONFIRM_FLUSH).await;
            }
        });
    }
}

/// The owner's response body as relayed to the client: the forwarded connection lives as long
/// as it does; the client's hang-up closes it; at its end, a consumer's delivery is confirmed.
struct Relayed {
    inner: Incoming,
    conn: Option<Conn>,
    hung_up: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    confirm: Option<Confirm>,
    /// Bytes relayed so far.
    relayed: u64,
}

impl Relayed {
    /// The owner's response ended: confirms a consumer's delivery, or lets the connection
    /// finish cleanly.
    fn ended(&mut self) {
        let conn = self.conn.take();
        match self.confirm.take() {
            Some(confirm) => confirm.start(conn, self.relayed),
            None => {
                if let Some(conn) = conn {
                    tokio::spawn(conn.finish(CONFIRM_FLUSH));
                }
            }
        }
    }
}

impl Body for Relayed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.hung_up.as_mut().poll(cx).is_ready() {
            this.confirm = None;
            this.conn = None;
            return Poll::Ready(Some(Err(std::io::Error::other("the client hung up"))));
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.relayed += data.len() as u64;
                }
                if this.inner.is_end_stream() {
                    // The last bytes (`Content-Length`): hyper writes them as the end (HTTP/2:
                    // with `END_STREAM`) without polling again.
                    this.ended();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => {
                this.confirm = None;
                this.conn = None;
                Poll::Ready(Some(Err(std::io::Error::other(e))))
            }
            None => {
                this.ended();
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Ended once its end was noted (`ended`): an empty response's body is polled once,
        // so that the end is noted before hyper writes it (HTTP/2: before `END_STREAM`).
        self.inner.is_end_stream() && self.conn.is_none() && self.confirm.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Relayed {
    fn drop(&mut self) {
        // HTTP/1.1 never polls a body declared empty (`Content-Length: 0`) and drops it after
        // writing the head (and drops any body when the client's connection fails:
        // `Confirm::start` tells).
        if self.conn.is_some() && self.inner.is_end_stream() {
            self.ended();
        }
    }
}
