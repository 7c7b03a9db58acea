//! URLs the SDK calls: the Data API (`PROTOCOL.md` §3), the Connect API (§5) and segmented
//! upload parts (§4). Stream paths are sent exactly as given (the relay does not normalise).

use super::error::{Error, ErrorCode};
use crate::protocol::paths::{CONNECT_PREFIX, MAX_PATH_BYTES};
use crate::protocol::{query, upload};
use crate::text::quoted;

/// A relay base URL without a trailing slash, e.g. `https://relay.example` or
/// `http://127.0.0.1:8080/prefix`, and where its Connect API is: `{base}/connect/v0/` unless
/// set apart with [`RelayBase::with_connect_base`] (a ZebraStream-style `--connect-url` on
/// another host; the data URL then comes from the Connect answer, §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayBase(String, Option<String>);

impl RelayBase {
    /// Accepts `http://` and `https://` URLs; drops a trailing `/`, query and fragment.
    pub fn parse(relay: &str) -> Result<Self, Error> {
        let trimmed = relay.trim();
        let lower = trimmed.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "`relay` must be an http:// or https:// URL, got {}",
                    quoted(trimmed)
                ),
            ));
        }
        let cut = trimmed.find(['?', '#']).unwrap_or(trimmed.len());
        let scheme_end = after_scheme(trimmed);
        let rest = trimmed[scheme_end..cut].trim_end_matches('/');
        let base = format!("{}{rest}", &trimmed[..scheme_end]);
        if rest.is_empty() || rest.starts_with('/') {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!("`relay` has no host: {}", quoted(trimmed)),
            ));
        }
        Ok(RelayBase(base, None))
    }

    /// A relay whose Connect API lives at `connect_base` (e.g.
    /// `https://connect.example/v0/`): `{connect_base}{path}?mode=...`. When it ends in
    /// `/connect/v0/` the data base is what comes before; otherwise its origin.
    pub fn from_connect_url(connect_base: &str) -> Result<Self, Error> {
        let trimmed = connect_base.trim();
        let cut = trimmed.find(['?', '#']).unwrap_or(trimmed.len());
        let url = trimmed[..cut].trim_end_matches('/');
        let prefix = CONNECT_PREFIX.trim_end_matches('/');
        let data_base = match url.strip_suffix(prefix) {
            Some(b) => b.to_string(),
            None => origin(url),
        };
        let RelayBase(base, _) = RelayBase::parse(&data_base)?;
        Ok(RelayBase(base, Some(url.to_string())))
    }

    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The Connect API base (without trailing `/`).
    pub fn connect_base(&self) -> String {
        match &self.1 {
            Some(c) => c.clone(),
            None => format!("{}{}", self.0, CONNECT_PREFIX.trim_end_matches('/')),
        }
    }

    /// The Data API URL of a stream path (`/` is added in front when missing).
    pub fn data_url(&self, path: &str) -> Result<String, Error> {
        Ok(format!("{}{}", self.0, stream_path(path)?))
    }

    /// `GET /connect/v0/{path}?mode=...[&timeout=S]` (§5).
    pub fn connect_url(
        &self,
        path: &str,
        mode: ConnectMode,
        timeout_s: Option<f64>,
    ) -> Result<String, Error> {
        // The stream path brings its own leading '/'.
        let mut url = format!(
            "{}{}?{}={}",
            self.connect_base(),
            stream_path(path)?,
            query::MODE,
            mode.as_str()
        );
        if let Some(t) = timeout_s {
            // The relay takes whole seconds; round up so it never gives up early.
            url.push_str(&format!("&{}={}", query::TIMEOUT, t.ceil().max(0.0) as u64));
        }
        Ok(url)
    }

    /// The Connect URL on channel `channel` of a stream path (§5.1): the side room where
    /// the peers of one transfer exchange its receipt (§12).
    pub fn channel_url(
        &self,
        path: &str,
        mode: ConnectMode,
        channel: &str,
        timeout_s: f64,
    ) -> Result<String, Error> {
        let mut url = format!(
            "{}{}?{}={}&{}=",
            self.connect_base(),
            stream_path(path)?,
            query::MODE,
            mode.as_str(),
            query::CHANNEL,
        );
        url.push_str(&percent_encode_component(channel));
        url.push_str(&format!(
            "&{}={}",
            query::TIMEOUT,
            timeout_s.ceil().max(0.0) as u64
        ));
        Ok(url)
    }
}

