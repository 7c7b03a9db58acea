//! The X-Wing KEM of the `mlkem768x25519` stanza (PROTOCOL.md §7.1), wherever it runs: linked
//! from the `httpipe-xwing` crate natively; on wasm32 a second wasm module that the SDK loads
//! only when a post-quantum key is used (issue #27), registered with [`set_xwing_module`] by
//! `src/wasm/xwing.rs`. The stanza code ([`super::mlkem768x25519`]) goes through the types
//! below either way: one path for the protocol, two places the same four functions live.
//!
//! On wasm32 before the module is registered every operation fails with
//! [`Error::Usage`] (`NOT_LOADED`); the JavaScript entry loads the module before it hands a
//! post-quantum key to this one.

use super::super::Error;
use zeroize::Zeroizing;

pub(crate) use httpipe_xwing::{
    SharedSecret, CIPHERTEXT_LEN, ENCAPSULATION_KEY_LEN, ENCAPSULATION_RANDOM_LEN, SEED_LEN,
};

/// The four operations of the X-Wing KEM, as the `httpipe-xwing` crate defines them (its
/// functions of the same names).
pub trait XWingModule {
    /// Whether `ek` passes FIPS 203 §7.2's encapsulation key check.
    fn encapsulation_key_is_valid(&self, ek: &[u8; ENCAPSULATION_KEY_LEN]) -> bool;
    /// The encapsulation key of the seed (`None` only from a module that failed).
    fn encapsulation_key_of(&self, seed: &[u8; SEED_LEN]) -> Option<[u8; ENCAPSULATION_KEY_LEN]>;
    /// Ciphertext and shared secret; `None` for an invalid `ek`.
    fn encapsulate(
        &self,
        ek: &[u8; ENCAPSULATION_KEY_LEN],
        randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
    ) -> Option<([u8; CIPHERTEXT_LEN], SharedSecret)>;
    /// The shared secret; `None` for a low-order X25519 share.
    fn decapsulate(&self, seed: &[u8; SEED_LEN], ct: &[u8; CIPHERTEXT_LEN])
        -> Option<SharedSecret>;
}

/// The message of an operation on wasm32 before the module is registered.
#[cfg(target_arch = "wasm32")]
const NOT_LOADED: &str = "the post-quantum module (httpipe_xwing_bg.wasm) is not loaded: \
     the package loads it when an age1pq1 recipient or AGE-SECRET-KEY-PQ-1 identity is used";

#[cfg(target_arch = "wasm32")]
thread_local! {
    static MODULE: std::cell::RefCell<Option<std::rc::Rc<dyn XWingModule>>> =
        const { std::cell::RefCell::new(None) };
}

/// Registers (or, `None`, removes) the X-Wing module (wasm32 only: natively it is linked).
#[cfg(target_arch = "wasm32")]
pub fn set_xwing_module(module: Option<std::rc::Rc<dyn XWingModule>>) {
    MODULE.with(|m| *m.borrow_mut() = module);
}

/// The message of an operation the module did not answer though it must (a key it had
/// checked refused, no key for a seed): a module that is not `httpipe_xwing_bg.wasm`.
const MODULE_FAILED: &str = "the post-quantum module failed (is it httpipe_xwing_bg.wasm?)";

/// Runs `f` with the module, or fails with `NOT_LOADED`.
fn with_module<T>(f: impl FnOnce(&dyn XWingModule) -> T) -> Result<T, Error> {
    #[cfg(target_arch = "wasm32")]
    {
        let module = MODULE.with(|m| m.borrow().clone());
        module
            .map(|m| f(&*m))
            .ok_or_else(|| Error::Usage(NOT_LOADED.into()))
    }
    #[cfg(not(target_arch = "wasm32"))]
    Ok(f(&Linked))
}

/// The crate, linked (native builds).
#[cfg(not(target_arch = "wasm32"))]
struct Linked;

