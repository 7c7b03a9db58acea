//! The payload AEAD (ChaCha20-Poly1305, empty associated data, 12-byte nonce): RustCrypto
//! `chacha20poly1305` on every target, or, on wasm32, the runtime's own cipher when the SDK
//! registered one ([`super::runtime`]: Node's, Deno's and workerd's `node:crypto`).
//!
//! The framing (nonces, chunk sizes, the last-chunk flag, PROTOCOL.md §7, §8) and every check
//! stay in this crate: a runtime cipher only seals or opens one chunk, in place, under the
//! payload key. Its output is the same bytes (ChaCha20-Poly1305 is deterministic given key and
//! nonce); a runtime cipher that fails (throws) on a chunk leaves that chunk to RustCrypto, so
//! the result never depends on which one ran. On wasm32 RustCrypto's `chacha20` runs its
//! portable backend (no wasm SIMD backend exists): `bench/crypto.sh` measures both.

use zeroize::Zeroizing;

#[cfg(target_arch = "wasm32")]
use super::runtime::{RuntimeKey, RUNTIME};

/// A payload key ready to seal / open chunks.
#[derive(Clone)]
pub(crate) struct PayloadAead {
    inner: httpipe_aead::ChunkAead,
    /// The key itself, for a runtime whose cipher is asynchronous (the SDK's WebCrypto path,
    /// `src/wasm/webcrypto.rs`): it imports the key once, non-extractable.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    key: Zeroizing<[u8; 32]>,
    #[cfg(target_arch = "wasm32")]
    runtime: Option<std::rc::Rc<dyn RuntimeKey>>,
}

impl PayloadAead {
    pub(crate) fn new(key: Zeroizing<[u8; 32]>) -> Self {
        PayloadAead {
            inner: httpipe_aead::ChunkAead::new(&key),
            #[cfg(target_arch = "wasm32")]
            runtime: RUNTIME.with(|r| r.borrow().as_ref().and_then(|a| a.aead_key(&key))),
            key,
        }
    }

    /// The payload key (see the field).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The runtime's handle on this key, if one is registered (wasm32).
    pub(crate) fn runtime_key(&self) -> Option<&dyn super::RuntimeKey> {
        #[cfg(target_arch = "wasm32")]
        if let Some(k) = &self.runtime {
            return Some(k.as_ref());
        }
        None
    }

    /// Encrypts `buf` in place; returns the 16-byte tag.
    pub(crate) fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> [u8; 16] {
        #[cfg(target_arch = "wasm32")]
        if let Some(tag) = self.runtime.as_ref().and_then(|k| k.seal(nonce, buf)) {
            return tag;
        }
        self.inner
            .seal(nonce, buf)
            // ok: only fails above 256 GiB per message; a chunk is at most 64 KiB
            .expect("chunk below the AEAD size limit")
    }

    /// Verifies `tag` and decrypts `buf` in place; on failure returns false and leaves `buf`
    /// unchanged.
    pub(crate) fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        #[cfg(target_arch = "wasm32")]
        if let Some(ok) = self.runtime.as_ref().and_then(|k| k.open(nonce, buf, tag)) {
            return ok;
        }
        self.inner.open(nonce, buf, tag)
    }
}
