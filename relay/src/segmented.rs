//! Segmented upload (`docs/PROTOCOL.md` §4). Filled in by a later step.

/// Uploads in progress, by id.
#[derive(Default)]
pub struct Uploads {}

use http::{Request, StatusCode};
use hyper::body::Incoming;

use crate::respond::{text, Resp};
use crate::router::Params;
use crate::state::Shared;

/// One part request (placeholder until the segmented-upload step lands).
pub async fn handle(
    _state: Shared,
    _req: Request<Incoming>,
    _path: String,
    _n: usize,
    _params: Params,
) -> Resp {
    text(
        StatusCode::NOT_IMPLEMENTED,
        "[ERROR] Segmented upload is not implemented yet.\n",
    )
}
