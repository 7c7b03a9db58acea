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
}
