//! Reserved paths and stream-path limits (`docs/PROTOCOL.md` §2).
//!
//! A stream path is the request's URL path exactly as sent (no percent-decoding, no
//! normalisation), at most [`MAX_PATH_BYTES`] bytes; the query string is not part of it.

/// Longest stream path the relay accepts, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Paths that are never stream paths (exact match).
pub const RESERVED_PATHS: &[&str] = &[
    "/",
    "/help",
    "/version",
    "/healthz",
    "/metrics",
    "/favicon.ico",
    "/robots.txt",
    "/assets",
    "/connect",
    "/api",
];

/// Path prefixes that are never stream paths (the relay's own trees).
pub const RESERVED_PREFIXES: &[&str] = &["/assets/", "/connect/", "/api/"];

/// Prefix of the Connect API (§5): `/connect/v0/{path}`.
pub const CONNECT_PREFIX: &str = "/connect/v0/";

/// Path of the token-creation endpoint (§6).
pub const ACCESS_TOKEN_CREATE: &str = "/api/v0/accesstoken.create";

/// Root of the short-code namespace (§14): the channels' pipes `/code/v1/N/{a,b,c}` and the
/// data paths `/code/v1/x/{32 hex}`; a `code` token covers this subtree only (§6).
pub const CODE_NAMESPACE: &str = "/code/v1";

/// Highest code channel number (§14.1): channels are 1 to this.
pub const CODE_CHANNEL_MAX: u16 = 9999;

/// The pipe of a code channel that carries the sender's first message (§14.2, §14.5 rule 2).
pub const CODE_FIRST_PIPE: char = 'a';

/// The stream path of pipe `pipe` (`a`, `b` or `c`) of code channel `channel` (§14.2).
pub fn code_pipe_path(channel: u16, pipe: char) -> String {
    format!("{CODE_NAMESPACE}/{channel}/{pipe}")
}

/// The channel and pipe of a code channel's stream path (§14.5): `/code/v1/N/a`, `/b` or `/c`
/// with N in 1–[`CODE_CHANNEL_MAX`] written as §14.1 does (no leading zero). `None` for any
/// other path (the data paths `/code/v1/x/...` included).
pub fn code_channel(path: &str) -> Option<(u16, char)> {
    let rest = path.strip_prefix(CODE_NAMESPACE)?.strip_prefix('/')?;
    let (n, pipe) = rest.split_once('/')?;
    let pipe = match pipe {
        "a" => 'a',
        "b" => 'b',
        "c" => 'c',
        _ => return None,
    };
    let canonical = !n.is_empty() && n.len() <= 4 && n.bytes().all(|b| b.is_ascii_digit());
    if !canonical || n.starts_with('0') {
        return None;
    }
    let channel = n.parse::<u16>().ok()?;
    (1..=CODE_CHANNEL_MAX)
        .contains(&channel)
        .then_some((channel, pipe))
}

/// True if `path` can't be used as a stream path.
pub fn is_reserved(path: &str) -> bool {
    RESERVED_PATHS.contains(&path) || RESERVED_PREFIXES.iter().any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved() {
        for p in [
            "/",
            "/help",
            "/assets/app.js",
            "/connect/v0/x",
            "/api/v0/accesstoken.create",
        ] {
            assert!(is_reserved(p), "{p}");
        }
        for p in ["/helpme", "/a", "/assetsx", "/help/"] {
            assert!(!is_reserved(p), "{p}");
        }
    }

    #[test]
    fn code_channels() {
        assert_eq!(code_channel("/code/v1/7/a"), Some((7, 'a')));
        assert_eq!(code_channel("/code/v1/9999/c"), Some((9999, 'c')));
        assert_eq!(code_pipe_path(42, 'b'), "/code/v1/42/b");
        assert_eq!(code_channel(&code_pipe_path(42, 'b')), Some((42, 'b')));
        for p in [
            "/code/v1/0/a",
            "/code/v1/07/a",
            "/code/v1/10000/a",
            "/code/v1/7/d",
            "/code/v1/7/a/",
            "/code/v1/7",
            "/code/v1/x/0123456789abcdef0123456789abcdef",
            "/code/v2/7/a",
            "/code/v17/a",
            "/code/v1//a",
            "/code/v1/+7/a",
        ] {
            assert_eq!(code_channel(p), None, "{p}");
        }
    }
}
