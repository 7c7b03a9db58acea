//! Static files (`docs/PROTOCOL.md` §2): `/` → `<www>/index.html`, `/assets/pkg/...` →
//! `<sdk-dir>/...`, `/assets/...` → `<www>/...`. No directory traversal, no listings.

use std::path::{Path, PathBuf};

use http::header::{self, HeaderValue};
use http::Response;
use percent_encoding::percent_decode_str;

use crate::respond::{empty, full, rejection, Resp};
use crate::state::Shared;

/// MIME type by file extension.
pub fn mime(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "txt" | "md" | "ts" => "text/plain; charset=utf-8",
        "webmanifest" => "application/manifest+json",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Where the demo (`name` = `www`) or the built SDK (`name` = `pkg`) is when no flag says:
/// `./name` in the working directory, else `name` in the project the binary runs from
/// (`target/release/httpipe-relay` → `../../name`; test binaries sit one level deeper), else the
/// project the relay was compiled in. For `www` the directory must hold an `index.html`.
pub fn find_demo(name: &str) -> Option<PathBuf> {
    let usable = |d: &Path| {
        if name == "www" {
            d.join("index.html").is_file()
        } else {
            d.is_dir()
        }
    };
    let mut candidates = vec![PathBuf::from(name)];
    if let Ok(exe) = std::env::current_exe() {
        // the binary's directory and up to three levels above it
        candidates.extend(exe.ancestors().skip(1).take(4).map(|d| d.join(name)));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name));
    candidates.into_iter().find(|d| usable(d))
}

/// Maps a URL path to a file, or `None` if it isn't a static path or tries to escape.
pub fn resolve(state: &Shared, url_path: &str) -> Option<PathBuf> {
    if url_path == "/" {
        return Some(state.config.www.as_ref()?.join("index.html"));
    }
    let (root, rest) = if let Some(rest) = url_path.strip_prefix("/assets/pkg/") {
        (state.config.sdk_dir.as_ref()?, rest)
    } else {
        (
            state.config.www.as_ref()?,
            url_path.strip_prefix("/assets/")?,
        )
    };
    let decoded = percent_decode_str(rest).decode_utf8().ok()?;
    let mut path = root.clone();
    for seg in decoded.split('/') {
        if seg.is_empty()
            || seg == "."
            || seg == ".."
            || seg.contains(['\\', '\0'])
            || seg.contains(':')
        {
            return None;
        }
        path.push(seg);
    }
    Some(path)
}

/// Serves `url_path` (GET or HEAD).
pub async fn serve(state: &Shared, url_path: &str, head: bool) -> Resp {
    let not_found = || rejection(&httpipe::protocol::control::Rejection::NotFound);
    let Some(path) = resolve(state, url_path) else {
        return not_found();
    };
    match tokio::fs::metadata(&path).await {
        Ok(m) if m.is_file() => {}
        _ => return not_found(),
    }
    let bytes = match tokio::fs::read(&path).await {
        Ok(b) => b,
        Err(_) => return not_found(),
    };
    let len = bytes.len();
    let mut r = Response::new(if head { empty() } else { full(bytes) });
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime(&path)));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}
