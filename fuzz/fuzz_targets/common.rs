//! Shared by the fuzz targets: a fixed identity, deterministic encryption, and a decryption
//! driver that feeds input in pieces and checks the core's invariants.
#![allow(dead_code)]

use httpipe::crypto::{
    DecryptOptions, Decryptor, Encryptor, Error, FixedRandom, Format, Identity, Recipient,
};
use std::sync::OnceLock;

pub fn identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| {
        Identity::generate_x25519_with_rng(&mut FixedRandom::new([42u8; 32])).unwrap()
    })
}

/// A fixed hybrid post-quantum identity, so `mlkem768x25519` stanzas are parsed and opened.
pub fn pq_identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| {
        Identity::generate_hybrid_with_rng(&mut FixedRandom::new([43u8; 32])).unwrap()
    })
}

/// Identities for decryption: the X25519 key, the post-quantum key and a passphrase (scrypt
/// capped at 2^4 so a fuzzed header can't make an iteration slow).
pub fn decrypt(data: &[u8], step: usize) -> (Vec<u8>, Result<(), Error>) {
    let ids = [
        identity().clone(),
        pq_identity().clone(),
        Identity::passphrase("fuzz"),
    ];
    let options = DecryptOptions {
        max_scrypt_log2_n: 4,
        ..DecryptOptions::default()
    };
    let mut dec = Decryptor::new(&ids, options).unwrap();
    let mut out = Vec::new();
    for piece in data.chunks(step.max(1)) {
        if let Err(e) = dec.update(piece, &mut out) {
            // Sticky: the same error again, and nothing more released.
            let before = out.len();
            assert_eq!(dec.update(b"x", &mut out), Err(e.clone()));
            assert_eq!(out.len(), before);
            return (out, Err(e));
        }
    }
    let r = dec.finish(&mut out);
    (out, r)
}

/// Deterministic encryption of `plain` to the fixed identity with flushes after `pieces`.
pub fn encrypt(format: Format, plain: &[u8], pieces: &[usize]) -> Vec<u8> {
    let r: Recipient = identity().to_recipient().unwrap();
    let mut rng = FixedRandom::new([1u8; 64]);
    let mut enc = Encryptor::with_rng(format, &[r], &mut rng).unwrap();
    let mut out = Vec::new();
    let mut rest = plain;
    for &n in pieces {
        let n = n.min(rest.len());
        enc.update(&rest[..n], &mut out).unwrap();
        enc.flush(&mut out).unwrap();
        rest = &rest[n..];
    }
    enc.update(rest, &mut out).unwrap();
    enc.finish(&mut out).unwrap();
    out
}

/// The header + nonce of a deterministic stream (what `flush` emits first).
pub fn prefix(format: Format) -> Vec<u8> {
    let r: Recipient = identity().to_recipient().unwrap();
    let mut enc = Encryptor::with_rng(format, &[r], &mut FixedRandom::new([1u8; 64])).unwrap();
    let mut out = Vec::new();
    enc.flush(&mut out).unwrap();
    out
}

/// Payload target body. Mode byte even: `data` is a raw payload after a valid header (no
/// panic, bounded buffering). Odd: `data` is a plaintext that is encrypted with flushes,
/// has one byte XORed, and must then fail to decrypt, releasing only a prefix of it.
pub fn payload(format: Format, data: &[u8]) {
    let [mode, step, a, b, c, rest @ ..] = data else {
        return;
    };
    let step = 1 + (*step as usize) * 521;
    if mode % 2 == 0 {
        let mut input = prefix(format);
        input.extend_from_slice(rest);
        let (out, _) = decrypt(&input, step);
        assert!(out.len() <= rest.len());
        return;
    }
    // Lengths cluster around 0, 64 KiB and 128 KiB (the chunk boundaries), +-300 bytes.
    if rest.is_empty() {
        return;
    }
    let len = ((*a as usize % 3) * 65536 + usize::from(*c) * 3).saturating_sub(300);
    let plain: Vec<u8> = rest.iter().copied().cycle().take(len).collect();
    let pieces: Vec<usize> = rest.iter().take(6).map(|&x| x as usize * 300).collect();
    let mut ct = encrypt(format, &plain, &pieces);
    let (out, r) = decrypt(&ct, step);
    assert_eq!(r, Ok(()));
    assert!(out == plain);
    let pos = (u16::from_le_bytes([*b, *c]) as usize * 97) % ct.len();
    let mask = b.wrapping_mul(31) | 1;
    ct[pos] ^= mask;
    let (out, r) = decrypt(&ct, step);
    assert!(r.is_err(), "flipped byte {pos} not detected");
    assert!(plain.starts_with(&out));
}
