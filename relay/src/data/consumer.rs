//! The consumer side of a transfer (`docs/PROTOCOL.md` §3.1, §3.3, §3.6).

use std::sync::Arc;

use http::Response;
use http_body_util::BodyExt;
use httpipe::protocol::control::Rejection;
use tokio::sync::oneshot;

use super::{Ack, Handoff, Meet, Phase, Plane};
use crate::hangup::Hangup;
use crate::respond::{rejection, Resp};

/// Registers a consumer and waits (no response yet) until the transfer starts. If the request
/// goes away meanwhile, this future is dropped and the registration with it; if the peer hangs
/// up unnoticed by hyper (bytes pipelined behind the request), `hangup` ends it (§3.6); when the
/// relay starts shutting down, a waiting consumer gets 503 at once (§9). With a Data API
/// channel in `meet`, only a producer with the same channel on the path is met (§5.1).
///
/// While it waits it holds a place of its address's waiting peers (§9); on a code channel's
/// pipe `a` it never waits (`meet.producer_first`, §14.5 rule 2).
pub async fn handle(plane: Arc<Plane>, ack: Ack, hangup: Hangup, meet: Meet) -> Resp {
    let _waiting = match meet.wait(&plane) {
        Ok(h) => h,
        Err(r) => return rejection(&r),
    };
    loop {
        let (tx, rx) = oneshot::channel();
        let handoff = Handoff {
            tx,
            ack: ack.clone(),
        };
        let (path, channel) = (&meet.path, meet.channel.as_deref());
        let registered =
            plane
                .hub
                .consumer_with(path, channel, meet.n, handoff, meet.producer_first);
        let _registered = match registered {
            Ok(w) => w,
            Err(r) => return rejection(&r),
        };
        let started = tokio::select! {
            s = rx => s,
            _ = plane.reached(Phase::Draining) => return rejection(&Rejection::ShuttingDown),
            // never sent: the peer is gone (hyper didn't notice: bytes pipelined behind)
            _ = hangup.hung_up() => return rejection(&Rejection::ShuttingDown),
        };
        match started {
            Ok(Ok(start)) => {
                let mut resp = Response::new(start.body.boxed());
                *resp.headers_mut() = start.headers;
                return resp;
            }
            // the producer withdrew (§3.10)
            Ok(Err(r)) => return rejection(&r),
            // The matched producer vanished before sending anything: wait for the next one.
            Err(_) => continue,
        }
    }
}
