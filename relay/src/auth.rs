//! Access control (`docs/PROTOCOL.md` §6): open mode by default; in auth mode every Data and
//! Connect request needs a token granting its mode on its path.

use std::time::{SystemTime, UNIX_EPOCH};

use http::{header, HeaderMap, StatusCode, Uri};
use httpipe::protocol::control::{FORBIDDEN_PREFIX, UNAUTHORIZED_PREFIX};
use httpipe::protocol::paths::CODE_NAMESPACE;
use httpipe::protocol::query;
use httpipe::protocol::token::{self, Claims, Mode};
use subtle::ConstantTimeEq;

use crate::params::Params;
use crate::respond::{rejection, text, Resp};

/// Auth-mode keys: sign with the first, accept all (rotation).
pub struct Auth {
    keys: Vec<Vec<u8>>,
}

/// Current unix time in seconds.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Parses a key file: one key per non-empty line (surrounding whitespace ignored; lines
/// starting with `#` are comments).
pub fn parse_keys(text: &str) -> Vec<Vec<u8>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.as_bytes().to_vec())
        .collect()
}

impl Auth {
    /// `None` if `keys` is empty (open mode).
    pub fn new(keys: Vec<Vec<u8>>) -> Option<Auth> {
        (!keys.is_empty()).then_some(Auth { keys })
    }

    /// The keys, the signing key first.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// True if `candidate` equals one of the keys (the admin credential of the management
    /// API), compared in constant time.
    pub fn is_admin_key(&self, candidate: &[u8]) -> bool {
        let mut ok = false;
        for k in &self.keys {
            ok |= bool::from(k.as_slice().ct_eq(candidate));
        }
        ok
    }

    /// Checks the request's token for `mode` on `path`.
    pub fn check(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        mode: Mode,
        path: &str,
    ) -> Result<(), Denied> {
        let Some(tok) = request_token(headers, uri) else {
            return Err(Denied::Unauthorized("an access token is required".into()));
        };
        match token::verify(&self.keys, &tok, now()) {
            Err(e) => Err(Denied::Unauthorized(e.to_string())),
            Ok(claims) if claims.grants(mode, path) => Ok(()),
            Ok(_) => Err(Denied::Forbidden(mode)),
        }
    }
}

/// Why [`mint_token`] refused: the caller words it for its surface (flag or form field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MintError {
    /// No key to sign with (open mode).
    NoKey,
    /// No path, or one that doesn't start with '/' (a read or write token).
    Path,
    /// A code token for a path other than the code namespace (§6).
    CodePath,
    /// The mode isn't `read`, `write` or `code`.
    Mode,
    /// The token would be valid for less than a second (ttl < 1 s, or expiry not in the future).
    Expiry,
}

/// Checks a token request and mints the token with the first of `keys` (§6): the one minting
/// function of the relay, used by the `token` subcommand and `POST /api/v0/accesstoken.create`.
/// `mode` is `read`, `write` or `code`; a code token's path is the code namespace (given or
/// not) and recursive; `expires` (unix seconds) must be at least 1 s after `now`.
pub fn mint_token(
    keys: &[Vec<u8>],
    path: Option<&str>,
    mode: &str,
    recursive: bool,
    expires: u64,
    now: u64,
) -> Result<(Claims, String), MintError> {
    let key = keys.first().ok_or(MintError::NoKey)?;
    let mode = Mode::parse(mode).ok_or(MintError::Mode)?;
    let (path, recursive) = match (mode, path) {
        (Mode::Code, None | Some(CODE_NAMESPACE)) => (CODE_NAMESPACE, true),
        (Mode::Code, Some(_)) => return Err(MintError::CodePath),
        (_, Some(p)) if p.starts_with('/') => (p, recursive),
        _ => return Err(MintError::Path),
    };
    if expires < now.saturating_add(1) {
        return Err(MintError::Expiry);
    }
    let claims = Claims {
        path: path.to_string(),
        mode,
        recursive,
        expires,
    };
    let token = token::sign(key, &claims);
    Ok((claims, token))
}

/// A refused request (§6): no or bad token (401), or a token for another mode/path (403).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    Unauthorized(String),
    Forbidden(Mode),
}

impl Denied {
    /// The 401/403 answer.
    pub fn response(&self) -> Resp {
        match self {
            Denied::Unauthorized(why) => {
                let mut r = text(
                    StatusCode::UNAUTHORIZED,
                    format!("{UNAUTHORIZED_PREFIX} {why}.\n"),
                );
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
                r
            }
            Denied::Forbidden(mode) => text(
                StatusCode::FORBIDDEN,
                format!(
                    "{FORBIDDEN_PREFIX} The token does not grant {} access to this path.\n",
                    mode.as_str()
                ),
            ),
        }
    }
}

