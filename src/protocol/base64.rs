//! Base64 (RFC 4648) as this project's formats write it, and nothing looser: the standard
//! alphabet (age headers, unpadded; age's ASCII armor, padded, C2SP age §"ASCII armor") and
//! the URL-safe one (access tokens, receipts, channel ids: unpadded, §4 and §12.2). Decoding
//! takes only the canonical encoding (RFC 4648 §3.5): no character outside the alphabet, no
//! whitespace, padding exactly where the alphabet's flavour has it, zero trailing bits — so every
//! byte string has one accepted text.
//!
//! Ours rather than the `base64` crate: its general-purpose engine was 6.4 KB of the wasm
//! module (2.6 KB gzipped) for these few short strings (issue #27).

/// An alphabet and whether its flavour pads (`=`) to a multiple of 4 characters.
pub struct Base64 {
    chars: &'static [u8; 64],
    /// The value of each byte as a character, `INVALID` if it isn't one.
    values: [u8; 256],
    padded: bool,
}

const INVALID: u8 = 0xff;
const STANDARD_CHARS: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE_CHARS: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The standard alphabet, unpadded (age headers).
pub const STANDARD_NO_PAD: Base64 = Base64::new(STANDARD_CHARS, false);
/// The standard alphabet, padded (age's ASCII armor).
pub const STANDARD: Base64 = Base64::new(STANDARD_CHARS, true);
/// The URL-safe alphabet, unpadded (tokens, receipts, channel ids).
pub const URL_SAFE_NO_PAD: Base64 = Base64::new(URL_SAFE_CHARS, false);

impl Base64 {
    const fn new(chars: &'static [u8; 64], padded: bool) -> Base64 {
        let mut values = [INVALID; 256];
        let mut i = 0;
        while i < 64 {
            values[chars[i] as usize] = i as u8;
            i += 1;
        }
        Base64 {
            chars,
            values,
            padded,
        }
    }

    /// `data` as text.
    pub fn encode(&self, data: impl AsRef<[u8]>) -> String {
        let mut out = Vec::with_capacity(data.as_ref().len().div_ceil(3) * 4);
        self.encode_into(data.as_ref(), &mut out);
        // ok: every byte pushed is an ASCII character of the alphabet or `=`
        String::from_utf8(out).unwrap_or_default()
    }

    /// Appends `data`'s text to `out`.
    pub fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) {
        for group in data.chunks(3) {
            let byte = |i: usize| u32::from(group.get(i).copied().unwrap_or(0));
            let n = byte(0) << 16 | byte(1) << 8 | byte(2);
            for i in 0..4 {
                if i <= group.len() {
                    out.push(self.chars[(n >> (18 - 6 * i) & 63) as usize]);
                } else if self.padded {
                    out.push(b'=');
                }
            }
        }
    }

    /// The bytes of a canonical `text`; `None` for anything else.
    pub fn decode(&self, text: impl AsRef<[u8]>) -> Option<Vec<u8>> {
        let text = text.as_ref();
        let body = if self.padded {
            let pads = text.iter().rev().take_while(|&&c| c == b'=').count();
            if text.len() % 4 != 0 || pads > 2 {
                return None;
            }
            &text[..text.len() - pads]
        } else {
            text
        };
        if body.len() % 4 == 1 {
            return None;
        }
        let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
        let (mut acc, mut bits) = (0u32, 0u32);
        for &c in body {
            let v = self.values[usize::from(c)];
            if v == INVALID {
                return None;
            }
            acc = (acc << 6 | u32::from(v)) & 0xffff;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        // the bits past the last byte must be zero (RFC 4648 §3.5)
        (acc & ((1 << bits) - 1) == 0).then_some(out)
    }

    /// The bytes of a canonical `text` of exactly `N` bytes.
    pub fn decode_exact<const N: usize>(&self, text: impl AsRef<[u8]>) -> Option<[u8; N]> {
        self.decode(text)?.try_into().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_4648_vectors() {
        // RFC 4648 §10
        let cases = [
            ("", "", ""),
            ("f", "Zg==", "Zg"),
            ("fo", "Zm8=", "Zm8"),
            ("foo", "Zm9v", "Zm9v"),
            ("foob", "Zm9vYg==", "Zm9vYg"),
            ("fooba", "Zm9vYmE=", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
        ];
        for (plain, padded, unpadded) in cases {
            assert_eq!(STANDARD.encode(plain), padded);
            assert_eq!(STANDARD_NO_PAD.encode(plain), unpadded);
            assert_eq!(STANDARD.decode(padded).as_deref(), Some(plain.as_bytes()));
            assert_eq!(
                STANDARD_NO_PAD.decode(unpadded).as_deref(),
                Some(plain.as_bytes())
            );
        }
    }

    #[test]
    fn the_two_alphabets() {
        let bytes = [0xfb, 0xff, 0xbf];
        assert_eq!(STANDARD_NO_PAD.encode(bytes), "+/+/");
        assert_eq!(URL_SAFE_NO_PAD.encode(bytes), "-_-_");
        assert_eq!(URL_SAFE_NO_PAD.decode("-_-_"), Some(bytes.to_vec()));
        assert_eq!(URL_SAFE_NO_PAD.decode("+/+/"), None);
        assert_eq!(STANDARD_NO_PAD.decode("-_-_"), None);
    }

    #[test]
    fn only_the_canonical_text_decodes() {
        // trailing bits set: "Zh" and "Zm9" decode to the same bytes as "Zg" and "Zm8"
        assert_eq!(STANDARD_NO_PAD.decode("Zh"), None);
        assert_eq!(STANDARD_NO_PAD.decode("Zm9"), None);
        assert_eq!(STANDARD.decode("Zh=="), None);
        // padding where the flavour has none, and missing or extra where it has
        assert_eq!(STANDARD_NO_PAD.decode("Zg=="), None);
        assert_eq!(STANDARD.decode("Zg"), None);
        assert_eq!(STANDARD.decode("Zg="), None);
        assert_eq!(STANDARD.decode("Zg==="), None);
        assert_eq!(STANDARD.decode("Z==="), None);
        assert_eq!(STANDARD.decode("Zg==Zg=="), None);
        // a length no encoding has, whitespace, other characters
        assert_eq!(STANDARD_NO_PAD.decode("Zm9vY"), None);
        assert_eq!(STANDARD_NO_PAD.decode("Zm9v\n"), None);
        assert_eq!(STANDARD_NO_PAD.decode("Zm 9v"), None);
        assert_eq!(STANDARD_NO_PAD.decode("Zm9v\u{e9}"), None);
        assert_eq!(STANDARD_NO_PAD.decode_exact::<3>("Zm9v"), Some(*b"foo"));
        assert_eq!(STANDARD_NO_PAD.decode_exact::<2>("Zm9v"), None);
    }

    #[test]
    fn every_byte_string_round_trips() {
        let data: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for flavour in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            for len in 0..70 {
                let d = &data[len * 3..len * 3 + len];
                let text = flavour.encode(d);
                assert_eq!(flavour.decode(&text).as_deref(), Some(d), "{text}");
            }
        }
    }
}
