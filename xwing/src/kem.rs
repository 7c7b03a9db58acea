//! The X-Wing KEM (draft-connolly-cfrg-xwing-kem-06, the `MLKEM768-X25519` of C2SP age):
//! ML-KEM-768 (the `ml-kem` crate) and X25519 (`x25519-dalek`, the one the rest of the crate
//! uses) joined by SHA3-256, keys expanded from a 32-byte seed with SHAKE256.
//!
//! The crate `x-wing` does the same in ~100 lines of glue, but over x25519-dalek 3 and
//! curve25519-dalek 5: a second copy of the curve beside the one age's X25519 stanzas and the
//! short codes' SPAKE2 (which pins curve25519-dalek 4) need, in every wasm module (issue #27:
//! one curve25519-dalek). The primitives stay the libraries'; this is the draft's glue:
//!
//! ```text
//! expand(sk):        (d ‖ z ‖ sk_X) = SHAKE256(sk, 96); (dk_M, ek_M) = ML-KEM-768.KeyGen(d, z);
//!                    pk_X = X25519(sk_X, 9); ek = ek_M ‖ pk_X                (1184 + 32 bytes)
//! encaps(ek, e):     (ss_M, ct_M) = ML-KEM-768.Encaps(ek_M, e[0..32]); ct_X = X25519(e[32..64], 9);
//!                    ss_X = X25519(e[32..64], pk_X); ct = ct_M ‖ ct_X         (1088 + 32 bytes)
//! decaps(sk, ct):    ss_M = ML-KEM-768.Decaps(dk_M, ct_M); ss_X = X25519(sk_X, ct_X)
//! combiner:          ss = SHA3-256(ss_M ‖ ss_X ‖ ct_X ‖ pk_X ‖ "\.//^\")
//! ```
//!
//! Decapsulation refuses an all-zero `ss_X` (a low-order `ct_X`), as age's reference
//! implementation and the CCTV vector `hybrid_low_order` require. Checked against the C2SP
//! example key, the CCTV hybrid vectors (`tests/`) and `age-encryption` (JS interop tests).

use ml_kem::array::Array;
use ml_kem::{ml_kem_768, Decapsulate, KeyExport, MlKem768};
use sha3::{Digest, Sha3_256};
use shake::{ExtendableOutput, Shake256, XofReader};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// Bytes of a decapsulation key (the seed everything is expanded from).
pub const SEED_LEN: usize = 32;
/// Bytes of an encapsulation key: the ML-KEM-768 key, then the X25519 one.
pub const ENCAPSULATION_KEY_LEN: usize = ML_KEM_KEY_LEN + 32;
/// Bytes of a ciphertext: the ML-KEM-768 ciphertext, then the X25519 share.
pub const CIPHERTEXT_LEN: usize = ML_KEM_CIPHERTEXT_LEN + 32;
/// Random bytes one encapsulation takes (32 for ML-KEM, 32 for the X25519 ephemeral).
pub const ENCAPSULATION_RANDOM_LEN: usize = 64;
const ML_KEM_KEY_LEN: usize = 1184;
const ML_KEM_CIPHERTEXT_LEN: usize = 1088;
/// The draft's `XWingLabel`.
const LABEL: &[u8; 6] = br"\.//^\";

/// A shared secret (wiped on drop).
pub type SharedSecret = Zeroizing<[u8; 32]>;

/// An X-Wing encapsulation key (a recipient's public key).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EncapsulationKey {
    pk_m: ml_kem_768::EncapsulationKey,
    pk_x: PublicKey,
}

