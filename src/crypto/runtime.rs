//! The runtime's own primitives, when the SDK's adapter registers them (wasm32 only): the
//! payload ChaCha20-Poly1305 ([`super::aead`]) and scrypt ([`super::recipients`]' passphrase
//! stanza). Node, Deno and workerd have both in `node:crypto` (OpenSSL / BoringSSL): faster than
//! the portable code in wasm, and scrypt's 256 MiB (log2 N = 18) is then the runtime's to free,
//! not this module's memory to keep (a wasm memory never shrinks).
//!
//! Only these primitives move: the age / age-rt framing, nonces, header, stanzas and every check
//! stay in this crate, and their output is the same bytes. A runtime that fails (`None`) leaves
//! the work to RustCrypto.
//!
//! This seam is synchronous. WebCrypto's ChaCha20-Poly1305 (Chromium 150+) is asynchronous: for
//! it the encryptor hands its chunks out and the decryptor takes chunks opened ahead of time
//! (`Encryptor::defer_seals`, `Decryptor::plan_opens`), driven by `src/wasm/webcrypto.rs`.

use zeroize::Zeroizing;

/// One payload key in a runtime's own ChaCha20-Poly1305.
pub trait RuntimeKey {
    /// Encrypts `buf` in place; the 16-byte tag, or `None` if the runtime failed (nothing
    /// written).
    fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> Option<[u8; 16]>;
    /// Verifies `tag` and decrypts `buf` in place: `Some(true)`; `Some(false)` if the tag is
    /// wrong (`buf` unchanged: no unauthenticated plaintext); `None` if the runtime failed.
    fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> Option<bool>;
    /// The key as `Any`, for an [`External`](super::External) that seals with it in the
    /// runtime's own memory.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A runtime's primitives, registered by the SDK's adapter (`set_runtime_crypto` in the wasm bindings).
pub trait RuntimeCrypto {
    /// The runtime's handle on a payload key, or `None` to use RustCrypto for this stream.
    fn aead_key(&self, key: &[u8; 32]) -> Option<std::rc::Rc<dyn RuntimeKey>>;
    /// scrypt(passphrase, salt, N = 2^log2_n, r = 8, p = 1) → 32 bytes, or `None` to use
    /// RustCrypto.
    fn scrypt(&self, passphrase: &[u8], salt: &[u8], log2_n: u8) -> Option<Zeroizing<[u8; 32]>>;
    /// A name for reports (`node:crypto`).
    fn name(&self) -> &'static str;
}

#[cfg(target_arch = "wasm32")]
thread_local! {
    pub(crate) static RUNTIME: std::cell::RefCell<Option<std::rc::Rc<dyn RuntimeCrypto>>> =
        const { std::cell::RefCell::new(None) };
}

/// Registers (or, `None`, removes) the runtime's primitives for the keys made from now on
/// (wasm32 only: a native build always uses RustCrypto, with its SIMD backends there).
#[cfg(target_arch = "wasm32")]
pub fn set_runtime_crypto(runtime: Option<std::rc::Rc<dyn RuntimeCrypto>>) {
    RUNTIME.with(|r| *r.borrow_mut() = runtime);
}

/// The name of the primitives used from now on: the runtime's, or `"wasm"` (`"rust"` natively).
pub fn crypto_backend() -> &'static str {
    #[cfg(target_arch = "wasm32")]
    if let Some(name) = RUNTIME.with(|r| r.borrow().as_ref().map(|a| a.name())) {
        return name;
    }
    if cfg!(target_arch = "wasm32") {
        "wasm"
    } else {
        "rust"
    }
}

/// scrypt somewhere other than this instance's memory: `(passphrase, salt, log2 N)` → key.
pub type ScryptElsewhere = fn(&[u8], &[u8], u8) -> Option<Zeroizing<[u8; 32]>>;

#[cfg(target_arch = "wasm32")]
thread_local! {
    static SCRYPT_ELSEWHERE: std::cell::Cell<Option<ScryptElsewhere>> =
        const { std::cell::Cell::new(None) };
}

/// Registers where scrypt runs when the runtime has none of its own (wasm32: the SDK's
/// throwaway instance, `crate::wasm::scrypt`), so its memory is given back.
#[cfg(target_arch = "wasm32")]
pub fn set_scrypt_elsewhere(f: Option<ScryptElsewhere>) {
    SCRYPT_ELSEWHERE.with(|s| s.set(f));
}

/// The runtime's scrypt, if one is registered and it succeeded; else the one registered
/// elsewhere ([`set_scrypt_elsewhere`]).
#[cfg(target_arch = "wasm32")]
pub(crate) fn scrypt(passphrase: &[u8], salt: &[u8], log2_n: u8) -> Option<Zeroizing<[u8; 32]>> {
    RUNTIME
        .with(|r| {
            r.borrow()
                .as_ref()
                .and_then(|a| a.scrypt(passphrase, salt, log2_n))
        })
        .or_else(|| {
            SCRYPT_ELSEWHERE
                .with(|s| s.get())
                .and_then(|f| f(passphrase, salt, log2_n))
        })
}

/// Natively there is none.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn scrypt(_: &[u8], _: &[u8], _: u8) -> Option<Zeroizing<[u8; 32]>> {
    None
}
