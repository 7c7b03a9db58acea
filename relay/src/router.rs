//! Request routing (`docs/PROTOCOL.md` §2): the relay's own paths, then the Data API.

use crate::request_body::RequestBody;
use http::{Method, Request};
use httpipe::protocol::control::Rejection;
use httpipe::protocol::paths::{self, MAX_PATH_BYTES};
use httpipe::protocol::token::Mode;
use httpipe::protocol::{query, upload};

use std::sync::Arc;

use crate::conn::ConnFd;
use crate::data::segmented::Part;
use crate::hangup::Hangup;
use crate::params::Params;
use crate::respond::{preflight, rejection, Resp};
use crate::state::{ConnInfo, Shared};
use crate::{connect, data, ops, static_files};

/// Answers one request. Never panics on client input.
pub async fn handle(state: Shared, req: Request<RequestBody>) -> Resp {
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
    let params = Params::parse(req.uri().query());
    let n = match params.get(query::N).map(query::parse_n) {
        Ok(Some(n)) => n,
        Ok(None) => return rejection(&Rejection::InvalidN),
        Err(r) => return rejection(&r),
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
        let conn = req.extensions().get::<Arc<ConnFd>>().cloned();
        let hangup = Hangup::of(req.extensions());
        return data::consumer::handle(state.data.clone(), conn, hangup, path, n).await;
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
        let part = match part_of(&params) {
            Ok(p) => p,
            Err(r) => return rejection(&r),
        };
        let plane = state.data.clone();
        let (parts, body) = req.into_parts();
        let hangup = Hangup::of(&parts.extensions);
        return match part {
            Some(part) => {
                Box::pin(data::segmented::handle(
                    plane,
                    parts.headers,
                    body,
                    hangup,
                    path,
                    n,
                    part,
                ))
                .await
            }
            None => {
                let stream = data::stream::handle(
                    plane,
                    parts.version,
                    parts.headers,
                    body,
                    hangup,
                    path,
                    n,
                );
                Box::pin(stream).await
            }
        };
    }
    rejection(&Rejection::UnsupportedMethod(method.to_string()))
}

/// The segmented-upload parameters of a producer's request (§4), if it is a part.
fn part_of(params: &Params) -> Result<Option<Part>, Rejection> {
    let Some(k) = params.get(upload::PART)? else {
        return Ok(None);
    };
    let k = k
        .parse::<u64>()
        .map_err(|_| Rejection::InvalidParameter(upload::PART))?;
    Ok(Some(Part {
        k,
        is_final: params.flag(upload::FINAL)?,
        upload: params.get(upload::UPLOAD)?.map(str::to_string),
    }))
}

/// The relay's own paths (GET/HEAD; `/connect` and `/api` have their own methods).
async fn reserved(
    state: Shared,
    req: Request<RequestBody>,
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
            return rejection(&Rejection::ConnectNeedsPath);
        }
        let stream_path = format!("/{rest}");
        let (parts, _) = req.into_parts();
        let hangup = Hangup::of(&parts.extensions);
        return connect::handle(state, parts.headers, parts.uri, conn, hangup, stream_path).await;
    }
    if path == paths::ACCESS_TOKEN_CREATE {
        return crate::auth::create_endpoint(state.auth.as_ref(), req).await;
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
        "/robots.txt" => rejection(&Rejection::NotFound),
        _ => return static_files::serve(&state, path, head).await,
    };
    if head {
        let (parts, _) = resp.into_parts();
        return http::Response::from_parts(parts, crate::respond::empty());
    }
    resp
}
