//! The consumer side of a transfer (`docs/PROTOCOL.md` §3.1, §3.3, §3.6).

use http::Response;
use http_body_util::BodyExt;
use tokio::sync::oneshot;

use crate::hangup::Hangup;
use crate::respond::{rejection, Resp};
use crate::state::Shared;

/// Registers a consumer and waits (no response yet) until the transfer starts. If the request
/// goes away meanwhile, this future is dropped and the registration with it; if the peer hangs
/// up unnoticed by hyper (pipelined bytes behind the request), `hangup` ends it (§3.6).
pub async fn handle(state: Shared, path: String, n: usize, hangup: Hangup) -> Resp {
    loop {
        let (tx, rx) = oneshot::channel();
        let _registered = match state.hub.consumer(&path, n, tx) {
            Ok(w) => w,
            Err(r) => return rejection(&r),
        };
        let started = tokio::select! {
            s = rx => s,
            _ = hangup.hung_up() => return http::Response::new(crate::respond::empty()), // never sent: the peer is gone
        };
        match started {
            Ok(start) => {
                let mut resp = Response::new(start.body.boxed());
                *resp.headers_mut() = start.headers;
                return resp;
            }
            // The matched producer vanished before sending anything: wait for the next one.
            Err(_) => continue,
        }
    }
}
