//! Connect API (`docs/PROTOCOL.md` §5, ZebraStream v0 compatible):
//! `GET /connect/v0/{path}?mode=await-reader|await-writer[&timeout=S][&redirect=true]`, with
//! the §5.1 extension: `[&channel=ID]` and the `X-Httpipe-Hello` request header, answered
//! with the peer's `X-Httpipe-Peer-Hello`.

use std::time::Duration;

use http::header::{self, HeaderValue};
use http::{HeaderMap, StatusCode, Uri};
use httpipe::protocol::control::{Rejection, CONNECT_TIMEOUT};
use httpipe::protocol::headers::{is_valid_hello, HELLO, PEER_HELLO};
use httpipe::protocol::hello::LINGER_MAX_S;
use httpipe::protocol::paths;
use httpipe::protocol::query;
use httpipe::protocol::token::Mode;

use crate::auth::request_token;
use crate::data::Phase;
use crate::hangup::Hangup;
use crate::pairing::Await;
use crate::params::Params;
use crate::respond::{rejection, text, Resp};
use crate::state::{ConnInfo, Shared};

/// Handles one Connect call for stream path `path` (already stripped of `/connect/v0`).
pub async fn handle(
    state: Shared,
    headers: HeaderMap,
    uri: Uri,
    conn: Option<ConnInfo>,
    hangup: Hangup,
    path: String,
) -> Resp {
    let params = Params::parse(uri.query());
    let get = |name: &'static str| params.get(name);
    let want = match wanted(&params) {
        Ok(w) => w,
        Err(r) => return rejection(&r),
    };
    let timeout = match params.seconds(query::TIMEOUT) {
        Ok(t) => t,
        Err(r) => return rejection(&r),
    };
    let redirect = match params.flag(query::REDIRECT) {
        Ok(r) => r,
        Err(r) => return rejection(&r),
    };
    // §5.1: a channel is a side room of Connect callers; `redirect` makes no sense there
    let channel = match params.channel(&headers) {
        Ok(Some(_)) if redirect => return rejection(&Rejection::InvalidParameter(query::CHANNEL)),
        Ok(c) => c,
        Err(r) => return rejection(&r),
    };
    let hello = match hello_of(&headers) {
        Ok(h) => h,
        Err(r) => return rejection(&r),
    };
    let linger = match params.seconds(query::LINGER) {
        Ok(l) => l.map(|l| l.min(Duration::from_secs_f64(LINGER_MAX_S))),
        Err(r) => return rejection(&r),
    };
    if let Some(auth) = &state.auth {
        // on a channel too: the token is checked on the stream path itself (§5.1)
        if let Err(r) = auth.check(&headers, &uri, token_mode(want), &path) {
            return r.response();
        }
    }

    // §9, §14.5: what this caller's address may hold; kept until the answer
    let client = state.client(&headers, conn.as_ref());
    let crowd = &state.data.crowd;
    let _code = match paths::code_channel(&path).map(|_| crowd.code_request(client, true)) {
        None => None,
        Some(Ok(hold)) => hold,
        Some(Err(r)) => return rejection(&r),
    };
    let waiting = match crowd.wait(client) {
        Ok(hold) => hold,
        Err(r) => return rejection(&r),
    };
    let mut wait = state.data.hub.await_peer(&path, channel, want, hello);
    if let Some(l) = linger {
        wait.linger_until(std::time::Instant::now() + l);
    }
    let waited = async {
        match timeout {
            None => Some(wait.ready().await),
            Some(t) => tokio::time::timeout(t, wait.ready()).await.ok(),
        }
    };
    let peer_hello = tokio::select! {
        r = waited => r,
        _ = state.data.reached(Phase::Draining) => return rejection(&Rejection::ShuttingDown),
        // the caller is gone (hyper didn't notice: bytes pipelined behind, §3.6)
        _ = hangup.hung_up() => return rejection(&Rejection::ShuttingDown),
    };
    drop((wait, waiting));
    let Some(peer_hello) = peer_hello else {
        return text(StatusCode::REQUEST_TIMEOUT, format!("{CONNECT_TIMEOUT}\n"));
    };

    // In a cluster without --public-url, the owner's own URL: the data requests skip the
    // extra hop (§13.3); with it, the public URL (clients can't reach the nodes).
    let base = match (&state.cluster, &state.config.public_url) {
        (Some(c), None) => c.node_url().to_string(),
        _ => state.base_url(&headers, &uri, conn.as_ref()),
    };
    let data_url = format!("{base}{path}");
    if redirect {
        // A token given in the query (for <video src>-style consumers) travels on.
        let location = match (get(query::ACCESS_TOKEN), request_token(&headers, &uri)) {
            (Ok(Some(_)), Some(t)) => {
                let q: String = form_urlencoded::Serializer::new(String::new())
                    .append_pair(query::ACCESS_TOKEN, &t)
                    .finish();
                format!("{data_url}?{q}")
            }
            _ => data_url.clone(),
        };
        let mut r = text(StatusCode::TEMPORARY_REDIRECT, format!("{data_url}\n"));
        if let Ok(v) = HeaderValue::from_str(&location) {
            r.headers_mut().insert(header::LOCATION, v);
        }
        return with_peer_hello(r, peer_hello);
    }
    with_peer_hello(text(StatusCode::OK, format!("{data_url}\n")), peer_hello)
}

/// The peer a Connect call waits for: its `mode` (§5).
pub fn wanted(params: &Params) -> Result<Await, Rejection> {
    match params.get(query::MODE) {
        Ok(Some(query::MODE_AWAIT_READER)) => Ok(Await::Reader),
        Ok(Some(query::MODE_AWAIT_WRITER)) => Ok(Await::Writer),
        _ => Err(Rejection::InvalidParameter(query::MODE)),
    }
}

/// The token mode a Connect call needs (§6): await-reader is the producer's call (write),
/// await-writer the consumer's (read).
pub fn token_mode(want: Await) -> Mode {
    match want {
        Await::Reader => Mode::Write,
        Await::Writer => Mode::Read,
    }
}

/// The caller's `X-Httpipe-Hello` (§5.1): absent is `None`; more than one, too long, or with
/// bytes other than visible ASCII and spaces is `invalid-header`. Never logged.
fn hello_of(headers: &HeaderMap) -> Result<Option<String>, Rejection> {
    let mut values = headers.get_all(HELLO).iter();
    let Some(v) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() || !is_valid_hello(v.as_bytes()) {
        return Err(Rejection::InvalidHeader(HELLO));
    }
    // visible ASCII and spaces only: valid UTF-8
    Ok(Some(String::from_utf8_lossy(v.as_bytes()).into_owned()))
}

/// A Connect answer (200 or 307) carrying the peer's hello, if it sent one, and readable by
/// browsers (`Access-Control-Expose-Headers`, §5.1).
fn with_peer_hello(mut r: Resp, peer_hello: Option<String>) -> Resp {
    r.headers_mut().insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(PEER_HELLO),
    );
    // a hello was checked to be a valid header value when it arrived
    if let Some(v) = peer_hello.and_then(|h| HeaderValue::from_str(&h).ok()) {
        r.headers_mut().insert(PEER_HELLO, v);
    }
    r
}
