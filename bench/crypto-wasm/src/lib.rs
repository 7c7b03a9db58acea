//! Bench entry points: the same push API the SDK uses, driven from Node (bench/crypto-wasm.mjs).

use httpipe::crypto::{DecryptOptions, Decryptor, Encryptor, FixedRandom, Format, Identity};
use wasm_bindgen::prelude::*;

const CHUNK: usize = 64 * 1024;

fn identity() -> Identity {
    Identity::generate_x25519_with_rng(&mut FixedRandom::new([3u8; 32])).unwrap()
}

/// Encrypts `plain` in 64 KiB pieces (age-rt: one record per piece) to a fixed X25519 key.
#[wasm_bindgen]
pub fn encrypt(age_rt: bool, plain: &[u8]) -> Vec<u8> {
    let fmt = if age_rt { Format::AgeRt } else { Format::Age };
    let r = identity().to_recipient().unwrap();
    let mut enc = Encryptor::with_rng(fmt, &[r], &mut FixedRandom::new([5u8; 64])).unwrap();
    let mut out = Vec::with_capacity(plain.len() + plain.len() / 1000 + 4096);
    for piece in plain.chunks(CHUNK) {
        enc.update(piece, &mut out).unwrap();
        enc.flush(&mut out).unwrap();
    }
    enc.finish(&mut out).unwrap();
    out
}

/// Decrypts `ct` fed in 64 KiB pieces; returns the plaintext length.
#[wasm_bindgen]
pub fn decrypt(ct: &[u8]) -> usize {
    let mut dec = Decryptor::new(&[identity()], DecryptOptions::default()).unwrap();
    let mut out = Vec::with_capacity(ct.len());
    for piece in ct.chunks(CHUNK) {
        dec.update(piece, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    out.len()
}

/// The fixed identity (`AGE-SECRET-KEY-1...`) the bench encrypts to, so `age -d` can check
/// the wasm output.
#[wasm_bindgen]
pub fn identity_string() -> String {
    identity().to_secret_string().unwrap().to_string()
}

/// One scrypt derivation at log2 N = 18 (plus a trivial header).
#[wasm_bindgen]
pub fn scrypt18() {
    Encryptor::with_passphrase(Format::AgeRt, "bench").unwrap();
}

/// ChaCha20 keystream XOR alone over `data` in 64 KiB chunks (returns a checksum byte).
#[wasm_bindgen]
pub fn chacha20_only(data: &[u8]) -> u8 {
    use chacha20::cipher::{KeyIvInit, StreamCipher};
    let mut buf = data.to_vec();
    for (i, c) in buf.chunks_mut(CHUNK).enumerate() {
        let mut nonce = [0u8; 12];
        nonce[3..11].copy_from_slice(&(i as u64).to_be_bytes());
        chacha20::ChaCha20::new(&[7u8; 32].into(), &nonce.into()).apply_keystream(c);
    }
    buf[0]
}

/// Poly1305 alone over `data` in 64 KiB chunks (returns a checksum byte).
#[wasm_bindgen]
pub fn poly1305_only(data: &[u8]) -> u8 {
    use poly1305::universal_hash::{KeyInit, UniversalHash};
    let mut x = 0u8;
    for c in data.chunks(CHUNK) {
        let mut p = poly1305::Poly1305::new(&[9u8; 32].into());
        p.update_padded(c);
        x ^= p.finalize()[0];
    }
    x
}
