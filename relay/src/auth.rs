//! Access control (`docs/PROTOCOL.md` §6): open mode by default; in auth mode every Data and
//! Connect request needs a token granting its mode on its path.

use std::time::{SystemTime, UNIX_EPOCH};

use http::{header, HeaderMap, StatusCode, Uri};
use httpipe::protocol::control::{FORBIDDEN_PREFIX, UNAUTHORIZED_PREFIX};
use httpipe::protocol::query;
use httpipe::protocol::token::{self, Claims, Mode};
use subtle::ConstantTimeEq;

use crate::respond::{text, Resp};

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

    /// Mints a token with the first key.
    pub fn mint(&self, claims: &Claims) -> String {
        token::sign(&self.keys[0], claims)
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
    let q = uri.query()?;
    form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == query::ACCESS_TOKEN)
        .map(|(_, v)| v.into_owned())
}

/// `POST /api/v0/accesstoken.create` (§6), authenticated with an admin key
/// (`Authorization: Bearer <key>`). Placeholder until the tokens step lands.
pub async fn create_endpoint(
    _state: crate::state::Shared,
    _req: http::Request<hyper::body::Incoming>,
) -> Resp {
    text(
        StatusCode::NOT_IMPLEMENTED,
        "[ERROR] Not implemented yet.\n",
    )
}
