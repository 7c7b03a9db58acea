//! `Client::connect` (the mirror of `wasm/connect.rs`): a wait on the Connect API
//! (`PROTOCOL.md` §5, §11.2), its calls as the core's [`Rendezvous`] says.

use std::time::Duration;

use super::http::text_request;
use super::stop::Stop;
use super::{ConnectMode, Error, Target};
use crate::client::rendezvous::Rendezvous;

/// Waits until the peer is present; the data URL.
pub(crate) async fn connect(
    http_client: &reqwest::Client,
    target: &Target,
    mode: ConnectMode,
    timeout: Option<Duration>,
) -> Result<String, Error> {
    let base = target.relay_base()?;
    let mut r = Rendezvous::new(
        &base,
        &target.path,
        mode,
        timeout.map(|d| d.as_secs_f64()),
        target.token.as_deref(),
    )?;
    let stop = Stop::new();
    // one call after another while the core's `Rendezvous` says the wait goes on
    loop {
        match text_request(http_client, r.request(), None, &stop).await {
            Ok(a) => {
                if let Some(url) = r.on_response(a.status, &a.body)? {
                    return Ok(url);
                }
            }
            Err(f) => return Err(r.on_failure(f)),
        }
    }
}
