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
    let (call, hello) = match connect_call(&state, &params, &headers, &uri, &path) {
        Ok(c) => c,
        Err(resp) => return *resp,
    };

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
    let peer_hello = match await_connect_peer(&state, &path, &call, hello, waiting, &hangup).await {
        Ok(h) => h,
        Err(resp) => return *resp,
    };
    connect_answer(
        &state,
        &headers,
        &uri,
        conn.as_ref(),
        &path,
        &call,
        peer_hello,
    )
}

/// A Connect call's parameters (§5, §5.1), checked.
struct ConnectCall<'a> {
    params: &'a Params,
    want: Await,
    timeout: Option<Duration>,
    redirect: bool,
    channel: Option<&'a str>,
    linger: Option<Duration>,
}

/// Reads a Connect call: its parameters and its hello (which goes to the peer), then the
/// token, checked in that order. A refusal is the answer (boxed: the rare path).
fn connect_call<'a>(
    state: &Shared,
    params: &'a Params,
    headers: &HeaderMap,
    uri: &Uri,
    path: &str,
) -> Result<(ConnectCall<'a>, Option<String>), Box<Resp>> {
    let refuse = |r: Rejection| Box::new(rejection(&r));
    let want = wanted(params).map_err(refuse)?;
    let timeout = params.seconds(query::TIMEOUT).map_err(refuse)?;
    let redirect = params.flag(query::REDIRECT).map_err(refuse)?;
    // §5.1: a channel is a side room of Connect callers; `redirect` makes no sense there
    let channel = match params.channel(headers) {
        Ok(Some(_)) if redirect => return Err(refuse(Rejection::InvalidParameter(query::CHANNEL))),
        Ok(c) => c,
        Err(r) => return Err(refuse(r)),
    };
    let hello = hello_of(headers).map_err(refuse)?;
    let linger = params.seconds(query::LINGER).map_err(refuse)?;
    let linger = linger.map(|l| l.min(Duration::from_secs_f64(LINGER_MAX_S)));
    if let Some(auth) = &state.auth {
        // on a channel too: the token is checked on the stream path itself (§5.1)
        auth.check(headers, uri, token_mode(want), path)
            .map_err(|r| Box::new(r.response()))?;
    }
    let call = ConnectCall {
        params,
        want,
        timeout,
        redirect,
        channel,
        linger,
    };
    Ok((call, hello))
}

/// Waits for the Connect call's peer (its `timeout`, §5), holding `waiting` (§9) meanwhile;
/// answers the peer's hello. A timeout, a relay shutting down or a caller gone is the answer.
async fn await_connect_peer(
    state: &Shared,
    path: &str,
    call: &ConnectCall<'_>,
    hello: Option<String>,
    waiting: Option<crate::crowd::Hold>,
    hangup: &Hangup,
) -> Result<Option<String>, Box<Resp>> {
    let mut wait = state
        .data
        .hub
        .await_peer(path, call.channel, call.want, hello);
    if let Some(l) = call.linger {
        wait.linger_until(std::time::Instant::now() + l);
    }
    let waited = async {
        match call.timeout {
            None => Some(wait.ready().await),
            Some(t) => tokio::time::timeout(t, wait.ready()).await.ok(),
        }
    };
    let shutting_down = || Box::new(rejection(&Rejection::ShuttingDown));
    let peer_hello = tokio::select! {
        r = waited => r,
        _ = state.data.reached(Phase::Draining) => return Err(shutting_down()),
        // the caller is gone (hyper didn't notice: bytes pipelined behind, §3.6)
        _ = hangup.hung_up() => return Err(shutting_down()),
    };
    drop((wait, waiting));
    let Some(peer_hello) = peer_hello else {
        let timed_out = text(StatusCode::REQUEST_TIMEOUT, format!("{CONNECT_TIMEOUT}\n"));
        return Err(Box::new(timed_out));
    };
    Ok(peer_hello)
}

/// A Connect call's answer once its peer came (§5): the data URL, as a 200 or (`redirect`)
/// a 307, with the peer's hello.
fn connect_answer(
    state: &Shared,
    headers: &HeaderMap,
    uri: &Uri,
    conn: Option<&ConnInfo>,
    path: &str,
    call: &ConnectCall<'_>,
    peer_hello: Option<String>,
) -> Resp {
    // In a cluster without --public-url, the owner's own URL: the data requests skip the
    // extra hop (§13.3); with it, the public URL (clients can't reach the nodes).
    let base = match (&state.cluster, &state.config.public_url) {
        (Some(c), None) => c.node_url().to_string(),
        _ => state.base_url(headers, uri, conn),
    };
    let data_url = format!("{base}{path}");
    if call.redirect {
        // A token given in the query (for <video src>-style consumers) travels on.
        let in_query = call.params.get(query::ACCESS_TOKEN);
        let location = match (in_query, request_token(headers, uri)) {
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
