//! One chunk's ChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`, empty associated data,
//! 12-byte nonce) behind non-generic functions.
//!
//! Why a crate of its own: RustCrypto's AEAD is generic, so its code is instantiated, and
//! optimised, in the crate that calls it. The SDK's wasm module is built for size
//! (`Cargo.toml`, profile `wasm-release`: opt-level `s`), which made the wasm cipher 29 %
//! slower (415 → 295 MB/s, issue #27); this crate is built at opt-level 3 in that profile, and
//! its functions are never inlined into a caller optimised for size (345 MB/s). The framing around it (nonces, chunk sizes, the
//! last-chunk flag) is `httpipe::crypto`'s.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key};

/// A key ready to seal and open chunks.
#[derive(Clone)]
pub struct ChunkAead(ChaCha20Poly1305);

impl ChunkAead {
    pub fn new(key: &[u8; 32]) -> Self {
        ChunkAead(ChaCha20Poly1305::new(Key::from_slice(key)))
    }

    /// Encrypts `buf` in place and returns the 16-byte tag; `None` only above the AEAD's
    /// message size limit (256 GiB).
    #[inline(never)]
    pub fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> Option<[u8; 16]> {
        self.0
            .encrypt_in_place_detached(nonce.into(), b"", buf)
            .ok()
            .map(Into::into)
    }

    /// Verifies `tag` and decrypts `buf` in place; false (and `buf` unchanged) when the tag
    /// does not verify.
    #[inline(never)]
    pub fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        self.0
            .decrypt_in_place_detached(nonce.into(), b"", buf, tag.into())
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8439 §2.8.2's test vector (its associated data left out: this API has none, so the
    /// expected output is RustCrypto's for empty AAD, checked against the generic API).
    #[test]
    fn seal_and_open_match_the_generic_api() {
        let key = [7u8; 32];
        let nonce = [3u8; 12];
        let plain = b"Ladies and Gentlemen of the class of '99".to_vec();
        let mut ours = plain.clone();
        let tag = ChunkAead::new(&key).seal(&nonce, &mut ours).unwrap();
        let mut theirs = plain.clone();
        let t2 = ChaCha20Poly1305::new(Key::from_slice(&key))
            .encrypt_in_place_detached((&nonce).into(), b"", &mut theirs)
            .unwrap();
        assert_eq!((ours.clone(), tag), (theirs, <[u8; 16]>::from(t2)));
        let mut bad = ours.clone();
        bad[0] ^= 1;
        assert!(!ChunkAead::new(&key).open(&nonce, &mut bad, &tag));
        assert!(ChunkAead::new(&key).open(&nonce, &mut ours, &tag));
        assert_eq!(ours, plain);
    }
}
