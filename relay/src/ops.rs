//! Operations endpoints (`docs/PROTOCOL.md` §2, §9): `/help`, `/version`, `/healthz`,
//! `/metrics`, `/favicon.ico`, `/robots.txt`.

use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode, Uri};

use crate::respond::{empty, text, Resp};
use crate::state::{ConnInfo, Shared};

/// `httpipe-relay <version>\n`.
pub fn version() -> Resp {
    text(
        StatusCode::OK,
        format!("httpipe-relay {}\n", env!("CARGO_PKG_VERSION")),
    )
}

/// `ok\n`.
pub fn healthz() -> Resp {
    text(StatusCode::OK, "ok\n")
}

/// Prometheus text format.
pub fn metrics(state: &Shared) -> Resp {
    let mut r = text(
        StatusCode::OK,
        state.metrics.render(state.data.hub.counts()),
    );
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// 204 for `/favicon.ico`.
pub fn no_content() -> Resp {
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

/// Plain-text usage with curl recipes for this relay's URL (from Host and scheme).
pub fn help(state: &Shared, headers: &HeaderMap, uri: &Uri, conn: Option<&ConnInfo>) -> Resp {
    let base = state.base_url(headers, uri, conn);
    let auth = if state.auth.is_some() {
        "\nThis relay requires access tokens: add  -H \"Authorization: Bearer $TOKEN\"  (or\n\
         ?accesstoken=$TOKEN) to every command. Mint one where the relay's key file is (the same\n\
         file as the relay's --auth-key-file, or HTTPIPE_AUTH_KEY set):\n\
         \x20 httpipe-relay token --auth-key-file FILE --path /mypath --mode write --ttl 1h\n"
    } else {
        ""
    };
    let body = format!(
        "httpipe-relay {version}: HTTP byte pipes. Nothing is stored: a producer's upload streams\n\
         to the consumer(s) of the same path; whoever comes first waits.\n{auth}\n\
         Send (producer):\n\
         \x20 echo 'hello, world' | curl -T - {base}/mypath\n\
         \x20 curl -T myfile {base}/mypath\n\
         \x20 seq 1000 | curl -T - {base}/mypath\n\n\
         Receive (consumer):\n\
         \x20 curl {base}/mypath\n\
         \x20 curl {base}/mypath > myfile\n\n\
         Several consumers (all get the same bytes; everyone uses the same n):\n\
         \x20 curl -T myfile '{base}/mypath?n=3'\n\
         \x20 curl '{base}/mypath?n=3'\n\n\
         Send a file with a name (multipart, first part only):\n\
         \x20 curl -F myfile=@myfile {base}/mypath\n\n\
         Wait for a peer first (Connect API), then transfer:\n\
         \x20 curl '{base}/connect/v0/mypath?mode=await-reader'   # producer: prints the data URL\n\
         \x20 curl -L '{base}/connect/v0/mypath?mode=await-writer&redirect=true'   # consumer\n\n\
         The producer's response is a status log ending in [STATE:TRANSFER_SUCCESSFUL].\n\
         Protocol: docs/PROTOCOL.md. Health: {base}/healthz  Metrics: {base}/metrics\n",
        version = env!("CARGO_PKG_VERSION"),
    );
    text(StatusCode::OK, body)
}