impl EncapsulationKey {
    /// Reads `ek_M ‖ pk_X`; `None` unless it is 1216 bytes and ML-KEM's key check (FIPS 203
    /// §7.2) passes.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != ENCAPSULATION_KEY_LEN {
            return None;
        }
        let (m, x) = bytes.split_at(ML_KEM_KEY_LEN);
        let pk_m = ml_kem_768::EncapsulationKey::new(&Array::try_from(m).ok()?).ok()?;
        let pk_x = PublicKey::from(<[u8; 32]>::try_from(x).ok()?);
        Some(EncapsulationKey { pk_m, pk_x })
    }

    /// `ek_M ‖ pk_X`.
    pub(crate) fn to_bytes(&self) -> [u8; ENCAPSULATION_KEY_LEN] {
        let mut out = [0u8; ENCAPSULATION_KEY_LEN];
        out[..ML_KEM_KEY_LEN].copy_from_slice(&self.pk_m.to_bytes());
        out[ML_KEM_KEY_LEN..].copy_from_slice(self.pk_x.as_bytes());
        out
    }

    /// The ciphertext and shared secret for `randomness` (which must be fresh and uniform: the
    /// caller draws it, so that fixed-randomness vectors can be checked).
    pub(crate) fn encapsulate(
        &self,
        randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
    ) -> ([u8; CIPHERTEXT_LEN], SharedSecret) {
        let (rand_m, rand_x) = randomness.split_at(32);
        let (ct_m, ss_m) = self
            .pk_m
            .encapsulate_deterministic(&Array::try_from(rand_m).unwrap_or_default());
        let ek_x = StaticSecret::from(<[u8; 32]>::try_from(rand_x).unwrap_or_default());
        let ct_x = PublicKey::from(&ek_x);
        let ss_x = ek_x.diffie_hellman(&self.pk_x);
        let ss = combiner(&ss_m, ss_x.as_bytes(), &ct_x, &self.pk_x);
        let mut ct = [0u8; CIPHERTEXT_LEN];
        ct[..ML_KEM_CIPHERTEXT_LEN].copy_from_slice(&ct_m);
        ct[ML_KEM_CIPHERTEXT_LEN..].copy_from_slice(ct_x.as_bytes());
        (ct, ss)
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
    pub(crate) fn from_seed(seed: [u8; SEED_LEN]) -> Self {
        let seed = Zeroizing::new(seed);
        let (dk_m, sk_x) = expand(&seed);
        let ek = EncapsulationKey {
            pk_m: dk_m.encapsulation_key().clone(),
            pk_x: PublicKey::from(&sk_x),
        };
        DecapsulationKey { seed, ek }
    }

    /// The matching encapsulation key.
    pub(crate) fn encapsulation_key(&self) -> &EncapsulationKey {
        &self.ek
    }

    /// The shared secret of `ct`; `None` when its X25519 share gives an all-zero secret (a
    /// low-order point). A ciphertext made for another key yields some other secret (ML-KEM's
    /// implicit rejection): the caller's AEAD tells.
    pub(crate) fn decapsulate(&self, ct: &[u8; CIPHERTEXT_LEN]) -> Option<SharedSecret> {
        let (ct_m, ct_x) = ct.split_at(ML_KEM_CIPHERTEXT_LEN);
        let (dk_m, sk_x) = expand(&self.seed);
        let ss_m = dk_m.decapsulate(&Array::try_from(ct_m).ok()?);
        let ct_x = PublicKey::from(<[u8; 32]>::try_from(ct_x).ok()?);
        let ss_x = sk_x.diffie_hellman(&ct_x);
        if !ss_x.was_contributory() {
            return None;
        }
        Some(combiner(&ss_m, ss_x.as_bytes(), &ct_x, &self.ek.pk_x))
    }
}

/// `(d ‖ z ‖ sk_X) = SHAKE256(seed, 96)`: the ML-KEM-768 key from (d, z), the X25519 secret.
fn expand(seed: &[u8; SEED_LEN]) -> (ml_kem_768::DecapsulationKey, StaticSecret) {
    let mut xof = Shake256::default();
    sha3::digest::Update::update(&mut xof, seed);
    let mut reader = xof.finalize_xof();
    let mut expanded = Zeroizing::new([0u8; 96]);
    reader.read(expanded.as_mut());
    let mut ml_seed = ml_kem::Seed::default();
    ml_seed.copy_from_slice(&expanded[..64]);
    let dk_m = <MlKem768 as ml_kem::FromSeed>::from_seed(&ml_seed).0;
    ml_seed.fill(0);
    let sk_x = StaticSecret::from(<[u8; 32]>::try_from(&expanded[64..]).unwrap_or_default());
    (dk_m, sk_x)
}

/// `SHA3-256(ss_M ‖ ss_X ‖ ct_X ‖ pk_X ‖ XWingLabel)`.
fn combiner(ss_m: &[u8], ss_x: &[u8; 32], ct_x: &PublicKey, pk_x: &PublicKey) -> SharedSecret {
    let mut h = Sha3_256::new();
    h.update(ss_m);
    h.update(ss_x);
    h.update(ct_x.as_bytes());
    h.update(pk_x.as_bytes());
    h.update(LABEL);
    Zeroizing::new(h.finalize().into())
}
