//! HTTP header names and values the SDK and the relay agree on (`docs/PROTOCOL.md` §3.3, §4,
//! §5.1, §6, §11).

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
/// A Connect caller's hello (§5.1): at most [`MAX_HELLO_BYTES`] of visible ASCII and spaces
/// (see [`is_valid_hello`]); handed to the Connect caller it pairs with.
pub const HELLO: &str = "X-Httpipe-Hello";
/// The other Connect caller's hello in a Connect answer (§5.1); absent when the other sent
/// none or the caller was released by a Data API peer. Exposed to browsers with
/// `Access-Control-Expose-Headers`.
pub const PEER_HELLO: &str = "X-Httpipe-Peer-Hello";
/// The longest [`HELLO`] value, in bytes (§5.1).
pub const MAX_HELLO_BYTES: usize = 1024;
/// The content type an encrypting producer sends: nothing about the plaintext (§11.1).
pub const OCTET_STREAM: &str = "application/octet-stream";
/// `X-Piping` value prefix carrying the producer's declared plaintext size in bytes:
/// `X-Piping: httpipe-size=N` (§11.1).
pub const SIZE_PREFIX: &str = "httpipe-size=";

/// `X-Piping` value prefix marking a resumed upload that starts at wire byte N:
/// `X-Piping: httpipe-resume=N` (§12.3).
pub const RESUME_PREFIX: &str = "httpipe-resume=";

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

/// The `X-Piping` value of a resumed upload starting at wire byte `offset` (§12.3).
pub fn resume_value(offset: u64) -> String {
    format!("{RESUME_PREFIX}{offset}")
}

/// The resume offset in an `X-Piping` header value (values may arrive joined with `", "`).
pub fn resumed_at(x_piping: &str) -> Option<u64> {
    x_piping
        .split(',')
        .find_map(|v| v.trim().strip_prefix(RESUME_PREFIX))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
}

/// True if `value` is a valid [`HELLO`] (§5.1): at most [`MAX_HELLO_BYTES`] bytes, each a
/// visible ASCII character (0x21-0x7E) or a space. The empty value is valid.
pub fn is_valid_hello(value: &[u8]) -> bool {
    value.len() <= MAX_HELLO_BYTES && value.iter().all(|&b| b == b' ' || b.is_ascii_graphic())
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
        assert_eq!(resumed_at(&resume_value(65_552)), Some(65_552));
        assert_eq!(resumed_at("httpipe-size=3, httpipe-resume=9"), Some(9));
        for bad in [
            "httpipe-resume=",
            "httpipe-resume=-1",
            "httpipe-resume=1x",
            "other",
        ] {
            assert_eq!(resumed_at(bad), None, "{bad}");
        }
    }

    #[test]
    fn hellos() {
        assert!(is_valid_hello(b"httpipe=1; transfer=abc_-; receipt"));
        assert!(is_valid_hello(b""));
        assert!(is_valid_hello(&[b'~'; MAX_HELLO_BYTES]));
        assert!(!is_valid_hello(&[b'a'; MAX_HELLO_BYTES + 1]));
        for bad in [&b"tab\there"[..], b"nl\n", b"\x7f", "caf\u{e9}".as_bytes()] {
            assert!(!is_valid_hello(bad), "{bad:?}");
        }
    }
}
