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
pub fn healthz(state: &Shared) -> Resp {
    match &state.cluster {
        // a node that can't reach Redis still serves what it holds: healthy (§13.4)
        Some(c) => text(StatusCode::OK, format!("ok\n{}", c.health())),
        None => text(StatusCode::OK, "ok\n"),
    }
}

/// Prometheus text format.
pub fn metrics(state: &Shared) -> Resp {
    let mut r = text(
        StatusCode::OK,
        state.metrics.render(state.data.hub.counts())
            + &state.data.crowd.metrics()
            + &state.data.read_ahead.metrics()
            + &state
                .cluster
                .as_ref()
                .map(|c| c.metrics())
                .unwrap_or_default(),
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

/// Plain-text usage with curl recipes for this relay's URL (from Host and scheme). In auth
/// mode the recipes carry the tokens they need, and say how to mint them with this relay's
/// key file (tested as printed: `relay/tests/ops_static.rs`).
pub fn help(state: &Shared, headers: &HeaderMap, uri: &Uri, conn: Option<&ConnInfo>) -> Resp {
    let base = state.base_url(headers, uri, conn);
    let auth_mode = state.auth.is_some();
    let (w, r) = if auth_mode {
        (
            " -H \"Authorization: Bearer $WRITE_TOKEN\"",
            " -H \"Authorization: Bearer $READ_TOKEN\"",
        )
    } else {
        ("", "")
    };
    let auth = if auth_mode {
        let (key, admin) = match &state.config.auth_key_file {
            Some(f) => {
                let f = shell_word(&f.display().to_string());
                (format!("--auth-key-file {f}"), format!("$(head -1 {f})"))
            }
            None => (
                "--auth-key \"$AUTH_KEY\"".to_string(),
                "$AUTH_KEY".to_string(),
            ),
        };
        let from = if state.config.auth_key_file.is_some() {
            "its key file (the relay's --auth-key-file)"
        } else {
            "its key (AUTH_KEY: the relay's --auth-key or HTTPIPE_AUTH_KEY)"
        };
        format!(
            "\nThis relay requires access tokens: a producer needs a write token, a consumer a read\n\
             token, each for its path (or a parent path, minted with --recursive). Mint them where\n\
             the relay runs, with {from}:\n\
             \x20 WRITE_TOKEN=$(httpipe-relay token {key} --path /mypath --mode write --ttl 1h)\n\
             \x20 READ_TOKEN=$(httpipe-relay token {key} --path /mypath --mode read --ttl 1h)\n\
             (in a checkout of httpipe: npm run -s relay -- token ...), or over HTTP with the key:\n\
             \x20 curl -H \"Authorization: Bearer {admin}\" -d path=/mypath -d access_mode=read {base}/api/v0/accesstoken.create\n\
             Short codes (httpipe send FILE, the demo) need a code token on both sides: it opens\n\
             the code namespace /code/v1 and nothing else (PROTOCOL.md §6, §14):\n\
             \x20 CODE_TOKEN=$(httpipe-relay token {key} --mode code --ttl 1h)\n\
             The commands below send them as -H \"Authorization: Bearer ...\" (?accesstoken=... works too).\n"
        )
    } else {
        String::new()
    };
    let body = format!(
        "httpipe-relay {version}: HTTP byte pipes. Nothing is stored: a producer's upload streams\n\
         to the consumer(s) of the same path; whoever comes first waits.\n{auth}\n\
         Send (producer):\n\
         \x20 echo 'hello, world' | curl -T -{w} {base}/mypath\n\
         \x20 curl -T myfile{w} {base}/mypath\n\
         \x20 seq 1000 | curl -T -{w} {base}/mypath\n\n\
         Receive (consumer):\n\
         \x20 curl{r} {base}/mypath\n\
         \x20 curl{r} {base}/mypath > myfile\n\n\
         Several consumers (all get the same bytes; everyone uses the same n):\n\
         \x20 curl -T myfile{w} '{base}/mypath?n=3'\n\
         \x20 curl{r} '{base}/mypath?n=3'\n\n\
         Send a file with a name (multipart, first part only):\n\
         \x20 curl -F myfile=@myfile{w} {base}/mypath\n\n\
         Wait for a peer first (Connect API), then transfer:\n\
         \x20 curl -T myfile{w} \"$(curl -sSf{w} '{base}/connect/v0/mypath?mode=await-reader')\"   # producer\n\
         \x20 curl -L{r} '{base}/connect/v0/mypath?mode=await-writer&redirect=true'   # consumer\n\n\
         The producer's response is a status log ending in [STATE:TRANSFER_SUCCESSFUL].\n\
         Protocol: docs/PROTOCOL.md. Health: {base}/healthz  Metrics: {base}/metrics\n",
        version = env!("CARGO_PKG_VERSION"),
    );
    text(StatusCode::OK, body)
}

/// `s` as one POSIX shell word: as it is when it needs no quoting, else in single quotes.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
