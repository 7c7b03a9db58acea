//! Request routing (`docs/PROTOCOL.md` §2): the relay's own paths, then the Data API.

use crate::request_body::RequestBody;
use http::{Method, Request};
use httpipe::protocol::control::Rejection;
use httpipe::protocol::paths::{self, MAX_PATH_BYTES};
use httpipe::protocol::token::Mode;
use httpipe::protocol::{query, upload};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::future::{ready, Either};
use futures_util::FutureExt;

use crate::conn::ConnFd;
use crate::data::segmented::Part;
use crate::data::{Ack, Meet, Phase};
use crate::hangup::Hangup;
use crate::params::Params;
use crate::respond::{preflight, rejection, Resp};
use crate::state::{ConnInfo, Shared};
use crate::{connect, data, ops, static_files};

/// Answers one request. Never panics on client input.
///
/// What can be decided before a handler runs is decided here, synchronously, and the future
/// returned is the handler's alone: a waiting consumer's is [`data::consumer::handle`]'s, not
/// an `async` routing state machine around it (hyper keeps this future per request, so its
/// size is memory per waiting peer). The other handlers are boxed.
pub fn handle(
    state: Shared,
    req: Request<RequestBody>,
) -> impl Future<Output = Resp> + Send + 'static {
    if let Some(cluster) = &state.cluster {
        if let Some(path) = cluster_path(&req) {
            let cluster = cluster.clone();
            let f: Boxed = Box::pin(clustered(state, cluster, path, req));
            return Either::Right(f);
        }
    }
    Either::Left(local(state, req))
}

/// Serves a request on this node.
fn local(state: Shared, req: Request<RequestBody>) -> impl Future<Output = Resp> + Send + 'static {
    match route(state, req) {
        Handler::Now(resp) => Either::Left(ready(resp)),
        Handler::Consumer(f) => Either::Right(Either::Left(f)),
        Handler::Boxed(f) => Either::Right(Either::Right(f)),
    }
}

/// The stream path a request meets its peers on, if it is one a cluster places (§13.2): a
/// Data API request or a Connect call. Everything else (reserved paths, preflights, paths
/// too long) is answered by the node it reached.
fn cluster_path(req: &Request<RequestBody>) -> Option<String> {
    let path = req.uri().path();
    if path.len() > MAX_PATH_BYTES {
        return None;
    }
    let m = req.method();
    if let Some(rest) = path.strip_prefix(paths::CONNECT_PREFIX) {
        return (m == Method::GET && !rest.is_empty()).then(|| format!("/{rest}"));
    }
    let data = m == Method::GET || m == Method::POST || m == Method::PUT || m == Method::DELETE;
    (data && !paths::is_reserved(path)).then(|| path.to_string())
}

/// A request in a cluster (§13.2, §13.3): served here while this node holds the path, else
/// forwarded to the owner, retried while the owner is unreachable and not yet replaced.
async fn clustered(
    state: Shared,
    cluster: Arc<crate::cluster::Cluster>,
    path: String,
    mut req: Request<RequestBody>,
) -> Resp {
    use crate::cluster::forward::{self, Failed};
    use crate::cluster::{Place, NODE_TTL, RETRY_OWNER};
    use http_body_util::BodyExt;
    // Tokens first (§13.3): a request without a valid one costs no Redis call.
    if let Some(auth) = &state.auth {
        let mode = match token_mode(&req) {
            Ok(m) => m,
            Err(r) => return rejection(&r),
        };
        if let Err(r) = auth.check(req.headers(), req.uri(), mode, &path) {
            return r.response();
        }
    }
    let hangup = Hangup::of(req.extensions());
    let deadline = std::time::Instant::now() + NODE_TTL + std::time::Duration::from_secs(1);
    loop {
        let why = match cluster.place(&path).await {
            Place::Here(hold) => {
                let resp = local(state, req).await;
                // The path stays this node's until the response has ended (§13.2).
                return resp.map(|b| {
                    b.map_err(move |e| {
                        let _hold = &hold;
                        e
                    })
                    .boxed()
                });
            }
            Place::Unavailable(why) => {
                tracing::debug!(error = %why, "cluster: no claim");
                return unavailable(Rejection::ClusterUnavailable);
            }
            Place::Retry(why) => why,
            Place::There(owner) => {
                if forward::hops(req.headers()) >= forward::MAX_HOPS {
                    tracing::warn!("cluster: a request was forwarded too often (claims moving)");
                    return unavailable(Rejection::ClusterUnavailable);
                }
                let draining = state.data.reached(Phase::Draining);
                match forward::forward(&owner, req, draining).await {
                    Ok(resp) => return resp,
                    Err(Failed::ShuttingDown) => return rejection(&Rejection::ShuttingDown),
                    Err(Failed::Broken(why)) => {
                        tracing::debug!(error = %why, "cluster: forwarded request failed");
                        return unavailable(Rejection::OwnerUnreachable);
                    }
                    Err(Failed::Unreachable(back, why)) => {
                        req = *back;
                        why
                    }
                }
            }
        };
        if std::time::Instant::now() >= deadline {
            tracing::warn!(error = %why, "cluster: the path's owner does not answer");
            return unavailable(Rejection::OwnerUnreachable);
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY_OWNER) => {}
            _ = hangup.hung_up() => return unavailable(Rejection::OwnerUnreachable),
            _ = state.data.reached(Phase::Draining) => return rejection(&Rejection::ShuttingDown),
        }
    }
}

