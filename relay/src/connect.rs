//! Connect API (`docs/PROTOCOL.md` §5, ZebraStream v0 compatible):
//! `GET /connect/v0/{path}?mode=await-reader|await-writer[&timeout=S][&redirect=true]`.

use std::time::Duration;

use http::header::{self, HeaderValue};
use http::{HeaderMap, StatusCode, Uri};
use httpipe::protocol::control::{Rejection, CONNECT_TIMEOUT};
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
    let want = match get(query::MODE) {
        Ok(Some(query::MODE_AWAIT_READER)) => Await::Reader,
        Ok(Some(query::MODE_AWAIT_WRITER)) => Await::Writer,
        _ => return rejection(&Rejection::InvalidParameter(query::MODE)),
    };
    let timeout = match get(query::TIMEOUT) {
        Ok(None) => None,
        Ok(Some(s)) => match s.parse::<f64>() {
            Ok(t) if t.is_finite() && t >= 0.0 => Some(Duration::from_secs_f64(t.min(1e9))),
            _ => return rejection(&Rejection::InvalidParameter(query::TIMEOUT)),
        },
        Err(r) => return rejection(&r),
    };
    let redirect = match params.flag(query::REDIRECT) {
        Ok(r) => r,
        Err(r) => return rejection(&r),
    };
    if let Some(auth) = &state.auth {
        // await-reader is the producer's call, await-writer the consumer's (§5, §6).
        let mode = if want == Await::Reader {
            Mode::Write
        } else {
            Mode::Read
        };
        if let Err(r) = auth.check(&headers, &uri, mode, &path) {
            return r.response();
        }
    }

    let mut wait = state.data.hub.await_peer(&path, want);
    let waited = async {
        match timeout {
            None => {
                wait.ready().await;
                true
            }
            Some(t) => tokio::time::timeout(t, wait.ready()).await.is_ok(),
        }
    };
    let ready = tokio::select! {
        r = waited => r,
        _ = state.data.reached(Phase::Draining) => return rejection(&Rejection::ShuttingDown),
        // the caller is gone (hyper didn't notice: bytes pipelined behind, §3.6)
        _ = hangup.hung_up() => return rejection(&Rejection::ShuttingDown),
    };
    drop(wait);
    if !ready {
        return text(StatusCode::REQUEST_TIMEOUT, format!("{CONNECT_TIMEOUT}\n"));
    }

    let data_url = format!("{}{}", state.base_url(&headers, &uri, conn.as_ref()), path);
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
        return r;
    }
    text(StatusCode::OK, format!("{data_url}\n"))
}
