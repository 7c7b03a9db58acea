//! Headers a consumer gets (`docs/PROTOCOL.md` §3.3).

use http::header::{self, HeaderMap, HeaderValue};

/// Forwarded from the producer: `Content-Type` (`text/html`, `application/xhtml+xml` and
/// `image/svg+xml` → `text/plain`, parameters kept),
/// `Content-Length` (if `with_length`), `Content-Disposition`, every `X-Piping`, in order.
pub fn forwarded(from: &HeaderMap, with_length: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    if let Some(ct) = from.get(header::CONTENT_TYPE) {
        out.insert(header::CONTENT_TYPE, safe_content_type(ct));
    }
    if with_length {
        if let Some(len) = from.get(header::CONTENT_LENGTH) {
            out.insert(header::CONTENT_LENGTH, len.clone());
        }
    }
    if let Some(cd) = from.get(header::CONTENT_DISPOSITION) {
        out.insert(header::CONTENT_DISPOSITION, cd.clone());
    }
    for v in from.get_all("x-piping") {
        out.append("x-piping", v.clone());
    }
    out
}

/// `text/html; charset=utf-8` → `text/plain; charset=utf-8` (likewise `application/xhtml+xml`
/// and `image/svg+xml`, which can run script too), so relayed markup never renders on the
/// relay's origin; anything else unchanged.
pub fn safe_content_type(ct: &HeaderValue) -> HeaderValue {
    let Ok(s) = ct.to_str() else {
        return ct.clone();
    };
    let (mime, params) = s.split_once(';').unwrap_or((s, ""));
    let mime = mime.trim();
    if ACTIVE_TYPES.iter().any(|t| mime.eq_ignore_ascii_case(t)) {
        let v = if params.is_empty() {
            "text/plain".to_string()
        } else {
            format!("text/plain;{params}")
        };
        HeaderValue::from_str(&v).unwrap_or(HeaderValue::from_static("text/plain"))
    } else {
        ct.clone()
    }
}

/// Content types a browser renders as a document able to run script.
const ACTIVE_TYPES: [&str; 3] = ["text/html", "application/xhtml+xml", "image/svg+xml"];

/// Adds what every consumer response carries (§3.3). `nosniff` and `CSP: sandbox` keep any
/// relayed document (XML, sniffed HTML, ...) from running script with the relay's origin.
pub fn add_consumer_defaults(h: &mut HeaderMap) {
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert("x-robots-tag", HeaderValue::from_static("none"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Content-Length, Content-Disposition, X-Piping"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_plain() {
        let v = safe_content_type(&HeaderValue::from_static("text/HTML; charset=utf-8"));
        assert_eq!(v, "text/plain; charset=utf-8");
        let v = safe_content_type(&HeaderValue::from_static("image/png"));
        assert_eq!(v, "image/png");
        let v = safe_content_type(&HeaderValue::from_static("image/svg+xml"));
        assert_eq!(v, "text/plain");
        let v = safe_content_type(&HeaderValue::from_static(
            " Application/XHTML+xml ;charset=x",
        ));
        assert_eq!(v, "text/plain;charset=x");
    }
}
