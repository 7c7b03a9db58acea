//! The hybrid post-quantum `mlkem768x25519` recipient stanza and `age1pq1...` /
//! `AGE-SECRET-KEY-PQ-1...` keys (C2SP age §"The MLKEM768-X25519 (i.e. X-Wing) hybrid
//! post-quantum recipient type"; PROTOCOL.md §7.1).
//!
//! - Identity: a 32-byte seed, Bech32 `AGE-SECRET-KEY-PQ-1...`. Recipient: the 1216-byte
//!   X-Wing encapsulation key derived from it (ML-KEM-768 key || X25519 key), Bech32
//!   `age1pq1...`.
//! - Stanza: `-> mlkem768x25519 <base64 enc, 1120 bytes>`, body = the 32-byte HPKE
//!   ciphertext of the file key: HPKE (RFC 9180) SealBase with KEM MLKEM768-X25519 (X-Wing,
//!   0x647A), KDF HKDF-SHA256 (0x0001), AEAD ChaCha20Poly1305 (0x0003),
//!   info = `age-encryption.org/mlkem768x25519`, aad = empty.
//!
//! The KEM is X-Wing ([`super::xwing`]: RustCrypto's ML-KEM-768 and our X25519). Its
//! decapsulation rejects an all-zero X25519 shared secret: age's reference implementation
//! does too, and the CCTV vectors `hybrid_identity` / `hybrid_low_order` require it (a header
//! failure). HPKE's key
//! schedule for one single-shot seal is a few HKDF calls, written here over the crate's
//! existing HKDF-SHA-256 and ChaCha20-Poly1305 (no HPKE crate: it would bring a second copy
//! of those).

use super::super::base64;
use super::super::header::Stanza;
use super::super::keys::{aead, FileKey, FILE_KEY_LEN};
use super::super::Error;
use super::keytext;
use super::xwing::{self, DecapsulationKey, EncapsulationKey};
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::Nonce;
use hkdf::Hkdf;
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

pub(crate) const TAG: &str = "mlkem768x25519";
/// The HPKE `info` of the stanza.
const INFO: &[u8] = b"age-encryption.org/mlkem768x25519";
const RECIPIENT_HRP: &str = "age1pq";
const IDENTITY_HRP: &str = "age-secret-key-pq-";
/// Bytes of an identity (the X-Wing decapsulation seed).
pub(crate) const SEED_LEN: usize = xwing::SEED_LEN;
/// Bytes of a recipient (the X-Wing encapsulation key: 1184 ML-KEM-768 + 32 X25519).
pub(crate) const RECIPIENT_LEN: usize = xwing::ENCAPSULATION_KEY_LEN;
/// Bytes of the encapsulated key `enc` (1088 ML-KEM-768 ciphertext + 32 X25519 share).
pub(crate) const ENC_LEN: usize = xwing::CIPHERTEXT_LEN;
/// Random bytes one encapsulation draws (32 for ML-KEM, 32 for the X25519 ephemeral).
pub(crate) const ENCAP_RANDOM_LEN: usize = xwing::ENCAPSULATION_RANDOM_LEN;

/// HPKE's suite_id: "HPKE" || kem_id 0x647A || kdf_id 0x0001 || aead_id 0x0003.
const SUITE_ID: [u8; 10] = *b"HPKE\x64\x7a\x00\x01\x00\x03";

/// A hybrid recipient (X-Wing encapsulation key).
pub(crate) type HybridRecipient = EncapsulationKey;

/// A hybrid identity: the 32-byte seed (wiped on drop) and its encapsulation key. The
/// ML-KEM-768 and X25519 secret keys are expanded from the seed for each decapsulation.
#[derive(Clone)]
pub(crate) struct HybridIdentity {
    key: DecapsulationKey,
}

impl HybridIdentity {
    /// The identity whose decapsulation seed is `seed` (any 32 bytes are a valid identity;
    /// fails only where the X-Wing module is not loaded, `xwing`'s `NOT_LOADED`).
    pub(crate) fn from_seed(seed: [u8; SEED_LEN]) -> Result<Self, Error> {
        Ok(HybridIdentity {
            key: DecapsulationKey::from_seed(seed)?,
        })
    }

    /// The matching recipient.
    pub(crate) fn recipient(&self) -> HybridRecipient {
        self.key.encapsulation_key().clone()
    }
}

