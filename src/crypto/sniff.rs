//! Does a stream begin like age or age-rt ciphertext? For a consumer without keys
//! (`docs/PROTOCOL.md` §11.3 step 5): storing ciphertext by mistake and reporting success would
//! be a false verdict, so the consumer asks before it hands out the start of the stream.

use super::armor::BEGIN as ARMOR_BEGIN;
use super::header::AGE_V1_LINE;

/// The age-rt header line without its version: any version is ciphertext.
const AGE_RT_PREFIX: &str = "github.com/parsimonit/age-rt-encryption/";

/// Every start of an encrypted stream (§7, §8; armor after optional whitespace, as the
/// decryptor reads it).
const STARTS: [(&str, &str); 3] = [
    (AGE_V1_LINE, "age"),
    (AGE_RT_PREFIX, "age-rt"),
    (ARMOR_BEGIN, "armored age"),
];

/// The bytes a [`Sniff`] needs at most: the longest start after a little leading whitespace.
pub const SNIFF_BYTES: usize = 64;

/// What the stream's first bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
    /// They begin an encrypted stream in this format ("age", "age-rt", "armored age").
    Encrypted(&'static str),
    /// They are no start of an encrypted stream: plain data.
    Plain,
    /// They could still be one: more bytes are needed.
    Undecided,
}

/// What `head` (the stream's first bytes, up to [`SNIFF_BYTES`]) says.
pub fn sniff(head: &[u8]) -> Sniff {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    if start == head.len() {
        return if head.len() >= SNIFF_BYTES {
            Sniff::Plain
        } else {
            Sniff::Undecided
        };
    }
    let text = &head[start..];
    let mut undecided = false;
    for (line, format) in STARTS {
        let line = line.as_bytes();
        // only armor may follow whitespace
        if start > 0 && line != ARMOR_BEGIN.as_bytes() {
            continue;
        }
        let n = text.len().min(line.len());
        if text[..n] == line[..n] {
            if n == line.len() {
                return Sniff::Encrypted(format);
            }
            undecided = true;
        }
    }
    if undecided && head.len() < SNIFF_BYTES {
        Sniff::Undecided
    } else {
        Sniff::Plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::header::AGE_RT_LINE;

    #[test]
    fn encrypted_starts_plain_data_and_partial_lines() {
        assert!(AGE_RT_LINE.starts_with(AGE_RT_PREFIX));
        assert_eq!(
            sniff(b"age-encryption.org/v1\n-> X25519"),
            Sniff::Encrypted("age")
        );
        assert_eq!(
            sniff(b"github.com/parsimonit/age-rt-encryption/v0.2\n"),
            Sniff::Encrypted("age-rt")
        );
        assert_eq!(
            sniff(b"\n  -----BEGIN AGE ENCRYPTED FILE-----\n"),
            Sniff::Encrypted("armored age")
        );
        assert_eq!(sniff(b"age-enc"), Sniff::Undecided);
        assert_eq!(sniff(b""), Sniff::Undecided);
        assert_eq!(sniff(b"   "), Sniff::Undecided);
        assert_eq!(sniff(b"age-encryption.org/v2"), Sniff::Plain);
        assert_eq!(sniff(b"hello"), Sniff::Plain);
        assert_eq!(sniff(b"  age-encryption.org/v1"), Sniff::Plain);
        assert_eq!(sniff(&[b' '; SNIFF_BYTES]), Sniff::Plain);
    }
}