/// The token mode a clustered request needs (§6): a Connect call's from its `mode`, a Data API
/// consumer's read, a producer's write.
fn token_mode(req: &Request<RequestBody>) -> Result<Mode, Rejection> {
    if req.uri().path().starts_with(paths::CONNECT_PREFIX) {
        let params = Params::parse(req.uri().query());
        return Ok(connect::token_mode(connect::wanted(&params)?));
    }
    Ok(if req.method() == Method::GET {
        Mode::Read
    } else {
        Mode::Write
    })
}

/// A cluster's 503 (§13.2, §13.3), with `Retry-After: 1`.
fn unavailable(r: Rejection) -> Resp {
    let mut resp = rejection(&r);
    resp.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    resp
}

type Boxed = Pin<Box<dyn Future<Output = Resp> + Send>>;

/// The handler a request goes to.
enum Handler<C> {
    /// Answered right away.
    Now(Resp),
    Consumer(C),
    Boxed(Boxed),
}

/// Routes a request: its handler, or the answer right away.
fn route(
    state: Shared,
    req: Request<RequestBody>,
) -> Handler<impl Future<Output = Resp> + Send + 'static> {
    state.metrics.request();
    let conn = req.extensions().get::<ConnInfo>().copied();
    let method = req.method().clone();
    let path = req.uri().path().to_string();

    if method == Method::OPTIONS {
        let pna = req
            .headers()
            .get("access-control-request-private-network")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        return Handler::Now(preflight(pna));
    }
    if path.len() > MAX_PATH_BYTES {
        return Handler::Now(rejection(&Rejection::PathTooLong));
    }
    let get_or_head = method == Method::GET || method == Method::HEAD;
    let producing = method == Method::POST || method == Method::PUT;

    if paths::is_reserved(&path) {
        // §2: a POST/PUT to a reserved path is a send to it, except the token endpoint's POST.
        let management = method == Method::POST && path == paths::ACCESS_TOKEN_CREATE;
        if producing && !management {
            return Handler::Now(rejection(&Rejection::ReservedPath(path)));
        }
        return Handler::Boxed(Box::pin(reserved(state, req, conn, path, get_or_head)));
    }

    // Data API (§3)
    let data = match data_request(&state, &req, conn.as_ref(), path) {
        Ok(d) => d,
        Err(resp) => return Handler::Now(*resp),
    };
    if method == Method::GET {
        return Handler::Consumer(consumer_handler(state, req, data));
    }
    let handler = if producing {
        producer_handler(state, req, data)
    } else {
        delete_handler(state, req, data)
    };
    match handler {
        Ok(f) => Handler::Boxed(f),
        Err(r) => Handler::Now(rejection(&r)),
    }
}

/// A Data API request (§3) read into what its handler needs.
struct DataRequest {
    params: Params,
    meet: Meet,
    /// The §14.5 code channel hold: kept until the response has ended (`held_until_sent`).
    code: Option<crate::crowd::Hold>,
}

/// Reads a Data API request (§3): `n`, the channel, the method and the token mode it needs,
/// the token, then the §14.5 code channel hold, checked in that order. A refusal is the
/// answer (boxed: the rare path).
fn data_request(
    state: &Shared,
    req: &Request<RequestBody>,
    conn: Option<&ConnInfo>,
    path: String,
) -> Result<DataRequest, Box<Resp>> {
    let refuse = |r: Rejection| Box::new(rejection(&r));
    let method = req.method().clone();
    let producing = method == Method::POST || method == Method::PUT;
    let params = Params::parse(req.uri().query());
    let n = params.get(query::N).map_err(refuse)?;
    let n = query::parse_n(n).ok_or_else(|| refuse(Rejection::InvalidN))?;
    // §5.1 "Data API channels": the same check as the Connect API's `channel`
    let channel = params.channel(req.headers()).map_err(refuse)?;
    let channel = channel.map(str::to_string);
    let client = state.client(req.headers(), conn);
    // §14.5: a code channel's pipe; a GET on pipe `a` is a lookup and never waits
    let code_pipe = paths::code_channel(&path).map(|(_, pipe)| pipe);
    let first_pipe = code_pipe == Some(paths::CODE_FIRST_PIPE);
    let meet = Meet {
        path,
        channel,
        n,
        client,
        producer_first: method == Method::GET && first_pipe,
    };
    let service_worker = req
        .headers()
        .get("service-worker")
        .is_some_and(|v| v.as_bytes() == b"script");
    let need = match method {
        Method::GET if service_worker => return Err(refuse(Rejection::ServiceWorker)),
        _ if producing && req.headers().contains_key(http::header::CONTENT_RANGE) => {
            return Err(refuse(Rejection::ContentRange))
        }
        Method::GET => Mode::Read,
        // §3.10: DELETE is a producer that withdraws
        _ if producing || method == Method::DELETE => Mode::Write,
        _ => return Err(refuse(Rejection::UnsupportedMethod(method.to_string()))),
    };
    if let Some(auth) = &state.auth {
        auth.check(req.headers(), req.uri(), need, &meet.path)
            .map_err(|r| Box::new(r.response()))?;
    }
    // §14.5 rules 1 and 3, after the token (a request refused for it takes nothing); held
    // until the response has ended (`held_until_sent`)
    let code = match code_pipe.map(|_| state.data.crowd.code_request(client, meet.producer_first)) {
        None => None,
        Some(Ok(hold)) => hold,
        Some(Err(r)) => return Err(refuse(r)),
    };
    Ok(DataRequest { params, meet, code })
}

