//! `connect`: the Connect API on its own (rendezvous, `PROTOCOL.md` §5, §11.2), driving the
//! core's `Rendezvous`.

use wasm_bindgen::prelude::*;

use super::error::into_js;
use super::http::exchange;
use super::options::Parsed;
use super::stop::Abort;
use crate::client::error::Error;
use crate::client::rendezvous::Rendezvous;
use crate::client::urls::ConnectMode;

/// `connect({ relay, path, mode, token?, timeout?, signal? }) → Promise<string>`: the data URL
/// once the peer is present. Errors: `CONNECT_TIMEOUT` (408 or the client-side timer),
/// `UNAUTHORIZED`/`FORBIDDEN`, `ABORTED`, `NETWORK`, `RELAY_ERROR`.
#[wasm_bindgen(js_name = connect)]
pub async fn connect_js(options: JsValue) -> Result<JsValue, JsValue> {
    connect_inner(&options)
        .await
        .map(JsValue::from)
        .map_err(into_js)
}

async fn connect_inner(options: &JsValue) -> Result<String, Error> {
    let p = Parsed::from_js(options)?;
    let mode = ConnectMode::parse(p.o.mode.as_deref().unwrap_or(""))?;
    let mut abort = Abort::new(p.signal.clone())?;
    let mut r = Rendezvous::new(
        &p.relay()?,
        p.path()?,
        mode,
        p.o.timeout,
        p.o.token.as_deref(),
    )?;
    // one call after another while the core's `Rendezvous` says the wait goes on
    loop {
        match exchange(r.request(), &mut abort, None).await {
            Ok((status, _, body)) => {
                if let Some(url) = r.on_response(status, &body)? {
                    return Ok(url);
                }
            }
            Err(f) => return Err(r.on_failure(f)),
        }
    }
}
