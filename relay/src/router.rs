//! Request routing (`docs/PROTOCOL.md` §2): the relay's own paths, then the Data API.

use http::{Method, Request, StatusCode};
use httpipe::protocol::control::Rejection;
use httpipe::protocol::paths::{self, MAX_PATH_BYTES};
use httpipe::protocol::token::Mode;
use httpipe::protocol::{query, upload};
use hyper::body::Incoming;

use crate::respond::{preflight, rejection, text, Resp};
use crate::state::{ConnInfo, Shared};
use crate::{connect, data, ops, segmented, static_files};

/// Answers one request. Never panics on client input.
pub async fn handle(state: Shared, req: Request<Incoming>) -> Resp {
    state.metrics.request();
    let conn = req.extensions().get::<ConnInfo>().copied();
    let method = req.method().clone();
    let path = req.uri().path().to_string();

    if method == Method::OPTIONS {
        let pna = req
            .headers()
            .get("access-control-request-private-network")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        return preflight(pna);
    }
    if path.len() > MAX_PATH_BYTES {
        return rejection(&Rejection::PathTooLong);
    }
    let get_or_head = method == Method::GET || method == Method::HEAD;
    let producing = method == Method::POST || method == Method::PUT;

    if paths::is_reserved(&path) {
        // §2: a POST/PUT to a reserved path is a send to it, except the token endpoint's POST.
        let management = method == Method::POST && path == paths::ACCESS_TOKEN_CREATE;
        if producing && !management {
            return rejection(&Rejection::ReservedPath(path));
        }
        return Box::pin(reserved(state, req, conn, &path, get_or_head)).await;
    }

    // Data API (§3)
    let params = Params::from_query(req.uri().query());
    let n = match query::parse_n(params.get(query::N)) {
        Some(n) => n,
        None => return rejection(&Rejection::InvalidN),
    };
    if method == Method::GET {
        if req
            .headers()
            .get("service-worker")
            .is_some_and(|v| v.as_bytes() == b"script")
        {
            return rejection(&Rejection::ServiceWorker);
        }
        if let Some(auth) = &state.auth {
            if let Err(r) = auth.check(req.headers(), req.uri(), Mode::Read, &path) {
                return r.response();
            }
        }
        let hangup = crate::hangup::Hangup::of(req.extensions());
        return data::consumer::handle(state, path, n, hangup).await;
    }
    if producing {
        if req.headers().contains_key(http::header::CONTENT_RANGE) {
            return rejection(&Rejection::ContentRange);
        }
        if let Some(auth) = &state.auth {
            if let Err(r) = auth.check(req.headers(), req.uri(), Mode::Write, &path) {
                return r.response();
            }
        }
        if params.get(upload::PART).is_some() {
            return Box::pin(segmented::handle(state, req, path, n, params)).await;
        }
        let (parts, body) = req.into_parts();
        let hangup = crate::hangup::Hangup::of(&parts.extensions);
        return Box::pin(data::producer::handle(
            state,
            parts.headers,
            body,
            path,
            n,
            hangup,
        ))
        .await;
    }
    rejection(&Rejection::UnsupportedMethod(method.to_string()))
}

/// The relay's own paths (GET/HEAD; `/connect` and `/api` have their own methods).
async fn reserved(
    state: Shared,
    req: Request<Incoming>,
    conn: Option<ConnInfo>,
    path: &str,
    get_or_head: bool,
) -> Resp {
    let method = req.method().clone();
    if let Some(rest) = path.strip_prefix(paths::CONNECT_PREFIX) {
        if method != Method::GET {
            return rejection(&Rejection::UnsupportedMethod(method.to_string()));
        }
        if rest.is_empty() {
            return text(
                StatusCode::BAD_REQUEST,
                "[ERROR] The Connect API needs a stream path: /connect/v0/{path}\n",
            );
        }
        let stream_path = format!("/{rest}");
        let (parts, _) = req.into_parts();
        return connect::handle(state, parts.headers, parts.uri, conn, stream_path).await;
    }
    if path == paths::ACCESS_TOKEN_CREATE {
        return crate::auth::create_endpoint(state, req).await;
    }
    if !get_or_head {
        return rejection(&Rejection::UnsupportedMethod(method.to_string()));
    }
    let head = method == Method::HEAD;
    let resp = match path {
        "/help" => ops::help(&state, req.headers(), req.uri(), conn.as_ref()),
        "/version" => ops::version(),
        "/healthz" => ops::healthz(),
        "/metrics" => ops::metrics(&state),
        "/favicon.ico" => ops::no_content(),
        "/robots.txt" => text(StatusCode::NOT_FOUND, "[ERROR] Not found.\n"),
        _ => return static_files::serve(&state, path, head).await,
    };
    if head {
        let (parts, _) = resp.into_parts();
        return http::Response::from_parts(parts, crate::respond::empty());
    }
    resp
}

/// Decoded query parameters (first occurrence wins).
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn from_query(q: Option<&str>) -> Params {
        Params(
            form_urlencoded::parse(q.unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
