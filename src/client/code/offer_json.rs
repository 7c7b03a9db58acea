//! The offer's JSON, written and read (`PROTOCOL.md` §14.3). Written as
//! `{"v":1,"name":…,"size":…,"type":…}`, an unset field as `null`. Read: one object whose
//! members `v` (the version, an integer), `name` and `type` (a string or `null`) and `size`
//! (an integer or `null`) are taken, absent ones unset, any other member (of any JSON type)
//! skipped. Strict JSON (RFC 8259) otherwise: a duplicate known member, a number with a
//! fraction, an exponent or a sign where an integer is read, a control character in a
//! string, a lone surrogate escape, anything after the object: not an offer.
//!
//! Ours, not a JSON library's: the offer's is the one JSON the module reads and writes, and
//! miniserde's generic deserializer (its visitors and float parser) was 8.7 KB of the module
//! raw, 5.5 KB gzip, its serializer 5.1 KB raw, 3.0 gzip, more (issue #27). The tests check
//! both against miniserde's on the same inputs.

use super::spake::Offer;
use crate::text::quoted;

/// `offer` as JSON.
pub fn write_offer(offer: &Offer) -> String {
    let text = |s: &Option<String>| s.as_deref().map_or_else(|| "null".into(), quoted);
    let size = offer.size.map_or_else(|| "null".into(), |n| n.to_string());
    format!(
        r#"{{"v":{},"name":{},"size":{},"type":{}}}"#,
        offer.v,
        text(&offer.name),
        size,
        text(&offer.content_type)
    )
}

/// Deepest nesting skipped in an unknown member (the offer itself is depth 1).
const MAX_DEPTH: usize = 32;