#[cfg(not(target_arch = "wasm32"))]
impl XWingModule for Linked {
    fn encapsulation_key_is_valid(&self, ek: &[u8; ENCAPSULATION_KEY_LEN]) -> bool {
        httpipe_xwing::encapsulation_key_is_valid(ek)
    }
    fn encapsulation_key_of(&self, seed: &[u8; SEED_LEN]) -> Option<[u8; ENCAPSULATION_KEY_LEN]> {
        Some(httpipe_xwing::encapsulation_key_of(seed))
    }
    fn encapsulate(
        &self,
        ek: &[u8; ENCAPSULATION_KEY_LEN],
        randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
    ) -> Option<([u8; CIPHERTEXT_LEN], SharedSecret)> {
        httpipe_xwing::encapsulate(ek, randomness)
    }
    fn decapsulate(
        &self,
        seed: &[u8; SEED_LEN],
        ct: &[u8; CIPHERTEXT_LEN],
    ) -> Option<SharedSecret> {
        httpipe_xwing::decapsulate(seed, ct)
    }
}

/// An X-Wing encapsulation key (a recipient's public key), checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EncapsulationKey(Box<[u8; ENCAPSULATION_KEY_LEN]>);

impl EncapsulationKey {
    /// Reads `ek_M ‖ pk_X`: `Ok(None)` unless it is 1216 bytes and ML-KEM's key check (FIPS
    /// 203 §7.2) passes.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Option<Self>, Error> {
        let Ok(ek) = <[u8; ENCAPSULATION_KEY_LEN]>::try_from(bytes) else {
            return Ok(None);
        };
        let valid = with_module(|m| m.encapsulation_key_is_valid(&ek))?;
        Ok(valid.then(|| EncapsulationKey(Box::new(ek))))
    }

    /// `ek_M ‖ pk_X`.
    pub(crate) fn to_bytes(&self) -> &[u8; ENCAPSULATION_KEY_LEN] {
        &self.0
    }

    /// The ciphertext and shared secret for `randomness` (which must be fresh and uniform: the
    /// caller draws it, so that fixed-randomness vectors can be checked).
    pub(crate) fn encapsulate(
        &self,
        randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
    ) -> Result<([u8; CIPHERTEXT_LEN], SharedSecret), Error> {
        with_module(|m| m.encapsulate(&self.0, randomness))?
            .ok_or_else(|| Error::Usage(MODULE_FAILED.into()))
    }
}

/// An X-Wing decapsulation key: the seed (wiped on drop) and its encapsulation key. The
/// ML-KEM-768 and X25519 secrets are expanded from the seed for each decapsulation.
#[derive(Clone)]
pub(crate) struct DecapsulationKey {
    seed: Zeroizing<[u8; SEED_LEN]>,
    ek: EncapsulationKey,
}

impl DecapsulationKey {
    /// The key whose seed is `seed` (any 32 bytes are one).
    pub(crate) fn from_seed(seed: [u8; SEED_LEN]) -> Result<Self, Error> {
        let seed = Zeroizing::new(seed);
        let ek = with_module(|m| m.encapsulation_key_of(&seed))?
            .ok_or_else(|| Error::Usage(MODULE_FAILED.into()))?;
        Ok(DecapsulationKey {
            seed,
            ek: EncapsulationKey(Box::new(ek)),
        })
    }

    /// The seed.
    pub(crate) fn seed(&self) -> &[u8; SEED_LEN] {
        &self.seed
    }

    /// The matching encapsulation key.
    pub(crate) fn encapsulation_key(&self) -> &EncapsulationKey {
        &self.ek
    }

    /// The shared secret of `ct`; `Ok(None)` when its X25519 share gives an all-zero secret (a
    /// low-order point). A ciphertext made for another key yields some other secret (ML-KEM's
    /// implicit rejection): the caller's AEAD tells.
    pub(crate) fn decapsulate(
        &self,
        ct: &[u8; CIPHERTEXT_LEN],
    ) -> Result<Option<SharedSecret>, Error> {
        with_module(|m| m.decapsulate(&self.seed, ct))
    }
}
