//! The `X25519` recipient stanza and `age1...` / `AGE-SECRET-KEY-1...` keys
//! (C2SP age §"The X25519 recipient type").
//!
//! `-> X25519 <base64 32-byte ephemeral share>`; wrap key = HKDF-SHA-256(ikm = shared secret,
//! salt = ephemeral share || recipient, info = "age-encryption.org/v1/X25519"); body =
//! ChaCha20-Poly1305(wrap key, zero nonce, file key). An all-zero shared secret is rejected.

use super::super::base64;
use super::super::header::Stanza;
use super::super::keys::{aead, hkdf32, FileKey, FILE_KEY_LEN};
use super::super::Error;
use super::keytext;
use chacha20poly1305::aead::Aead;
use chacha20poly1305::Nonce;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

pub(crate) const TAG: &str = "X25519";
const INFO: &[u8] = b"age-encryption.org/v1/X25519";
const RECIPIENT_HRP: &str = "age";
const IDENTITY_HRP: &str = "age-secret-key-";

fn decode32(s: &str, hrp: &str, upper: bool) -> Result<[u8; 32], Error> {
    keytext::decode(s, hrp, upper)?
        .as_slice()
        .try_into()
        .map_err(|_| Error::InvalidKey("key is not 32 bytes".into()))
}

/// Parses `age1...`.
pub(crate) fn parse_recipient(s: &str) -> Result<PublicKey, Error> {
    Ok(PublicKey::from(decode32(s, RECIPIENT_HRP, false)?))
}

/// Formats `age1...`.
pub(crate) fn format_recipient(pk: &PublicKey) -> String {
    keytext::encode(RECIPIENT_HRP, pk.as_bytes(), false)
}

/// Parses `AGE-SECRET-KEY-1...`.
pub(crate) fn parse_identity(s: &str) -> Result<StaticSecret, Error> {
    let bytes = Zeroizing::new(decode32(s, IDENTITY_HRP, true)?);
    Ok(StaticSecret::from(*bytes))
}

/// Formats `AGE-SECRET-KEY-1...`.
pub(crate) fn format_identity(sk: &StaticSecret) -> String {
    keytext::encode(IDENTITY_HRP, &Zeroizing::new(sk.to_bytes())[..], true)
}

fn wrap_key(shared: &[u8; 32], share: &[u8; 32], recipient: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(share);
    salt[32..].copy_from_slice(recipient);
    hkdf32(shared, &salt, INFO)
}

/// Wraps `file_key` to `recipient` with the given ephemeral secret.
pub(crate) fn wrap(
    recipient: &PublicKey,
    ephemeral: [u8; 32],
    file_key: &FileKey,
) -> Result<Stanza, Error> {
    let eph = StaticSecret::from(ephemeral);
    let share = PublicKey::from(&eph);
    let shared = eph.diffie_hellman(recipient);
    if !shared.was_contributory() {
        return Err(Error::InvalidKey(
            "recipient is a low-order point (all-zero shared secret)".into(),
        ));
    }
    let key = wrap_key(shared.as_bytes(), share.as_bytes(), recipient.as_bytes());
    let body = aead(&key)
        .encrypt(Nonce::from_slice(&[0; 12]), file_key.as_ref())
        .map_err(|_| Error::Usage("encryption failed".into()))?;
    Ok(Stanza {
        tag: TAG.into(),
        args: vec![base64::encode(share.as_bytes())],
        body,
    })
}

/// Tries `identity` on an X25519 stanza. `Ok(None)` if it is for someone else.
pub(crate) fn unwrap(stanza: &Stanza, identity: &StaticSecret) -> Result<Option<FileKey>, Error> {
    let [share] = stanza.args.as_slice() else {
        return Err(Error::header("X25519 stanza needs exactly 1 argument"));
    };
    let share = base64::decode_exact::<32>(share)
        .ok_or_else(|| Error::header("X25519 share is not canonical base64 of 32 bytes"))?;
    if stanza.body.len() != FILE_KEY_LEN + 16 {
        return Err(Error::header("X25519 stanza body is not 32 bytes"));
    }
    let shared = identity.diffie_hellman(&PublicKey::from(share));
    if !shared.was_contributory() {
        return Err(Error::header(
            "X25519 share is a low-order point (all-zero shared secret)",
        ));
    }
    let recipient = PublicKey::from(identity);
    let key = wrap_key(shared.as_bytes(), &share, recipient.as_bytes());
    match aead(&key).decrypt(Nonce::from_slice(&[0; 12]), stanza.body.as_slice()) {
        Ok(pt) => {
            let pt = Zeroizing::new(pt);
            let mut fk = FileKey::default();
            fk.copy_from_slice(&pt);
            Ok(Some(fk))
        }
        Err(_) => Ok(None),
    }
}
