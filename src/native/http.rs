//! Doing the core's [`Request`]s with reqwest: building them, their timeouts, reading short text
//! answers, and turning reqwest's errors into the core's [`Failure`]s.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::stop::Stop;
use crate::client::error::{Error, Failure, StopReason};
use crate::client::request::{Headers, LastWords, Method, Request, TEXT_LIMIT};

/// Response headers as the core reads them.
pub(crate) struct HeaderView<'a>(pub &'a HeaderMap);

impl Headers for HeaderView<'_> {
    fn get(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .0
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }
}

/// A reqwest error shown with its whole cause chain ("error sending request: connection
/// refused"), kept as the cause of our errors.
#[derive(Debug)]
pub(crate) struct TransportError(pub reqwest::Error);

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(&self.0);
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The failure of a request that reqwest reported as `e`.
pub(crate) fn failure(e: reqwest::Error, stop: &Stop) -> Failure {
    let builder = e.is_builder();
    let cause = TransportError(e);
    match stop.reason() {
        StopReason::None => Failure {
            network: !builder,
            ..Failure::network(cause)
        },
        r => Failure::stopped(r, Some(Arc::new(cause))),
    }
}

pub(crate) fn duration_of_ms(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 1e9))
}

/// A reqwest request for `req` (method, URL, headers); a header value that can't be sent is
/// the caller's mistake (`UNSUPPORTED`).
pub(crate) fn build(
    http: &reqwest::Client,
    req: &Request,
) -> Result<reqwest::RequestBuilder, Failure> {
    let mut headers = HeaderMap::new();
    for (name, value) in &req.headers {
        let n = HeaderName::from_bytes(name.as_bytes());
        let v = HeaderValue::from_str(value);
        match (n, v) {
            (Ok(n), Ok(v)) => {
                headers.append(n, v);
            }
            _ => {
                return Err(Failure::coded(Error::usage(format!(
                    "{}: the {name} header can't be sent (control characters?)",
                    req.describe()
                ))))
            }
        }
    }
    let method = match req.method {
        Method::Get => reqwest::Method::GET,
        Method::Post => reqwest::Method::POST,
        Method::Delete => reqwest::Method::DELETE,
    };
    Ok(http.request(method, &req.url).headers(headers))
}

/// A complete answer with a short text body.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

/// Reads at most [`TEXT_LIMIT`] bytes of a body as text (lossy UTF-8).
pub(crate) async fn read_text(mut resp: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = TEXT_LIMIT.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= TEXT_LIMIT {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Makes `req` (with `body`, if any) and reads its short text answer, within its
/// `timeout_ms` (then [`Failure::timed_out`]) and until `stop`.
pub(crate) async fn text_request(
    http: &reqwest::Client,
    req: &Request,
    body: Option<Bytes>,
    stop: &Stop,
) -> Result<Answer, Failure> {
    text_request_seen(http, req, body, stop, |_, _| {}).await
}

/// [`text_request`], handing the response's status and headers to `on_head` as soon as they
/// are there, before the body is read (which may still fail).
pub(crate) async fn text_request_seen(
    http: &reqwest::Client,
    req: &Request,
    body: Option<Bytes>,
    stop: &Stop,
    on_head: impl FnOnce(u16, &HeaderMap),
) -> Result<Answer, Failure> {
    let mut rb = build(http, req)?;
    if let Some(b) = body {
        rb = rb.body(b);
    }
    let exchange = async {
        let resp = rb.send().await?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        on_head(status, &headers);
        let body = read_text(resp).await?;
        Ok::<_, reqwest::Error>(Answer {
            status,
            headers,
            body,
        })
    };
    let timed = async {
        match req.timeout_ms {
            Some(ms) => match tokio::time::timeout(duration_of_ms(ms), exchange).await {
                Ok(r) => r.map_err(|e| failure(e, stop)),
                Err(_) => Err(Failure::timed_out(req)),
            },
            None => exchange.await.map_err(|e| failure(e, stop)),
        }
    };
    tokio::select! {
        r = timed => r,
        _ = stop.stopped() => Err(Failure::stopped(stop.reason(), None)),
    }
}

/// Makes one last word; whether it told the peer ([`LastWords::told`]).
pub(crate) async fn say(http: reqwest::Client, req: Request) -> bool {
    say_among(http, req, Stop::new()).await
}

/// [`say`], one of several (`all` shared): the one that told the peer stops the others
/// ([`LastWords::calls`]).
async fn say_among(http: reqwest::Client, req: Request, all: Stop) -> bool {
    let answer = text_request(&http, &req, None, &all).await;
    let told = LastWords::told(answer.ok().map(|a| a.status));
    if told {
        all.stop(StopReason::Internal, None);
    }
    told
}

/// The last words on their way in the background (receipts, failure notices, withdrawals),
/// so that a program that exits can wait for them ([`settle_last_words`]).
fn in_flight() -> &'static tokio_util::task::TaskTracker {
    static TRACKER: std::sync::OnceLock<tokio_util::task::TaskTracker> = std::sync::OnceLock::new();
    TRACKER.get_or_init(tokio_util::task::TaskTracker::new)
}

/// Runs `call` in the background on the current runtime (none: it doesn't run), where
/// [`settle_last_words`] can wait for it: a last word, or a transfer's task whose end makes its
/// last words (`Client::open_writer`'s driver).
pub(crate) fn spawn_finishing<F>(call: F) -> Option<tokio::task::JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = tokio::runtime::Handle::try_current().ok()?;
    Some(in_flight().spawn_on(call, &rt))
}

/// Waits at most `max` for the last words this process's transfers still have on their way
/// in the background — a receipt, a failure notice, a withdrawal, a consumer's word that it
/// left (`PROTOCOL.md` §3.10, §12.2, §12.3, §12.5) — made when a transfer failed, or when its
/// future or [`super::Reader`] was dropped midway. A program that exits right after (a CLI
/// interrupted by Ctrl-C) calls this first, so that its peer is told instead of waiting out its
/// resume time. Returns at once when none is on its way.
pub async fn settle_last_words(max: std::time::Duration) {
    in_flight().close();
    let _ = tokio::time::timeout(max, in_flight().wait()).await;
    in_flight().reopen();
}

/// Makes the core's last words together and waits until one told the peer, all are answered,
/// or the core's wait is over; they go on in the background after that (the mirror of the
/// wasm driver's `say_last_words`). Once one told the peer the others are stopped
/// ([`LastWords::calls`]): superfluous then, one may wait for nobody (a call to a channel the
/// peer no longer listens on), and [`settle_last_words`] would wait for it.
pub(crate) async fn say_last_words(http: &reqwest::Client, words: LastWords) {
    let all = Stop::new();
    let mut left: Vec<_> = (words.calls.into_iter())
        .filter_map(|req| spawn_finishing(say_among(http.clone(), req, all.clone())))
        .collect();
    let told = async move {
        while !left.is_empty() {
            let (answer, _, rest) = futures_util::future::select_all(left).await;
            left = rest;
            if answer.unwrap_or(false) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(duration_of_ms(words.wait_ms), told).await;
}