/// A Data API consumer's (GET) handler: [`data::consumer::handle`]'s future, unboxed.
fn consumer_handler(
    state: Shared,
    req: Request<RequestBody>,
    data: DataRequest,
) -> impl Future<Output = Resp> + Send + 'static {
    let DataRequest { meet, code, .. } = data;
    let hangup = Hangup::of(req.extensions());
    // A consumer forwarded by another node: its receipt is that node's confirmation (§13.3).
    let (ack, body) = if crate::cluster::forward::confirms(req.headers()) {
        (Ack::confirmed_by(req.into_body()), None)
    } else {
        let ack = match req.extensions().get::<Arc<ConnFd>>() {
            Some(conn) => Ack::Tcp {
                conn: conn.clone(),
                h1: req.version() < http::Version::HTTP_2,
            },
            None => Ack::Ended,
        };
        // A body (if a GET has one) stays unread until the answer, then drains
        // (request_body.rs).
        (ack, Some(req.into_body()))
    };
    let consumer = data::consumer::handle(state.data.clone(), ack, hangup, meet);
    consumer.map(move |resp| {
        drop(body);
        held_until_sent(resp, code)
    })
}

/// A Data API producer's (POST/PUT) handler: a stream, or a part of a segmented upload (§4).
fn producer_handler(
    state: Shared,
    req: Request<RequestBody>,
    data: DataRequest,
) -> Result<Boxed, Rejection> {
    let DataRequest { params, meet, code } = data;
    let part = part_of(&params)?;
    let plane = state.data.clone();
    let (parts, body) = req.into_parts();
    let hangup = Hangup::of(&parts.extensions);
    let handler: Boxed = match part {
        Some(part) => Box::pin(data::segmented::handle(
            plane,
            parts.headers,
            body,
            hangup,
            meet,
            part,
        )),
        None => Box::pin(data::stream::handle(
            plane,
            parts.version,
            parts.headers,
            body,
            hangup,
            meet,
        )),
    };
    Ok(Box::pin(
        handler.map(move |resp| held_until_sent(resp, code)),
    ))
}

/// A Data API DELETE's handler: a segmented upload abandoned (§4), or a producer that
/// withdraws (§3.10).
fn delete_handler(
    state: Shared,
    req: Request<RequestBody>,
    data: DataRequest,
) -> Result<Boxed, Rejection> {
    let DataRequest { params, meet, code } = data;
    // DELETE with `upload=ID` (§4 "Abandoning"): a segmented upload given up
    if let Some(id) = params.get(upload::UPLOAD)? {
        let (plane, id) = (state.data.clone(), id.to_string());
        let abandon = async move { data::segmented::abandon(plane, meet, &id).await };
        return Ok(Box::pin(
            abandon.map(move |resp| held_until_sent(resp, code)),
        ));
    }
    // DELETE (§3.10): a producer that withdraws; its request body, if any, is not read
    let hangup = Hangup::of(req.extensions());
    let withdraw = data::stream::withdraw(state.data.clone(), hangup, meet);
    Ok(Box::pin(
        withdraw.map(move |resp| held_until_sent(resp, code)),
    ))
}

/// `resp` with `hold` kept until its body has been sent or dropped (a code channel request
/// counts until its response has ended, §14.5 rule 1).
pub fn held_until_sent(resp: Resp, hold: Option<crate::crowd::Hold>) -> Resp {
    use http_body_util::BodyExt;
    match hold {
        None => resp,
        Some(hold) => resp.map(|b| {
            b.map_err(move |e| {
                let _hold = &hold;
                e
            })
            .boxed()
        }),
    }
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
    path: String,
    get_or_head: bool,
) -> Resp {
    let path = path.as_str();
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
        "/healthz" => ops::healthz(&state),
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