/// A stream path as sent (PROTOCOL.md §11.6): must not be empty, must not carry a query or
/// fragment, nor anything a URL parser would resolve to another path (dot segments, `\\`,
/// the tabs and line breaks it drops).
pub fn stream_path(path: &str) -> Result<String, Error> {
    if path.is_empty() || path == "/" {
        return Err(Error::new(
            ErrorCode::Unsupported,
            "`path` must name a stream, e.g. \"/team/reports\"",
        ));
    }
    if path.contains(['?', '#']) {
        return Err(Error::new(
            ErrorCode::Unsupported,
            format!("`path` must not contain '?' or '#': {}", quoted(path)),
        ));
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return Err(Error::new(
            ErrorCode::Unsupported,
            format!(
                "`path` must not contain '\\' or control characters: {}",
                quoted(path)
            ),
        ));
    }
    if path.split('/').any(is_dot_segment) {
        return Err(Error::new(
            ErrorCode::Unsupported,
            format!(
                "`path` must not contain '.' or '..' segments (a URL would resolve them to \
                 another path, PROTOCOL.md §11.6): {}",
                quoted(path)
            ),
        ));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(Error::new(
            ErrorCode::Unsupported,
            format!("`path` is longer than the relay's limit of {MAX_PATH_BYTES} bytes"),
        ));
    }
    Ok(if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    })
}

/// `.` or `..`, also percent-encoded (`%2e`): WHATWG URL's single- and double-dot segments.
fn is_dot_segment(segment: &str) -> bool {
    const DOTS: [&str; 6] = [".", "%2e", "..", ".%2e", "%2e.", "%2e%2e"];
    DOTS.iter().any(|d| segment.eq_ignore_ascii_case(d))
}

/// The rendezvous mode (§5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectMode {
    /// Sent by a producer: wait for a consumer.
    AwaitReader,
    /// Sent by a consumer: wait for a producer.
    AwaitWriter,
}

impl ConnectMode {
    /// The `mode` query value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectMode::AwaitReader => query::MODE_AWAIT_READER,
            ConnectMode::AwaitWriter => query::MODE_AWAIT_WRITER,
        }
    }

    /// A `mode` value (`await-reader` / `await-writer`); else `UNSUPPORTED`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            query::MODE_AWAIT_READER => Ok(ConnectMode::AwaitReader),
            query::MODE_AWAIT_WRITER => Ok(ConnectMode::AwaitWriter),
            _ => Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "`mode` must be 'await-reader' or 'await-writer', got {}",
                    quoted(s)
                ),
            )),
        }
    }
}

/// The data URL in a Connect answer body (`https://relay/p\n`).
pub fn parse_connect_body(body: &str) -> Result<String, Error> {
    let url = body.trim();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.to_string())
    } else {
        Err(Error::new(
            ErrorCode::RelayError,
            format!(
                "the Connect API answered without a data URL: {}",
                quoted(&url.chars().take(200).collect::<String>())
            ),
        ))
    }
}

/// The URL of segmented-upload part `k` (§4): `?part=0` starts; later parts carry the upload
/// id; the last one adds `final=1`.
pub fn part_url(data_url: &str, k: u64, upload_id: Option<&str>, last: bool) -> String {
    let sep = if data_url.contains('?') { '&' } else { '?' };
    let id = upload_id.map(percent_encode_component);
    format!(
        "{data_url}{sep}{}",
        upload::part_query(k, id.as_deref(), last)
    )
}

/// Where an absolute URL's authority starts: after `scheme://` (a scheme has no `:`); 0 when
/// there is no `://` right after the first `:`. (Not `str::find("://")`: a substring search
/// costs the wasm module 1 KB gzipped, issue #27.)
fn after_scheme(url: &str) -> usize {
    match url.find(':') {
        Some(i) if url[i..].starts_with("://") => i + 3,
        _ => 0,
    }
}

