//! Key derivation shared by age v1 and age-rt (C2SP age §"Header", §"Payload").

use super::aead::PayloadAead;
use chacha20poly1305::{aead::KeyInit, ChaCha20Poly1305, Key};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

/// Length of the file key in bytes.
pub(crate) const FILE_KEY_LEN: usize = 16;
/// Length of the payload nonce that follows the header.
pub(crate) const PAYLOAD_NONCE_LEN: usize = 16;

/// The 16-byte symmetric file key, wiped on drop.
pub(crate) type FileKey = Zeroizing<[u8; FILE_KEY_LEN]>;

/// HKDF-SHA-256 with a 32-byte output.
pub(crate) fn hkdf32(ikm: &[u8], salt: &[u8], info: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut out = Zeroizing::new([0u8; 32]);
    // ok: 32 bytes is far below HKDF-SHA-256's 255*32 output limit
    let _ = Hkdf::<Sha256>::new(Some(salt), ikm).expand(info, out.as_mut());
    out
}

/// ChaCha20-Poly1305 under a 32-byte key.
pub(crate) fn aead(key: &[u8; 32]) -> ChaCha20Poly1305 {
    ChaCha20Poly1305::new(Key::from_slice(key))
}

/// The payload AEAD: key = HKDF-SHA-256(ikm = file key, salt = nonce, info = "payload").
pub(crate) fn payload_aead(file_key: &FileKey, nonce: &[u8; PAYLOAD_NONCE_LEN]) -> PayloadAead {
    PayloadAead::new(hkdf32(file_key.as_ref(), nonce, b"payload"))
}

/// HMAC-SHA-256 over the header bytes up to and including `---`, keyed with
/// HKDF-SHA-256(ikm = file key, salt = empty, info = "header").
pub(crate) fn header_mac(file_key: &FileKey, header: &[u8]) -> Hmac<Sha256> {
    let key = hkdf32(file_key.as_ref(), &[], b"header");
    // ok: HMAC accepts keys of any length
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.as_ref())
        .unwrap_or_else(|_| unreachable!("hmac key"));
    mac.update(header);
    mac
}

/// The delivery-receipt key of a transfer (PROTOCOL.md §12.2): HKDF-SHA-256(ikm = file key,
/// salt = empty, info = "httpipe receipt v1" || transfer id).
pub(crate) fn receipt_key(file_key: &FileKey, transfer_id: &str) -> Zeroizing<[u8; 32]> {
    use crate::protocol::hello::RECEIPT_KEY_INFO;
    let mut info = RECEIPT_KEY_INFO.to_vec();
    info.extend_from_slice(transfer_id.as_bytes());
    hkdf32(file_key.as_ref(), &[], &info)
}
