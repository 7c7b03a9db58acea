//! The X-Wing KEM of age's hybrid post-quantum recipient (`mlkem768x25519`, PROTOCOL.md §7.1),
//! on its own so that the SDK's default wasm module does not carry it (issue #27): ML-KEM-768,
//! SHA-3 and SHAKE are ~13 KB gzip that a page sending a file by short code never runs.
//!
//! Two ways in, one implementation (`src/kem.rs`, the draft's glue over RustCrypto's primitives):
//! - native builds of `httpipe` link this crate and call the byte functions below;
//! - on wasm32 it is built alone as `httpipe_xwing_bg.wasm` (scripts/build-sdk.sh), which the
//!   JavaScript entry compiles only when a post-quantum key is used and hands to the main
//!   module; that instantiates it and calls its four exports (`src/exports.rs`: no JavaScript glue,
//!   no imports, inputs and outputs through one buffer).
//!
//! The stanza (HPKE around the KEM), the key strings and every check of the protocol stay in
//! `httpipe::crypto`: this crate only answers the four KEM questions.

mod kem;

#[cfg(all(target_arch = "wasm32", feature = "module"))]
mod exports;

use kem::{DecapsulationKey, EncapsulationKey};
pub use kem::{
    SharedSecret, CIPHERTEXT_LEN, ENCAPSULATION_KEY_LEN, ENCAPSULATION_RANDOM_LEN, SEED_LEN,
};

/// Whether `ek` (`ek_M ‖ pk_X`) is an encapsulation key: FIPS 203 §7.2's check of the ML-KEM
/// part (the X25519 part is any 32 bytes here; the stanza code refuses low-order points).
pub fn encapsulation_key_is_valid(ek: &[u8; ENCAPSULATION_KEY_LEN]) -> bool {
    EncapsulationKey::from_bytes(ek).is_some()
}

/// The encapsulation key (a recipient's 1216 bytes) of the decapsulation seed `seed`.
pub fn encapsulation_key_of(seed: &[u8; SEED_LEN]) -> [u8; ENCAPSULATION_KEY_LEN] {
    DecapsulationKey::from_seed(*seed)
        .encapsulation_key()
        .to_bytes()
}

/// The ciphertext and shared secret for `ek` from `randomness` (fresh and uniform: the caller
/// draws it); `None` when `ek` fails [`encapsulation_key_is_valid`].
pub fn encapsulate(
    ek: &[u8; ENCAPSULATION_KEY_LEN],
    randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
) -> Option<([u8; CIPHERTEXT_LEN], SharedSecret)> {
    Some(EncapsulationKey::from_bytes(ek)?.encapsulate(randomness))
}

/// The shared secret of `ct` for the seed's key; `None` when the X25519 share gives an all-zero
/// secret (a low-order point). A ciphertext made for another key yields some other secret
/// (ML-KEM's implicit rejection): the caller's AEAD tells.
pub fn decapsulate(seed: &[u8; SEED_LEN], ct: &[u8; CIPHERTEXT_LEN]) -> Option<SharedSecret> {
    DecapsulationKey::from_seed(*seed).decapsulate(ct)
}
