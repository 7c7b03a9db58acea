//! The payload AEAD (ChaCha20-Poly1305, empty associated data, 12-byte nonce), RustCrypto
//! `chacha20poly1305` on every target.
//!
//! On wasm32 RustCrypto's `chacha20` runs its portable backend (no wasm SIMD backend exists);
//! `bench/crypto.sh` measures the cost against Node's native cipher. We keep the maintained
//! library rather than carry our own ChaCha20 (see the README's encryption section).

use zeroize::Zeroizing;

/// A payload key ready to seal / open chunks.
#[derive(Clone)]
pub(crate) struct PayloadAead {
    inner: chacha20poly1305::ChaCha20Poly1305,
}

impl PayloadAead {
    pub(crate) fn new(key: Zeroizing<[u8; 32]>) -> Self {
        PayloadAead {
            inner: super::keys::aead(&key),
        }
    }

    /// Encrypts `buf` in place; returns the 16-byte tag.
    pub(crate) fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> [u8; 16] {
        use chacha20poly1305::aead::AeadInPlace;
        // ok: only fails above 256 GiB per message; chunks are at most 64 KiB
        let tag = self
            .inner
            .encrypt_in_place_detached(nonce.into(), b"", buf)
            // ok: see above (a chunk is at most 64 KiB, far below the AEAD limit)
            .expect("chunk below the AEAD size limit");
        tag.into()
    }

    /// Verifies `tag` and decrypts `buf` in place; on failure returns false and leaves `buf`
    /// unchanged.
    pub(crate) fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        use chacha20poly1305::aead::AeadInPlace;
        self.inner
            .decrypt_in_place_detached(nonce.into(), b"", buf, tag.into())
            .is_ok()
    }
}
