//! `Content-Disposition` for file names (RFC 6266 with RFC 8187 `filename*`), forwarded by the
//! relay from producer to consumer (`PROTOCOL.md` §3.3).

use super::urls::percent_encode_component;

/// `attachment; filename="ascii fallback"; filename*=UTF-8''percent-encoded`.
pub fn encode(filename: &str) -> String {
    let fallback: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "attachment; filename=\"{fallback}\"; filename*=UTF-8''{}",
        percent_encode_component(filename)
    )
}

/// The file name in a `Content-Disposition` value, preferring `filename*` (UTF-8).
pub fn parse(value: &str) -> Option<String> {
    let mut plain = None;
    for param in split_params(value) {
        let Some((key, val)) = param.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let val = val.trim();
        if key == "filename*" {
            if let Some(rest) = val.split_once('\'').and_then(|(_, r)| r.split_once('\'')) {
                if let Some(decoded) = percent_decode(rest.1) {
                    return Some(decoded);
                }
            }
        } else if key == "filename" {
            plain = Some(unquote(val));
        }
    }
    plain
}

fn split_params(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => {
                out.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&value[start..]);
    out
}

fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => {
            let mut out = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                } else {
                    out.push(c);
                }
            }
            out
        }
        None => v.to_string(),
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_unicode_and_quotes() {
        for name in ["report.csv", "Grüße \"2026\".txt", "a;b=c.bin", "日本.txt"] {
            assert_eq!(parse(&encode(name)).as_deref(), Some(name));
        }
    }

    #[test]
    fn parses_common_forms() {
        assert_eq!(
            parse("attachment; filename=plain.txt").as_deref(),
            Some("plain.txt")
        );
        assert_eq!(
            parse("inline; filename=\"a\\\"b.txt\"").as_deref(),
            Some("a\"b.txt")
        );
        assert_eq!(parse("attachment").as_deref(), None);
        assert_eq!(
            parse("attachment; filename*=UTF-8''%E2%82%AC.txt").as_deref(),
            Some("€.txt")
        );
    }
}
