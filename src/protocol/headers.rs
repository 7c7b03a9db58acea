//! HTTP header names and values the SDK and the relay agree on (`docs/PROTOCOL.md` §3.3, §4,
//! §6, §11).

/// `Authorization: Bearer <token>` carries an access token (§6).
pub const AUTHORIZATION: &str = "Authorization";
/// Forwarded from producer to consumer (§3.3).
pub const CONTENT_TYPE: &str = "Content-Type";
/// Forwarded from producer to consumer (§3.3); file names per RFC 6266.
pub const CONTENT_DISPOSITION: &str = "Content-Disposition";
/// Forwarded from producer to consumer only when the producer sent one (§3.3).
pub const CONTENT_LENGTH: &str = "Content-Length";
/// Forwarded from producer to consumer, every value in order (§3.3).
pub const X_PIPING: &str = "X-Piping";
/// The machine-readable code of a relay refusal (§3.5), e.g. `unknown-upload`; exposed to
/// browsers with `Access-Control-Expose-Headers`.
pub const ERROR_CODE: &str = "X-Httpipe-Error";
/// A Connect caller's hello for its peer (§5.1): request header.
pub const HELLO: &str = "X-Httpipe-Hello";
/// The peer's hello in a Connect answer (§5.1): response header, exposed to browsers.
pub const PEER_HELLO: &str = "X-Httpipe-Peer-Hello";
/// The content type an encrypting producer sends: nothing about the plaintext (§11.1).
pub const OCTET_STREAM: &str = "application/octet-stream";
/// `X-Piping` value prefix carrying the producer's declared plaintext size in bytes:
/// `X-Piping: httpipe-size=N` (§11.1).
pub const SIZE_PREFIX: &str = "httpipe-size=";

/// The `Authorization` value for `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The `X-Piping` value declaring `size` bytes.
pub fn size_value(size: u64) -> String {
    format!("{SIZE_PREFIX}{size}")
}

/// The declared size in an `X-Piping` header value (several values may arrive joined with
/// `", "`, as `Headers.get` does).
pub fn declared_size(x_piping: &str) -> Option<u64> {
    x_piping
        .split(',')
        .find_map(|v| v.trim().strip_prefix(SIZE_PREFIX))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size_value(42), "httpipe-size=42");
        assert_eq!(declared_size("httpipe-size=42"), Some(42));
        assert_eq!(declared_size("one, httpipe-size=7"), Some(7));
        assert_eq!(declared_size("httpipe-size=x"), None);
        assert_eq!(declared_size("other"), None);
        assert_eq!(bearer("t"), "Bearer t");
    }
}
