//! Access tokens (`docs/PROTOCOL.md` §6): `hp1.<base64url JSON claims>.<base64url HMAC-SHA256>`.
//!
//! Claims are `{"p": path, "m": "r"|"w"|"c", "r": recursive, "e": expiry unix seconds}`. The MAC
//! covers the ASCII text `hp1.<claims part>` and is keyed with a relay secret; verification
//! tries every configured key (rotation: sign with the first, accept all) in constant time.
//! Base64url is unpadded (RFC 4648 §5). No clock here: callers pass `now` (unix seconds).

use super::base64::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::paths::CODE_NAMESPACE;

/// Token format tag, the first dot-separated field.
pub const PREFIX: &str = "hp1";

/// What a token lets its bearer do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Consume: Data API `GET`, Connect `mode=await-writer`.
    #[serde(rename = "r")]
    Read,
    /// Produce: Data API `POST`/`PUT`, Connect `mode=await-reader`.
    #[serde(rename = "w")]
    Write,
    /// Short codes (§6, §14): read and write, on the code namespace only
    /// ([`crate::protocol::paths::CODE_NAMESPACE`]). A grant, never what a request needs.
    #[serde(rename = "c")]
    Code,
}

impl Mode {
    /// Parses `read`/`write`/`code` (management API and CLI spelling) or `r`/`w`/`c`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "read" | "r" => Some(Mode::Read),
            "write" | "w" => Some(Mode::Write),
            "code" | "c" => Some(Mode::Code),
            _ => None,
        }
    }

    /// `read`, `write` or `code`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::Code => "code",
        }
    }
}

/// The signed content of a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Stream path (or subtree root when `recursive`), e.g. `/team/reports`.
    #[serde(rename = "p")]
    pub path: String,
    /// Granted mode.
    #[serde(rename = "m")]
    pub mode: Mode,
    /// Whether the token covers the whole subtree under `path` (whole segments only).
    #[serde(rename = "r")]
    pub recursive: bool,
    /// Expiry, unix seconds; the token is invalid at and after this instant.
    #[serde(rename = "e")]
    pub expires: u64,
}

/// Why a token was refused. `Malformed`, `BadSignature` and `Expired` are `401`; a valid token
/// that doesn't [`Claims::grants`] the request is `403` (§6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Not `hp1.<b64>.<b64>`, bad base64 or bad JSON claims.
    Malformed,
    /// The MAC matches none of the keys.
    BadSignature,
    /// `now >= expires`.
    Expired,
}

impl core::fmt::Display for TokenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            TokenError::Malformed => "malformed token",
            TokenError::BadSignature => "invalid token signature",
            TokenError::Expired => "token expired",
        })
    }
}

impl Claims {
    /// True if these claims allow `mode` on stream path `path`: the same path, or, when
    /// recursive, a path below it on a segment boundary (`/a` covers `/a/b`, not `/ab`). A
    /// `code` token grants read and write, and only below the code namespace (§6).
    pub fn grants(&self, mode: Mode, path: &str) -> bool {
        let mode_ok = match self.mode {
            Mode::Code => {
                mode != Mode::Code
                    && path_covered(CODE_NAMESPACE, true, path)
                    && path != CODE_NAMESPACE
            }
            granted => mode == granted,
        };
        mode_ok && path_covered(&self.path, self.recursive, path)
    }
}

/// Scope rule of §6: exact match, or (recursive) prefix on whole segments.
pub fn path_covered(scope: &str, recursive: bool, path: &str) -> bool {
    if path == scope {
        return true;
    }
    if !recursive || !path.starts_with(scope) {
        return false;
    }
    scope.ends_with('/') || path.as_bytes().get(scope.len()) == Some(&b'/')
}

/// HMAC-SHA-256 under `key`: token tags (§6) and delivery-receipt MACs (§12.2).
pub(crate) fn mac(key: &[u8]) -> Hmac<Sha256> {
    // ok: HMAC accepts keys of any length, new_from_slice never fails for it
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length")
}

/// Mints a token for `claims` with `key` (the first of the relay's keys).
pub fn sign(key: &[u8], claims: &Claims) -> String {
    // ok: serialising a struct of strings, bools and integers can't fail
    let json = serde_json::to_vec(claims).expect("claims serialise");
    let signed = format!("{PREFIX}.{}", URL_SAFE_NO_PAD.encode(json));
    let mut m = mac(key);
    m.update(signed.as_bytes());
    let tag = m.finalize().into_bytes();
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag))
}