/// Parses `age1pq1...`: Bech32 of exactly 1216 bytes, an ML-KEM-768 key that passes FIPS 203's
/// encapsulation key check, and an X25519 key that is not a low-order point (whose shared
/// secret would be all zeros, so no one could decrypt).
pub(crate) fn parse_recipient(s: &str) -> Result<HybridRecipient, Error> {
    let bytes = keytext::decode(s, RECIPIENT_HRP, false)?;
    if bytes.len() != RECIPIENT_LEN {
        return Err(Error::InvalidKey(format!(
            "an age1pq1 recipient is {RECIPIENT_LEN} bytes, this one {}",
            bytes.len()
        )));
    }
    let pk = HybridRecipient::from_bytes(&bytes)?.ok_or_else(|| {
        Error::InvalidKey("age1pq1 recipient: not a valid ML-KEM-768 encapsulation key".into())
    })?;
    let mut x = [0u8; 32];
    x.copy_from_slice(&bytes[RECIPIENT_LEN - 32..]);
    // All-zero output from any clamped scalar exactly when the point has low order.
    let probe = StaticSecret::from([0x5a; 32]).diffie_hellman(&PublicKey::from(x));
    if !probe.was_contributory() {
        return Err(Error::InvalidKey(
            "age1pq1 recipient: its X25519 key is a low-order point".into(),
        ));
    }
    Ok(pk)
}

/// Formats `age1pq1...`.
pub(crate) fn format_recipient(pk: &HybridRecipient) -> String {
    keytext::encode(RECIPIENT_HRP, pk.to_bytes(), false)
}

/// Parses `AGE-SECRET-KEY-PQ-1...` (exactly 32 bytes).
pub(crate) fn parse_identity(s: &str) -> Result<HybridIdentity, Error> {
    let bytes = keytext::decode(s, IDENTITY_HRP, true)?;
    let seed: Zeroizing<[u8; SEED_LEN]> = Zeroizing::new(
        bytes
            .as_slice()
            .try_into()
            .map_err(|_| Error::InvalidKey("AGE-SECRET-KEY-PQ-1 key is not 32 bytes".into()))?,
    );
    HybridIdentity::from_seed(*seed)
}

/// Formats `AGE-SECRET-KEY-PQ-1...`.
pub(crate) fn format_identity(id: &HybridIdentity) -> Zeroizing<String> {
    format_seed(id.key.seed())
}

/// Formats the identity whose seed is `seed` (without the X-Wing module: a new identity's
/// string needs only its 32 random bytes).
pub(crate) fn format_seed(seed: &[u8; SEED_LEN]) -> Zeroizing<String> {
    Zeroizing::new(keytext::encode(IDENTITY_HRP, seed, true))
}

/// HPKE LabeledExtract (RFC 9180 §4): HKDF-Extract(salt, "HPKE-v1" || suite_id || label || ikm).
fn labeled_extract(salt: &[u8], label: &[u8], ikm: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut input = Zeroizing::new(Vec::with_capacity(17 + label.len() + ikm.len()));
    input.extend_from_slice(b"HPKE-v1");
    input.extend_from_slice(&SUITE_ID);
    input.extend_from_slice(label);
    input.extend_from_slice(ikm);
    let (prk, _) = Hkdf::<Sha256>::extract(Some(salt), &input);
    Zeroizing::new(prk.to_vec())
}

/// HPKE LabeledExpand (RFC 9180 §4): HKDF-Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id ||
/// label || info, L).
fn labeled_expand<const L: usize>(prk: &[u8], label: &[u8], info: &[u8]) -> Zeroizing<[u8; L]> {
    let mut full = Vec::with_capacity(19 + label.len() + info.len());
    // ok: L is 32 or 12 here
    full.extend_from_slice(&(L as u16).to_be_bytes());
    full.extend_from_slice(b"HPKE-v1");
    full.extend_from_slice(&SUITE_ID);
    full.extend_from_slice(label);
    full.extend_from_slice(info);
    let mut out = Zeroizing::new([0u8; L]);
    // ok: prk is an HKDF-SHA-256 PRK (32 bytes), L ≤ 32 is far below the 255 * 32 limit
    let hk = Hkdf::<Sha256>::from_prk(prk).unwrap_or_else(|_| unreachable!("32-byte prk"));
    // ok: L ≤ 32 bytes, far below HKDF-SHA-256's 255 * 32 output limit
    hk.expand(&full, out.as_mut())
        .unwrap_or_else(|_| unreachable!("short output"));
    out
}

/// HPKE's base-mode key schedule (RFC 9180 §5.1, mode_base, empty psk and psk_id) for
/// `shared_secret` and [`INFO`]: the AEAD key and base nonce (the only nonce used: one seal).
fn key_schedule(shared_secret: &[u8]) -> (Zeroizing<[u8; 32]>, Zeroizing<[u8; 12]>) {
    let psk_id_hash = labeled_extract(b"", b"psk_id_hash", b"");
    let info_hash = labeled_extract(b"", b"info_hash", INFO);
    let mut context = Vec::with_capacity(65);
    context.push(0x00); // mode_base
    context.extend_from_slice(&psk_id_hash);
    context.extend_from_slice(&info_hash);
    let secret = labeled_extract(shared_secret, b"secret", b"");
    (
        labeled_expand::<32>(&secret, b"key", &context),
        labeled_expand::<12>(&secret, b"base_nonce", &context),
    )
}

