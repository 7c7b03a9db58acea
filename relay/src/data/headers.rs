//! Headers a consumer gets (`docs/PROTOCOL.md` §3.3).

use http::header::{self, HeaderMap, HeaderValue};

/// Forwarded from the producer: `Content-Type` (made safe by [`consumer_content_type`]),
/// `Content-Length` (if `with_length`), `Content-Disposition`, every `X-Piping`, in order.
pub fn forwarded(from: &HeaderMap, with_length: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    if let Some(ct) = consumer_content_type(from) {
        out.insert(header::CONTENT_TYPE, ct);
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

/// What consumers get for unparsable or listed content types (§3.3).
const OCTET_STREAM: &str = "application/octet-stream";

/// The consumers' `Content-Type` for the producer's (§3.3): none for none; the producer's value
/// unchanged if it is exactly one media type (RFC 9110 §8.3.1) a browser won't render as a
/// document with markup; `text/plain` (keeping `charset`) for one it would (HTML, XML, SVG,
/// ...); `application/octet-stream` for anything else (a list such as `text/plain,text/html`,
/// two `Content-Type` fields, anything not in the grammar), which browsers download.
pub fn consumer_content_type(from: &HeaderMap) -> Option<HeaderValue> {
    let mut all = from.get_all(header::CONTENT_TYPE).iter();
    let first = all.next()?;
    if all.next().is_some() {
        return Some(HeaderValue::from_static(OCTET_STREAM));
    }
    Some(safe_content_type(first))
}

/// One `Content-Type` value made safe to serve on the relay's origin (see
/// [`consumer_content_type`]).
pub fn safe_content_type(ct: &HeaderValue) -> HeaderValue {
    let Some(mt) = MediaType::parse(ct.as_bytes()) else {
        return HeaderValue::from_static(OCTET_STREAM);
    };
    if !mt.is_active() {
        return ct.clone();
    }
    match mt.charset {
        Some(cs) => HeaderValue::from_str(&format!("text/plain; charset={cs}"))
            .unwrap_or(HeaderValue::from_static("text/plain")),
        None => HeaderValue::from_static("text/plain"),
    }
}

/// A `Content-Type` value that matches RFC 9110's grammar exactly (§8.3.1 `media-type`, §5.6.6
/// `parameters`, §5.6.2 `token`, §5.6.4 `quoted-string`): one `type "/" subtype` and
/// `*( OWS ";" OWS [ parameter ] )`, with `parameter = token "=" ( token / quoted-string )`.
#[derive(Debug, PartialEq, Eq)]
struct MediaType {
    /// Lowercased.
    ty: String,
    /// Lowercased.
    subtype: String,
    /// The first `charset` parameter's value if it is (or is quoted around) a token.
    charset: Option<String>,
}

impl MediaType {
    fn parse(v: &[u8]) -> Option<MediaType> {
        // A field value's own leading and trailing whitespace isn't part of it (RFC 9110 §5.5).
        let v = trim_ows(v);
        let mut i = 0;
        let ty = token(v, &mut i)?;
        if v.get(i) != Some(&b'/') {
            return None;
        }
        i += 1;
        let subtype = token(v, &mut i)?;
        let mut charset = None;
        loop {
            skip_ows(v, &mut i);
            match v.get(i) {
                None => break,
                Some(b';') => i += 1,
                Some(_) => return None,
            }
            skip_ows(v, &mut i);
            if matches!(v.get(i), None | Some(b';')) {
                continue; // an empty parameter (RFC 9110 §5.6.6 allows them)
            }
            let name = token(v, &mut i)?;
            if v.get(i) != Some(&b'=') {
                return None;
            }
            i += 1;
            let value = if v.get(i) == Some(&b'"') {
                quoted_string(v, &mut i)?
            } else {
                Some(token(v, &mut i)?.to_string())
            };
            if charset.is_none() && name.eq_ignore_ascii_case("charset") {
                charset = Some(value);
            }
        }
        Some(MediaType {
            ty: ty.to_ascii_lowercase(),
            subtype: subtype.to_ascii_lowercase(),
            charset: charset.flatten(),
        })
    }

    /// A type a browser renders as a document that can hold markup, script or links, or
    /// whose parts it renders by their own types: HTML, XHTML, SVG and every other XML
    /// (`*/xml`, `*/*+xml`, `*/xml-*`, XSL(T) style sheets) and `multipart/x-mixed-replace`.
    fn is_active(&self) -> bool {
        let s = self.subtype.as_str();
        matches!(s, "html" | "xhtml" | "xml" | "xsl" | "xslt")
            || s.ends_with("+xml")
            || s.starts_with("xml-")
            || (self.ty == "multipart" && s == "x-mixed-replace")
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `token = 1*tchar`, read from `v[*i..]`.
fn token<'a>(v: &'a [u8], i: &mut usize) -> Option<&'a str> {
    let start = *i;
    while v.get(*i).copied().is_some_and(is_tchar) {
        *i += 1;
    }
    if *i == start {
        return None;
    }
    std::str::from_utf8(&v[start..*i]).ok()
}

/// A `quoted-string` at `v[*i]` (`"`); `Some(Some(token))` if its content is a plain token,
/// `Some(None)` if it is valid but something else, `None` if it isn't a quoted-string.
fn quoted_string(v: &[u8], i: &mut usize) -> Option<Option<String>> {
    *i += 1; // the opening quote
    let mut content = Vec::new();
    loop {
        let b = *v.get(*i)?;
        *i += 1;
        match b {
            b'"' => break,
            b'\\' => {
                let q = *v.get(*i)?;
                if !(q == b'\t' || q == b' ' || q.is_ascii_graphic() || q >= 0x80) {
                    return None;
                }
                content.push(q);
                *i += 1;
            }
            b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff => content.push(b),
            _ => return None,
        }
    }
    let plain = !content.is_empty() && content.iter().copied().all(is_tchar);
    Some(plain.then(|| String::from_utf8_lossy(&content).into_owned()))
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn skip_ows(v: &[u8], i: &mut usize) {
    while v.get(*i).copied().is_some_and(is_ows) {
        *i += 1;
    }
}

fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !is_ows(*b)).unwrap_or(v.len());
    let end = v.iter().rposition(|b| !is_ows(*b)).map_or(start, |e| e + 1);
    &v[start..end]
}

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

    fn safe(v: &[u8]) -> String {
        let v = HeaderValue::from_bytes(v).expect("a valid header value");
        String::from_utf8(safe_content_type(&v).as_bytes().to_vec()).expect("ASCII")
    }

    #[test]
    fn html_becomes_plain() {
        assert_eq!(
            safe(b"text/HTML; charset=utf-8"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(safe(b"image/png"), "image/png");
        assert_eq!(safe(b"image/svg+xml"), "text/plain");
        assert_eq!(
            safe(b" Application/XHTML+xml ;charset=x"),
            "text/plain; charset=x"
        );
        assert_eq!(
            safe(b"text/html;charset=\"UTF-8\""),
            "text/plain; charset=UTF-8"
        );
        // a charset that isn't a token is dropped, other parameters too
        assert_eq!(safe(b"text/html; charset=\"a b\"; x=y"), "text/plain");
        assert_eq!(
            safe(b"text/html; x=y; charset=latin1"),
            "text/plain; charset=latin1"
        );
        assert_eq!(
            safe(b"text/html; charset=a; charset=b"),
            "text/plain; charset=a"
        );
    }

    #[test]
    fn every_markup_type_becomes_plain() {
        for t in [
            "text/html",
            "TEXT/HTML",
            "Text/Html",
            "application/xhtml+xml",
            "image/svg+xml",
            "IMAGE/SVG+XML",
            "text/xml",
            "application/xml",
            "text/xsl",
            "application/xslt+xml",
            "application/rss+xml",
            "application/atom+xml",
            "application/mathml+xml",
            "application/vnd.foo+XML",
            "application/xml-dtd",
            "text/xml-external-parsed-entity",
            "multipart/x-mixed-replace",
            "Multipart/X-Mixed-Replace; boundary=b",
            "text/html;",
            "text/html ; ",
            "\ttext/html\t;\tcharset=utf-8",
        ] {
            let got = safe(t.as_bytes());
            assert!(got.starts_with("text/plain"), "{t:?} → {got:?}");
        }
    }

    #[test]
    fn inert_types_pass_unchanged() {
        for t in [
            "text/plain",
            "text/plain; charset=utf-8",
            "text/plain;charset=utf-8",
            "application/json",
            "application/octet-stream",
            "image/png",
            "video/mp4; codecs=\"avc1.42E01E, mp4a.40.2\"",
            "text/csv; header=present; charset=\"utf-8\"",
            "application/x-httpipe; a=b;;c=d",
        ] {
            assert_eq!(safe(t.as_bytes()), t, "{t:?}");
        }
    }

    #[test]
    fn lists_and_unparsable_become_octet_stream() {
        for t in [
            &b"text/plain,text/html"[..],
            b"text/plain, text/html",
            b"text/plain; charset=utf-8, text/html",
            b"text/plain;charset=\"utf-8\",text/html",
            b"image/png,image/svg+xml",
            b"text/html,text/plain",
            b"text/plain text/html",
            b"text / html",
            b"text/",
            b"/html",
            b"text",
            b"",
            b"   ",
            b"text/plain; charset",
            b"text/plain; charset=",
            b"text/plain; charset = utf-8",
            b"text/plain; =utf-8",
            b"text/plain; charset=\"utf-8",
            b"text/plain; charset=\"utf-8\"x",
            b"text/plain; charset=utf-8\"",
            b"text/pl@in",
            b"text/plain\xff",
            b"t\xe9xt/plain",
            b"text/plain; charset=\"\\",
        ] {
            assert_eq!(safe(t), OCTET_STREAM, "{:?}", String::from_utf8_lossy(t));
        }
    }

    #[test]
    fn two_content_type_fields_are_a_list() {
        let mut h = HeaderMap::new();
        h.append(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(consumer_content_type(&h).unwrap(), "text/plain");
        h.append(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        assert_eq!(consumer_content_type(&h).unwrap(), OCTET_STREAM);
        assert!(consumer_content_type(&HeaderMap::new()).is_none());
    }

    #[test]
    fn grammar_details() {
        let p = |s: &str| MediaType::parse(s.as_bytes());
        let m = p("Text/Plain ;\tCharSet=\"UTF-8\" ; q=\"a\\\"b\"").unwrap();
        assert_eq!((m.ty.as_str(), m.subtype.as_str()), ("text", "plain"));
        assert_eq!(m.charset.as_deref(), Some("UTF-8"));
        assert!(p("a/b; c=\"\"").is_some()); // an empty quoted-string is a value
        assert!(p("a/b;;; ;").is_some());
        assert!(p("a/b; c=d e").is_none());
        assert!(p("a/b; c=\"\x01\"").is_none());
    }
}