/// Verifies `token` against any of `keys` and its expiry against `now` (unix seconds).
/// Returns the claims; the caller then checks [`Claims::grants`].
pub fn verify<K: AsRef<[u8]>>(keys: &[K], token: &str, now: u64) -> Result<Claims, TokenError> {
    let token = token.trim();
    let (signed, tag_b64) = token.rsplit_once('.').ok_or(TokenError::Malformed)?;
    let (prefix, claims_b64) = signed.split_once('.').ok_or(TokenError::Malformed)?;
    if prefix != PREFIX || claims_b64.contains('.') {
        return Err(TokenError::Malformed);
    }
    let tag = URL_SAFE_NO_PAD
        .decode(tag_b64)
        .ok_or(TokenError::Malformed)?;
    let mut ok = false;
    for key in keys {
        let mut m = mac(key.as_ref());
        m.update(signed.as_bytes());
        // verify_slice compares in constant time
        ok |= m.verify_slice(&tag).is_ok();
    }
    if !ok {
        return Err(TokenError::BadSignature);
    }
    let json = URL_SAFE_NO_PAD
        .decode(claims_b64)
        .ok_or(TokenError::Malformed)?;
    let claims: Claims = serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)?;
    if now >= claims.expires {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(path: &str, mode: Mode, recursive: bool) -> Claims {
        Claims {
            path: path.into(),
            mode,
            recursive,
            expires: 2_000,
        }
    }

    #[test]
    fn round_trip_and_rotation() {
        let c = claims("/a", Mode::Read, false);
        let t = sign(b"k1", &c);
        assert!(t.starts_with("hp1."));
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(verify(&[b"k1"], &t, 1_000), Ok(c.clone()));
        assert_eq!(verify(&[&b"k0"[..], &b"k1"[..]], &t, 1_000), Ok(c));
        assert_eq!(verify(&[b"k2"], &t, 1_000), Err(TokenError::BadSignature));
    }

    #[test]
    fn expiry() {
        let t = sign(b"k", &claims("/a", Mode::Write, false));
        assert_eq!(verify(&[b"k"], &t, 2_000), Err(TokenError::Expired));
        assert!(verify(&[b"k"], &t, 1_999).is_ok());
    }

    #[test]
    fn tampering_and_garbage() {
        let t = sign(b"k", &claims("/a", Mode::Read, false));
        let (_, rest) = t.split_once('.').unwrap();
        let (_, tag) = rest.split_once('.').unwrap();
        let forged_claims = URL_SAFE_NO_PAD.encode(br#"{"p":"/","m":"w","r":true,"e":9999}"#);
        let forged = format!("hp1.{forged_claims}.{tag}");
        assert_eq!(
            verify(&[b"k"], &forged, 1_000),
            Err(TokenError::BadSignature)
        );
        for bad in [
            "",
            "hp1",
            "hp1..",
            "hp2.e30.AAAA",
            "hp1.e30",
            "a.b.c.d",
            "hp1.!!.@@",
            "hp1.e30.AAAA",
        ] {
            assert!(verify(&[b"k"], bad, 1_000).is_err(), "{bad}");
        }
    }

    #[test]
    fn scope() {
        let c = claims("/a", Mode::Read, true);
        assert!(c.grants(Mode::Read, "/a"));
        assert!(c.grants(Mode::Read, "/a/b"));
        assert!(!c.grants(Mode::Read, "/ab"));
        assert!(!c.grants(Mode::Write, "/a"));
        let exact = claims("/a", Mode::Write, false);
        assert!(exact.grants(Mode::Write, "/a"));
        assert!(!exact.grants(Mode::Write, "/a/b"));
        let root = claims("/", Mode::Read, true);
        assert!(root.grants(Mode::Read, "/anything/here"));
    }

    #[test]
    fn a_code_token_reads_and_writes_the_code_namespace_only() {
        let code = claims("/code/v1", Mode::Code, true);
        for mode in [Mode::Read, Mode::Write] {
            assert!(code.grants(mode, "/code/v1/7/a"));
            assert!(code.grants(mode, "/code/v1/x/0123456789abcdef0123456789abcdef"));
            for other in ["/code/v1", "/code/v10/7/a", "/code", "/s/x", "/"] {
                assert!(!code.grants(mode, other), "{other}");
            }
        }
        // a code grant whatever its path claims: nothing outside the namespace
        assert!(!claims("/", Mode::Code, true).grants(Mode::Write, "/s/x"));
        assert!(claims("/", Mode::Code, true).grants(Mode::Write, "/code/v1/7/a"));
        // the claim's spelling
        let t = sign(b"k", &code);
        assert_eq!(verify(&[b"k"], &t, 1_000), Ok(code));
        let json = URL_SAFE_NO_PAD
            .decode(t.split('.').nth(1).unwrap())
            .unwrap();
        assert!(String::from_utf8(json).unwrap().contains(r#""m":"c""#));
        assert_eq!(Mode::parse("code"), Some(Mode::Code));
    }
}
