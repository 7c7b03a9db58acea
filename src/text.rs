//! How messages write a value the caller gave: a string as a JSON string literal (`"a\"b"`),
//! the quoting a JavaScript developer reads. Not `{:?}`: Rust's `Debug` escaping brings
//! core's Unicode tables and `char::escape_debug` into the wasm module (issue #27).

/// `s` as a JSON string literal.
pub(crate) fn quoted(s: &str) -> String {
    miniserde::json::to_string(s)
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
}
