//! The Connect API (rendezvous, `PROTOCOL.md` §5): wait for the peer, get the data URL.

use wasm_bindgen::prelude::*;

use super::abort::Abort;
use super::error::from_client;
use super::http::{auth_headers, fetch, text, Req};
use super::options::Parsed;
use crate::client::error::{classify_response, ErrorCode};
use crate::client::urls::{parse_connect_body, ConnectMode, RelayBase};

/// `connect({ relay, path, mode, token?, timeout?, signal? }) → Promise<string>`: the data URL
/// once the peer is present. Errors: `CONNECT_TIMEOUT` (408 or the client-side timer),
/// `UNAUTHORIZED`/`FORBIDDEN`, `ABORTED`, `NETWORK`, `RELAY_ERROR`.
#[wasm_bindgen(js_name = connect)]
pub async fn connect_js(options: JsValue) -> Result<JsValue, JsValue> {
    let p = Parsed::from_js(&options)?;
    let mode =
        ConnectMode::parse(p.o.mode.as_deref().unwrap_or("")).map_err(|e| from_client(&e))?;
    let mut abort = Abort::new(p.signal.clone())?;
    let url = rendezvous(&p, &p.relay()?, p.path()?, mode, &mut abort).await?;
    Ok(url.into())
}

/// Waits on the Connect API with the operation's signal; the `timeout` option (seconds) is
/// sent to the relay and also enforced locally a little later.
pub async fn rendezvous(
    p: &Parsed,
    base: &RelayBase,
    path: &str,
    mode: ConnectMode,
    abort: &mut Abort,
) -> Result<String, JsValue> {
    let url = base
        .connect_url(path, mode, p.o.timeout)
        .map_err(|e| from_client(&e))?;
    if let Some(t) = p.o.timeout {
        // The relay answers 408 at `t`; the local timer is the backstop for a relay that doesn't.
        abort.arm_timeout(t + 2.0);
    }
    let what = format!("rendezvous ({}) on {url}", mode.as_str());
    let headers = auth_headers(p.o.token.as_deref());
    let signal = abort.signal();
    let result = async {
        let resp = fetch(Req {
            method: "GET",
            url: &url,
            headers: &headers,
            signal: &signal,
            body: None,
            streaming: false,
        })
        .await
        .map_err(|e| abort.map_error(e, ErrorCode::Network, &what))?;
        let body = text(&resp, 64 * 1024)
            .await
            .map_err(|e| abort.map_error(e, ErrorCode::Network, &what))?;
        if resp.status() != 200 {
            return Err(from_client(&classify_response(resp.status(), &body, &what)));
        }
        parse_connect_body(&body).map_err(|e| from_client(&e))
    }
    .await;
    abort.disarm_timeout();
    result
}