/// Wraps `file_key` to `recipient` (HPKE SealBase) with 64 bytes of encapsulation randomness.
pub(crate) fn wrap(
    recipient: &HybridRecipient,
    randomness: [u8; ENCAP_RANDOM_LEN],
    file_key: &FileKey,
) -> Result<Stanza, Error> {
    let randomness = Zeroizing::new(randomness);
    let (enc, shared) = recipient.encapsulate(&randomness)?;
    let (key, nonce) = key_schedule(shared.as_slice());
    let body = aead(&key)
        .encrypt(
            Nonce::from_slice(nonce.as_slice()),
            Payload {
                msg: file_key.as_ref(),
                aad: b"",
            },
        )
        .map_err(|_| Error::Usage("encryption failed".into()))?;
    Ok(Stanza {
        tag: TAG.into(),
        args: vec![base64::encode(enc.as_slice())],
        body,
    })
}

/// Tries `identity` on an `mlkem768x25519` stanza (HPKE OpenBase). `Ok(None)` if it is for
/// someone else (ML-KEM's implicit rejection makes a wrong key look like a bad tag).
/// A malformed stanza (argument count, `enc` not canonical base64 of 1120 bytes, a body that
/// is not 32 bytes, an all-zero X25519 shared secret) is [`Error::HeaderMalformed`].
pub(crate) fn unwrap(stanza: &Stanza, identity: &HybridIdentity) -> Result<Option<FileKey>, Error> {
    let [enc] = stanza.args.as_slice() else {
        return Err(Error::header(
            "mlkem768x25519 stanza needs exactly 1 argument",
        ));
    };
    let enc = base64::decode_exact::<ENC_LEN>(enc)
        .ok_or_else(|| Error::header("mlkem768x25519 enc is not canonical base64 of 1120 bytes"))?;
    if stanza.body.len() != FILE_KEY_LEN + 16 {
        return Err(Error::header("mlkem768x25519 stanza body is not 32 bytes"));
    }
    let shared = identity.key.decapsulate(&enc)?.ok_or_else(|| {
        Error::header("mlkem768x25519 enc has a low-order X25519 share (all-zero shared secret)")
    })?;
    let (key, nonce) = key_schedule(shared.as_slice());
    match aead(&key).decrypt(
        Nonce::from_slice(nonce.as_slice()),
        Payload {
            msg: &stanza.body,
            aad: b"",
        },
    ) {
        Ok(pt) => {
            let pt = Zeroizing::new(pt);
            let mut fk = FileKey::default();
            fk.copy_from_slice(&pt);
            Ok(Some(fk))
        }
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of C2SP age.md: (identity, recipient).
    fn spec_example() -> (&'static str, &'static str) {
        let text = include_str!("../../../tests/vectors/age-keys/hybrid_spec_example.txt");
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        (
            lines.next().expect("identity line"),
            lines.next().expect("recipient line"),
        )
    }

    fn file_key() -> FileKey {
        FileKey::new(*b"YELLOW SUBMARINE")
    }

    #[test]
    fn spec_example_identity_derives_the_spec_recipient() {
        let (sk, pk) = spec_example();
        assert_eq!(pk.len(), 1959);
        let id = parse_identity(sk).expect("identity");
        assert_eq!(format_recipient(&id.recipient()), pk);
        assert_eq!(format_identity(&id).as_str(), sk);
        let rc = parse_recipient(pk).expect("recipient");
        assert_eq!(format_recipient(&rc), pk);
    }

    #[test]
    fn wrap_then_unwrap_and_someone_else() {
        let id = HybridIdentity::from_seed([3; 32]).expect("linked");
        let stanza = wrap(&id.recipient(), [9; 64], &file_key()).expect("wrap");
        assert_eq!(stanza.tag, TAG);
        assert_eq!(stanza.args.len(), 1);
        assert_eq!(stanza.args[0].len(), 1494);
        assert_eq!(stanza.body.len(), 32);
        // Deterministic from the randomness given.
        assert_eq!(
            wrap(&id.recipient(), [9; 64], &file_key()).expect("wrap"),
            stanza
        );
        let got = unwrap(&stanza, &id).expect("well-formed").expect("ours");
        assert_eq!(*got, *file_key());
        let other = HybridIdentity::from_seed([4; 32]).expect("linked");
        assert!(unwrap(&stanza, &other).expect("well-formed").is_none());
    }

    #[test]
    fn malformed_stanzas_are_header_failures() {
        let id = HybridIdentity::from_seed([3; 32]).expect("linked");
        let good = wrap(&id.recipient(), [9; 64], &file_key()).expect("wrap");
        let header = |s: &Stanza| matches!(unwrap(s, &id), Err(Error::HeaderMalformed(_)));
        let mut s = good.clone();
        s.args.push("x".into());
        assert!(header(&s), "extra argument");
        s.args.clear();
        assert!(header(&s), "no argument");
        let mut s = good.clone();
        s.body.pop();
        assert!(header(&s), "31-byte body");
        s.body.extend_from_slice(&[0, 0]);
        assert!(header(&s), "33-byte body");
        let enc = base64::decode(&good.args[0]).expect("b64");
        for len in [1119, 1121, 0] {
            let mut e = enc.clone();
            e.resize(len, 0);
            let mut s = good.clone();
            s.args[0] = base64::encode(&e);
            assert!(header(&s), "enc of {len} bytes");
        }
        let mut s = good.clone();
        s.args[0].push('=');
        assert!(header(&s), "padded base64");
        // A low-order X25519 share (here the point 0): all-zero shared secret.
        let mut e = enc.clone();
        e[1088..].fill(0);
        let mut s = good.clone();
        s.args[0] = base64::encode(&e);
        assert!(header(&s), "low-order share");
        // A corrupted ML-KEM ciphertext is implicitly rejected: someone else's stanza.
        let mut e = enc;
        e[5] ^= 1;
        let mut s = good;
        s.args[0] = base64::encode(&e);
        assert!(matches!(unwrap(&s, &id), Ok(None)));
    }

    #[test]
    fn bad_recipients_are_invalid_keys() {
        let (_, pk) = spec_example();
        let bytes = keytext::decode(pk, RECIPIENT_HRP, false).expect("decode");
        let invalid = |b: &[u8]| {
            let s = keytext::encode(RECIPIENT_HRP, b, false);
            match parse_recipient(&s) {
                Err(Error::InvalidKey(m)) => m,
                other => panic!("expected InvalidKey, got {other:?}"),
            }
        };
        assert!(invalid(&bytes[..1215]).contains("1216 bytes"));
        let mut long = bytes.to_vec();
        long.push(0);
        assert!(invalid(&long).contains("1216 bytes"));
        // Coefficients ≥ q = 3329 fail FIPS 203's modulus check.
        let mut m = bytes.to_vec();
        m[..1152].fill(0xff);
        assert!(invalid(&m).contains("ML-KEM"));
        // A low-order X25519 part (u = 0 and u = 1 are points of order 2 and 4).
        for x in [[0u8; 32], {
            let mut one = [0u8; 32];
            one[0] = 1;
            one
        }] {
            let mut b = bytes.to_vec();
            b[1184..].copy_from_slice(&x);
            assert!(invalid(&b).contains("low-order"));
        }
        assert!(matches!(
            parse_recipient(&pk.to_uppercase()),
            Err(Error::InvalidKey(_))
        ));
        assert!(matches!(
            parse_recipient(&pk[..pk.len() - 1]),
            Err(Error::InvalidKey(_))
        ));
        // An identity's HRP is not a recipient's.
        let s = keytext::encode(IDENTITY_HRP, &bytes, false);
        assert!(matches!(parse_recipient(&s), Err(Error::InvalidKey(_))));
    }

    #[test]
    fn bad_identities_are_invalid_keys_that_do_not_repeat_the_key() {
        let (sk, _) = spec_example();
        assert!(matches!(
            parse_identity(&sk.to_lowercase()),
            Err(Error::InvalidKey(_))
        ));
        let short = keytext::encode(IDENTITY_HRP, &[1; 31], true);
        let long = keytext::encode(IDENTITY_HRP, &[1; 33], true);
        for s in [short, long] {
            match parse_identity(&s) {
                Err(Error::InvalidKey(m)) => assert!(!m.contains(&s[19..]), "{m}"),
                other => panic!("expected InvalidKey, got {:?}", other.map(|_| ())),
            }
        }
        let mut flipped = sk.to_string().into_bytes();
        flipped[30] = if flipped[30] == b'Q' { b'P' } else { b'Q' };
        let flipped = String::from_utf8(flipped).expect("ascii");
        match parse_identity(&flipped) {
            Err(Error::InvalidKey(m)) => assert!(!m.contains(&flipped[19..]), "{m}"),
            other => panic!("expected InvalidKey, got {:?}", other.map(|_| ())),
        }
    }
}
