//! The payload AEAD (ChaCha20-Poly1305, empty associated data, 12-byte nonce).
//!
//! Natively: RustCrypto `chacha20poly1305` (AVX2/SSE2/NEON backends). On wasm32 with simd128:
//! our four-block [`chacha4`] ChaCha20 with RustCrypto's `poly1305`, because `chacha20` has no
//! wasm SIMD backend and its scalar code is the bottleneck there (`bench/crypto.sh`).

mod chacha4;

use zeroize::Zeroizing;

/// A payload key ready to seal / open chunks.
pub(crate) struct PayloadAead {
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    inner: chacha20poly1305::ChaCha20Poly1305,
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    key: Zeroizing<[u8; 32]>,
}

impl PayloadAead {
    pub(crate) fn new(key: Zeroizing<[u8; 32]>) -> Self {
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        {
            PayloadAead {
                inner: super::keys::aead(&key),
            }
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            PayloadAead { key }
        }
    }

    /// Encrypts `buf` in place; returns the 16-byte tag.
    pub(crate) fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> [u8; 16] {
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        {
            use chacha20poly1305::aead::AeadInPlace;
            // ok: only fails above 256 GiB per message; chunks are at most 64 KiB
            let tag = self
                .inner
                .encrypt_in_place_detached(nonce.into(), b"", buf)
                .expect("chunk below the AEAD size limit");
            tag.into()
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            chacha4::seal::<chacha4::wasm::Simd>(&self.key, nonce, buf)
        }
    }

    /// Verifies `tag` and decrypts `buf` in place; on failure returns false and leaves `buf`
    /// unchanged.
    pub(crate) fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        {
            use chacha20poly1305::aead::AeadInPlace;
            self.inner
                .decrypt_in_place_detached(nonce.into(), b"", buf, tag.into())
                .is_ok()
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            chacha4::open::<chacha4::wasm::Simd>(&self.key, nonce, buf, tag)
        }
    }
}