/// `text` as an offer, or `None` when it is not one (see the module's rules).
pub fn read_offer(text: &str) -> Option<Offer> {
    let mut r = Reader {
        b: text.as_bytes(),
        i: 0,
    };
    let offer = r.offer()?;
    r.ws();
    (r.i == r.b.len()).then_some(offer)
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// After whitespace, `c` is next: taken.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let next = self.peek() == Some(c);
        self.i += usize::from(next);
        next
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    fn offer(&mut self) -> Option<Offer> {
        let (mut v, mut name, mut size, mut content_type) = (None, None, None, None);
        self.members(1, |r, key| {
            let slot_taken = match key.as_str() {
                "v" => v.replace(u32::try_from(r.integer()?).ok()?).is_some(),
                "name" => name.replace(r.nullable(Reader::string)?).is_some(),
                "size" => size.replace(r.nullable(Reader::integer)?).is_some(),
                "type" => content_type.replace(r.nullable(Reader::string)?).is_some(),
                _ => return r.skip_value(1),
            };
            (!slot_taken).then_some(())
        })?;
        Some(Offer {
            v: v?,
            name: name.flatten(),
            size: size.flatten(),
            content_type: content_type.flatten(),
        })
    }

    /// An object's members, each key handed to `member`, which reads its value.
    fn members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, String) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            member(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// `null` (→ `Some(None)`) or what `read` reads.
    fn nullable<T>(&mut self, read: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        self.ws();
        if self.peek() == Some(b'n') {
            return self.literal(b"null").map(|()| None);
        }
        read(self).map(Some)
    }

    /// A non-negative integer without fraction or exponent (`0`, `17`; not `017`, `-1`, `1.0`).
    fn integer(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        let fraction_or_exponent = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        let leading_zero = digits > 1 && self.b[start] == b'0';
        (digits > 0 && !fraction_or_exponent && !leading_zero).then_some(n)
    }

    /// A string, its escapes decoded.
    fn string(&mut self) -> Option<String> {
        self.ws();
        if self.peek() != Some(b'"') {
            return None;
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            // the run up to the next quote, backslash or control character, as it is
            let run = self.i;
            while matches!(self.peek(), Some(c) if c != b'"' && c != b'\\' && c >= 0x20) {
                self.i += 1;
            }
            // the text is a `str` and the run ends at an ASCII byte: a whole UTF-8 run
            out.push_str(std::str::from_utf8(&self.b[run..self.i]).ok()?);
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.i += 1;
                    out.push(self.escape()?);
                }
                _ => return None, // a control character
            }
        }
    }

    /// The character an escape (after its backslash) stands for.
    fn escape(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        Some(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                if !(0xD800..0xDC00).contains(&hi) {
                    return char::from_u32(hi); // a lone low surrogate: None
                }
                self.literal(b"\\u")?;
                let lo = self.hex4()?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return None;
                }
                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let end = self.i.checked_add(4)?;
        let digits = std::str::from_utf8(self.b.get(self.i..end)?).ok()?;
        if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
            return None;
        }
        self.i = end;
        u32::from_str_radix(digits, 16).ok()
    }

    /// Skips one JSON value of any type (an unknown member's), nested at most [`MAX_DEPTH`].
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.members(depth + 1, |r, _| r.skip_value(depth + 1)),
            b'[' => self.skip_array(depth + 1),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.skip_number(),
        }
    }

    fn skip_array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.skip_value(depth)?;
            if self.eat(b']') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// A JSON number (RFC 8259 §6): `-`? int frac? exp?
    fn skip_number(&mut self) -> Option<()> {
        self.i += usize::from(self.peek() == Some(b'-'));
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else {
            self.digits()?;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            self.i += usize::from(matches!(self.peek(), Some(b'+' | b'-')));
            self.digits()?;
        }
        Some(())
    }

    /// One or more digits.
    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(name: Option<&str>, size: Option<u64>, ty: Option<&str>) -> Offer {
        Offer::new(name.map(Into::into), size, ty.map(Into::into))
    }

    /// miniserde's reader, the one this replaced: the oracle.
    fn miniserde_reads(text: &str) -> Option<Offer> {
        miniserde::json::from_str(text).ok()
    }

    #[test]
    fn reads_what_it_writes_and_writes_as_miniserde_did() {
        let names = [
            "r.pdf",
            "",
            "with \"quotes\" and \\ backslash / slash",
            "tab\tnew\nline\r\u{8}\u{c}\u{1}\u{1f}\u{7f}",
            "naïve café — 東京 😀.txt",
            "\u{2028}\u{2029}\u{feff}\u{10ffff}",
        ];
        for name in names {
            for size in [None, Some(0), Some(7), Some(u64::MAX)] {
                for ty in [
                    None,
                    Some("application/pdf"),
                    Some("text/plain; charset=\"utf-8\""),
                ] {
                    let o = offer(Some(name), size, ty);
                    let text = write_offer(&o);
                    assert_eq!(text, miniserde::json::to_string(&o));
                    assert_eq!(read_offer(&text), Some(o.clone()), "{text}");
                    assert_eq!(miniserde_reads(&text), Some(o), "{text}");
                }
            }
        }
        let none = offer(None, None, None);
        assert_eq!(
            write_offer(&none),
            r#"{"v":1,"name":null,"size":null,"type":null}"#
        );
        assert_eq!(read_offer(&write_offer(&none)), Some(none));
    }

    #[test]
    fn reads_as_miniserde_did() {
        for text in [
            r#"{"v":1,"name":"a","future":true}"#,
            r#"{"v":1,"size":7}"#,
            r#"{"v":1,"name":null,"size":7,"type":null}"#,
            r#" { "v" : 1 , "name" : "a\u00e9\ud83d\ude00\/" } "#,
            r#"{"x":{"y":[1,-2.5e+3,0.1E2,"s",null,true,false,{}],"z":[]},"v":2}"#,
            r#"{"v":0,"size":18446744073709551615}"#,
            "{\"v\":1,\n\t\"type\":\"t\"\r\n}",
        ] {
            let read = read_offer(text);
            assert!(read.is_some(), "{text}");
            assert_eq!(read, miniserde_reads(text), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_an_offer() {
        for bad in [
            r#"{"size":7}"#, // no version
            r#"{"v":"1"}"#,  // a version that is not a number
            r#"{"v":-1}"#,
            r#"{"v":1.0}"#,
            r#"{"v":1e0}"#,
            r#"{"v":01}"#,
            r#"{"v":4294967296}"#,                    // over u32
            r#"{"v":1,"size":18446744073709551616}"#, // over u64
            r#"{"v":1,"size":-7}"#,
            r#"{"v":1,"size":"7"}"#,
            r#"{"v":1,"name":7}"#,
            r#"{"v":1,"v":1}"#, // a duplicate known member
            r#"{"v":1,"name":"a","name":null}"#,
            "[]",
            "{",
            "",
            "null",
            r#"{"v":1,}"#,
            r#"{"v":1 "name":"a"}"#,
            r#"{"v":1}x"#,
            r#"{"v":1}{}"#,
            "{\"v\":1,\"name\":\"a\nb\"}", // a raw control character
            r#"{"v":1,"name":"\x"}"#,
            r#"{"v":1,"name":"\u12"}"#,
            r#"{"v":1,"name":"\ud83d"}"#, // a lone high surrogate
            r#"{"v":1,"name":"\ude00"}"#, // a lone low surrogate
            r#"{"v":1,"name":"\ud83d\u0041"}"#,
            r#"{"v":1,"name":"a"#,
            r#"{"v":1,"x":tru}"#,
            r#"{"v":1,"x":[1,]}"#,
            r#"{"v":1,"x":01}"#,
            r#"{"v":1,"x":1.}"#,
            r#"{"v":1,"x":-}"#,
            r#"{"v":1,"x":+1}"#,
            r#"{"v":1,"x":{"a"}}"#,
            r#"{v:1}"#,
        ] {
            assert_eq!(read_offer(bad), None, "{bad}");
        }
    }

    #[test]
    fn nesting_is_bounded_and_never_panics() {
        let deep = |n: usize| format!(r#"{{"v":1,"x":{}{}}}"#, "[".repeat(n), "]".repeat(n));
        assert!(read_offer(&deep(MAX_DEPTH - 1)).is_some());
        assert_eq!(read_offer(&deep(MAX_DEPTH)), None);
        assert_eq!(read_offer(&deep(100_000)), None);
        // every prefix of a real offer: no panic, and none is an offer but the whole
        let text = write_offer(&offer(Some("é😀\"x"), Some(9), Some("t")));
        for (end, _) in text.char_indices() {
            assert_eq!(read_offer(&text[..end]), None, "{}", &text[..end]);
        }
    }
}
