//! How messages write a value the caller gave: a string as a JSON string literal (`"a\"b"`),
//! the quoting a JavaScript developer reads. Not `{:?}`: Rust's `Debug` escaping brings
//! core's Unicode tables and `char::escape_debug` into the wasm module (issue #27).

/// `s` as a JSON string literal (RFC 8259 §7): `"` and `\` escaped, the control characters
/// as `\b \t \n \f \r` or `\u00XX`, everything else as it is. Ours: a JSON library's
/// writer was 5 KB of the wasm module for this and the offer (issue #27); the tests check it
/// against miniserde's.
pub(crate) fn quoted(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{8}' => "\\b",
            '\t' => "\\t",
            '\n' => "\\n",
            '\u{c}' => "\\f",
            '\r' => "\\r",
            c if c < ' ' => {
                let b = c as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX[b >> 4]));
                out.push(char::from(HEX[b & 15]));
                continue;
            }
            c => {
                out.push(c);
                continue;
            }
        };
        out.push_str(escaped);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn strings_are_quoted_as_json() {
        assert_eq!(quoted("7-guitarist"), r#""7-guitarist""#);
        assert_eq!(quoted("a\"b\\c\n\u{7}"), r#""a\"b\\c\n\u0007""#);
        assert_eq!(quoted("é😀"), "\"é😀\"");
    }

    #[test]
    fn quotes_as_miniserde_did() {
        let mut every_control: String = (0u8..0x20).map(char::from).collect();
        every_control.push_str("\u{7f}\u{80}\u{2028}\u{feff}\u{10ffff}/'`");
        for s in [
            "",
            "plain",
            "\"\\\"\\",
            every_control.as_str(),
            "naïve 東京 😀",
        ] {
            assert_eq!(quoted(s), miniserde::json::to_string(s), "{s}");
        }
    }
}