/// `scheme://host[:port]` of an absolute URL (the key for per-origin transport memory).
pub fn origin(url: &str) -> String {
    let start = after_scheme(url);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    url[..end].to_ascii_lowercase()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_and_paths() {
        let b = RelayBase::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(b.data_url("/a/b").unwrap(), "http://127.0.0.1:8080/a/b");
        assert_eq!(b.data_url("a").unwrap(), "http://127.0.0.1:8080/a");
        assert_eq!(
            RelayBase::parse("https://r.example/x/?q#f")
                .unwrap()
                .as_str(),
            "https://r.example/x"
        );
        assert!(RelayBase::parse("ftp://x").is_err());
        assert!(RelayBase::parse("http://").is_err());
        assert!(b.data_url("").is_err());
        assert!(b.data_url("/a?n=2").is_err());
        assert!(b.data_url(&"/a".repeat(600)).is_err());
    }

    /// A URL parser resolves these to another path: `/../../t/evil` under `/connect/v0` was
    /// the Data API's `/t/evil`, whose producer's body the SDK took for the Connect answer
    /// and sent the stream (and the token) to the URL in it (PROTOCOL.md §11.6).
    #[test]
    fn paths_a_url_would_resolve_elsewhere_are_refused() {
        let b = RelayBase::parse("http://127.0.0.1:8080").unwrap();
        for bad in [
            "/../../t/evil",
            "/%2e%2e/%2e%2e/t/enc",
            "/a/.%2E/b",
            "/a/%2E/b",
            "/a/.",
            "..",
            "/a\\..\\..\\t\\bs",
            "/a/.\t./b",
            "/a\nb",
        ] {
            let e = b.data_url(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unsupported, "{bad:?}");
            let e = b
                .connect_url(bad, ConnectMode::AwaitReader, None)
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::Unsupported, "{bad:?}");
        }
        for good in [
            "/a/..b/c",
            "/a/b.c",
            "/.well/x",
            "/a/%2e%2ex/b",
            "/a/.../b",
            "/ü/日本",
        ] {
            assert!(b.data_url(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn connect_bases_apart_from_the_relay() {
        let b = RelayBase::from_connect_url("http://h:1/connect/v0/").unwrap();
        assert_eq!(b.as_str(), "http://h:1");
        assert_eq!(
            b.connect_url("/p", ConnectMode::AwaitReader, None).unwrap(),
            "http://h:1/connect/v0/p?mode=await-reader"
        );
        let z = RelayBase::from_connect_url("https://connect.example/v0/").unwrap();
        assert_eq!(z.as_str(), "https://connect.example");
        assert_eq!(
            z.connect_url("/a/b", ConnectMode::AwaitWriter, None)
                .unwrap(),
            "https://connect.example/v0/a/b?mode=await-writer"
        );
        assert!(RelayBase::from_connect_url("ftp://x/").is_err());
    }

    #[test]
    fn connect_urls() {
        let b = RelayBase::parse("http://h:1").unwrap();
        assert_eq!(
            b.connect_url("/p", ConnectMode::AwaitReader, None).unwrap(),
            "http://h:1/connect/v0/p?mode=await-reader"
        );
        assert_eq!(
            b.connect_url("/p", ConnectMode::AwaitWriter, Some(1.2))
                .unwrap(),
            "http://h:1/connect/v0/p?mode=await-writer&timeout=2"
        );
        assert_eq!(
            parse_connect_body("http://h:1/p\n").unwrap(),
            "http://h:1/p"
        );
        assert!(parse_connect_body("[ERROR] x").is_err());
        assert_eq!(
            ConnectMode::parse("await-writer").unwrap(),
            ConnectMode::AwaitWriter
        );
        assert!(ConnectMode::parse("x").is_err());
    }

    #[test]
    fn part_urls_and_origins() {
        assert_eq!(part_url("http://h/p", 0, None, false), "http://h/p?part=0");
        assert_eq!(
            part_url("http://h/p", 3, Some("a b"), true),
            "http://h/p?part=3&upload=a%20b&final=1"
        );
        assert_eq!(
            part_url("http://h/p?accesstoken=t", 1, Some("i"), false),
            "http://h/p?accesstoken=t&part=1&upload=i"
        );
        assert_eq!(
            origin("HTTPS://Relay.Example:8443/a/b?c"),
            "https://relay.example:8443"
        );
        assert_eq!(origin("http://h"), "http://h");
    }
}
