//! Canonical base64 as age uses it: standard alphabet, no padding, no trailing bits.

use crate::protocol::base64::STANDARD_NO_PAD;

/// Encodes without padding.
pub(crate) fn encode(data: &[u8]) -> String {
    STANDARD_NO_PAD.encode(data)
}

/// Decodes strictly: rejects padding, non-alphabet characters and non-zero trailing bits,
/// so every byte string has exactly one accepted encoding.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD_NO_PAD.decode(text)
}

/// Decodes strictly into exactly `N` bytes.
pub(crate) fn decode_exact<const N: usize>(text: &str) -> Option<[u8; N]> {
    STANDARD_NO_PAD.decode_exact(text)
}
