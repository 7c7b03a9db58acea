//! The consumer side of a transfer (`docs/PROTOCOL.md` §3.1, §3.3, §3.6).

use http::Response;
use http_body_util::BodyExt;
use tokio::sync::oneshot;

use crate::respond::{rejection, Resp};
use crate::state::Shared;

/// Registers a consumer and waits (no response yet) until the transfer starts. If the request
/// goes away meanwhile, this future is dropped and the registration with it (§3.6).
pub async fn handle(state: Shared, path: String, n: usize) -> Resp {
    loop {
        let (tx, rx) = oneshot::channel();
        let _registered = match state.hub.consumer(&path, n, tx) {
            Ok(w) => w,
            Err(r) => return rejection(&r),
        };
        match rx.await {
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