/// The bearer token (`Authorization: Bearer`) or the `accesstoken` query parameter.
pub fn request_token(headers: &HeaderMap, uri: &Uri) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        if let Some(t) = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
        {
            return Some(t.trim().to_string());
        }
    }
    // Given twice, it is no token (the request is then refused, not guessed).
    Params::parse(uri.query())
        .get(query::ACCESS_TOKEN)
        .ok()
        .flatten()
        .map(str::to_string)
}

/// `POST /api/v0/accesstoken.create` (§6, ZebraStream-compatible form): authenticated with an
/// admin key (`Authorization: Bearer <one of the relay's keys>`); form fields (urlencoded body
/// or query) `path`, `access_mode` = read|write|code, `recursive` = true|false, `expires` = unix
/// seconds (default: in one hour). Answers JSON `{"path", "token", "token_id"}`.
pub async fn create_endpoint(
    auth: Option<&Auth>,
    req: http::Request<crate::request_body::RequestBody>,
) -> Resp {
    use http_body_util::{BodyExt, Limited};
    use httpipe::protocol::control::Rejection;
    if req.method() != http::Method::POST {
        return rejection(&Rejection::UnsupportedMethod(req.method().to_string()));
    }
    let Some(auth) = auth else {
        return rejection(&Rejection::TokensNotNeeded);
    };
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|s| s.trim().as_bytes().to_vec());
    if !bearer.is_some_and(|k| auth.is_admin_key(&k)) {
        return Denied::Unauthorized("the management API needs the admin key".into()).response();
    }
    let mut fields = Params::parse(req.uri().query());
    match Limited::new(req.into_body(), 64 * 1024).collect().await {
        Ok(b) => fields.extend(&b.to_bytes()),
        Err(_) => return rejection(&Rejection::InvalidTokenRequest("Invalid form body.")),
    };
    let invalid = |rule: &'static str| rejection(&Rejection::InvalidTokenRequest(rule));
    let field = |name: &'static str| fields.get(name);
    let Ok(recursive) = fields.flag("recursive") else {
        return invalid("Field \"recursive\" must be true or false.");
    };
    let now = now();
    let expires = match field("expires").map(|e| e.map(|e| e.parse::<u64>())) {
        Ok(None) => now + 3600,
        Ok(Some(Ok(e))) => e,
        _ => return invalid("Field \"expires\" must be unix seconds."),
    };
    let (Ok(path), Ok(mode)) = (field("path"), field("access_mode")) else {
        return invalid("Fields \"path\" and \"access_mode\" may be given once.");
    };
    let mode = mode.unwrap_or("");
    let (claims, token) = match mint_token(auth.keys(), path, mode, recursive, expires, now) {
        Ok(t) => t,
        Err(e) => {
            return invalid(match e {
                MintError::NoKey => "No key to sign with.",
                MintError::Path => "Field \"path\" must be a path starting with '/'.",
                MintError::CodePath => "A code token's path is /code/v1: leave out field \"path\".",
                MintError::Mode => "Field \"access_mode\" must be read, write or code.",
                MintError::Expiry => "Field \"expires\" must be at least 1 s in the future.",
            })
        }
    };
    let token_id = {
        use sha2::{Digest, Sha256};
        hex::encode(&Sha256::digest(token.as_bytes())[..8])
    };
    let json = serde_json::json!({ "path": claims.path, "token": token, "token_id": token_id });
    let mut r = text(StatusCode::OK, format!("{json}\n"));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minting_a_code_token() {
        let keys = [b"k".to_vec()];
        let mint = |path, mode| mint_token(&keys, path, mode, false, 100, 1).map(|(c, _)| c);
        // the code namespace, recursive, with or without the path given
        for path in [None, Some(CODE_NAMESPACE)] {
            let c = mint(path, "code").unwrap();
            assert_eq!(
                (c.path.as_str(), c.mode, c.recursive),
                (CODE_NAMESPACE, Mode::Code, true)
            );
        }
        assert_eq!(mint(Some("/s"), "code").err(), Some(MintError::CodePath));
        // read and write tokens need their path
        assert_eq!(mint(None, "read").err(), Some(MintError::Path));
        assert_eq!(mint(Some("s"), "write").err(), Some(MintError::Path));
        assert_eq!(mint(Some("/s"), "admin").err(), Some(MintError::Mode));
        assert!(mint(Some("/s"), "read").is_ok());
    }
}
