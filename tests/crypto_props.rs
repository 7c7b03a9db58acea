//! Property tests of the streaming core: random plaintexts and flush boundaries round-trip;
//! flipping any byte makes decryption fail; cutting the stream anywhere is never a success;
//! age-rt releases each flushed record at once; released plaintext is always a prefix.

mod crypto_support;

use crypto_support::{decrypt_all, encrypt_pieces};
use httpipe::crypto::{DecryptOptions, Encryptor, Error, FixedRandom, Format, Identity, Recipient};
use proptest::prelude::*;
use std::sync::OnceLock;

fn identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| Identity::generate_x25519_with_rng(&mut FixedRandom::new([7u8; 32])).unwrap())
}

fn encryptor(format: Format, armor: bool) -> Encryptor {
    let r: Recipient = identity().to_recipient().unwrap();
    let e = Encryptor::new(format, &[r]).unwrap();
    if armor {
        e.armored()
    } else {
        e
    }
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![Just(Format::Age), Just(Format::AgeRt)]
}

/// Plaintexts around the 64 KiB chunk size and its multiples, and small ones.
fn plaintext() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        (0usize..3, 0usize..40).prop_flat_map(|(k, d)| {
            let n = (k * 65536 + d).saturating_sub(20);
            prop::collection::vec(any::<u8>(), n..n + 40)
        }),
        prop::collection::vec(any::<u8>(), 0..200_000),
    ]
}

fn pieces() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![Just(0usize), 1usize..100, 60_000usize..140_000],
        0..6,
    )
}

fn ids() -> Vec<Identity> {
    vec![identity().clone()]
}

proptest! {
    // 128 cases in CI; PROPTEST_CASES=N for a longer soak.
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() { ProptestConfig::default().cases } else { 128 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn round_trip(fmt in format(), plain in plaintext(), flushes in pieces(), armor in any::<bool>(), step in 1usize..100_000) {
        let ct = encrypt_pieces(encryptor(fmt, armor), &plain, &flushes);
        let (out, r) = decrypt_all(&ids(), DecryptOptions::default(), &ct, step);
        prop_assert_eq!(r, Ok(()));
        prop_assert!(out == plain);
    }

    #[test]
    fn any_flipped_byte_fails(fmt in format(), plain in plaintext(), flushes in pieces(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut ct = encrypt_pieces(encryptor(fmt, false), &plain, &flushes);
        let i = pos.index(ct.len());
        ct[i] ^= 1 << bit;
        let (out, r) = decrypt_all(&ids(), DecryptOptions::default(), &ct, 65_000);
        prop_assert!(r.is_err(), "flipping byte {} of {} was not detected", i, ct.len());
        prop_assert!(plain.starts_with(&out), "released plaintext is not a prefix of the original");
    }

    #[test]
    fn any_cut_is_never_success(fmt in format(), plain in plaintext(), flushes in pieces(), pos in any::<prop::sample::Index>()) {
        let ct = encrypt_pieces(encryptor(fmt, false), &plain, &flushes);
        let cut = pos.index(ct.len()); // 0..len-1: always loses at least one byte
        let (out, r) = decrypt_all(&ids(), DecryptOptions::default(), &ct[..cut], 30_000);
        prop_assert!(plain.starts_with(&out));
        let err = r.expect_err("a cut stream decrypted successfully");
        let payload_start = ct.len() - payload_len(fmt, &plain, &flushes);
        if cut >= payload_start {
            match fmt {
                // age-rt always knows: records are length-prefixed and the final one is flagged.
                Format::AgeRt => prop_assert_eq!(err, Error::Truncated),
                // age v1 can't tell a cut inside the last chunk from a corrupted last chunk.
                Format::Age => prop_assert!(matches!(err, Error::Truncated | Error::ChunkAuth { .. }), "{:?}", err),
            }
        } else {
            prop_assert!(matches!(err, Error::HeaderMalformed(_)), "{:?}", err);
        }
    }

    /// Resume (PROTOCOL.md §12.3): cut the ciphertext anywhere (twice), feed it again from
    /// `resume_point()`: the plaintext comes out exactly once, in order; a byte flipped in
    /// the resumed part still fails.
    #[test]
    fn resuming_at_the_resume_point_releases_every_byte_once(fmt in format(), plain in plaintext(), flushes in pieces(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..3), step in 1usize..70_000, flip in any::<prop::sample::Index>()) {
        let ct = encrypt_pieces(encryptor(fmt, false), &plain, &flushes);
        let mut dec = httpipe::crypto::Decryptor::new(&ids(), DecryptOptions::default()).unwrap();
        let mut out = Vec::new();
        let mut at = 0usize;
        for cut in &cuts {
            let to = at.max(cut.index(ct.len() + 1));
            for piece in ct[at..to].chunks(step) {
                dec.update(piece, &mut out).unwrap();
            }
            let asked = dec.resume_offset();
            let point = dec.resume_point().expect("a binary stream resumes") as usize;
            prop_assert_eq!(asked, Some(point as u64), "resume_offset() is resume_point() without the drop");
            prop_assert!(point <= to);
            prop_assert!(plain.starts_with(&out), "only authenticated plaintext, in order");
            at = point;
        }
        let mut tampered = ct.clone();
        // (nothing left to flip when the cut fell after the final record)
        let flip_at = if at < ct.len() { at + flip.index(ct.len() - at) } else { 0 };
        let mut twin = httpipe::crypto::Decryptor::new(&ids(), DecryptOptions::default()).unwrap();
        let mut twin_out = Vec::new();
        twin.update(&ct[..at], &mut twin_out).unwrap();
        let _ = twin.resume_point();
        if at < ct.len() {
            tampered[flip_at] ^= 1;
        }
        for piece in ct[at..].chunks(step) {
            dec.update(piece, &mut out).unwrap();
        }
        dec.finish(&mut out).unwrap();
        prop_assert_eq!(&out, &plain);
        if at < ct.len() {
            let r = twin.update(&tampered[at..], &mut twin_out).and_then(|_| twin.finish(&mut twin_out));
            prop_assert!(r.is_err(), "a flipped byte after the resume point must fail");
        }
    }

    #[test]
    fn age_rt_releases_each_flush_immediately(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..70_000), 0..5)) {
        let mut enc = encryptor(Format::AgeRt, false);
        let mut dec = httpipe::crypto::Decryptor::new(&ids(), DecryptOptions::default()).unwrap();
        let (mut sent, mut got) = (Vec::new(), Vec::new());
        let mut wire = Vec::new();
        enc.flush(&mut wire).unwrap(); // emits the header (and nonce) only
        dec.update(&wire, &mut got).unwrap();
        prop_assert!(got.is_empty());
        for c in &chunks {
            let mut wire = Vec::new();
            enc.update(c, &mut wire).unwrap();
            enc.flush(&mut wire).unwrap();
            sent.extend_from_slice(c);
            dec.update(&wire, &mut got).unwrap();
            prop_assert!(got == sent, "plaintext of a flushed record was held back");
        }
        let mut wire = Vec::new();
        enc.finish(&mut wire).unwrap();
        prop_assert_eq!(wire.len(), 20); // the empty final record
        dec.update(&wire, &mut got).unwrap();
        dec.finish(&mut got).unwrap();
        prop_assert!(got == sent);
    }
}

/// Bytes after the header and the 16-byte nonce.
fn payload_len(fmt: Format, plain: &[u8], flushes: &[usize]) -> usize {
    match fmt {
        Format::Age => {
            let chunks = plain.len().div_ceil(65536).max(1);
            plain.len() + 16 * chunks
        }
        Format::AgeRt => {
            // Mirror the writer: each flush emits its buffered bytes (split at 64 KiB).
            let mut records = 0;
            let mut rest = plain.len();
            let mut buffered = 0usize;
            for &n in flushes {
                let n = n.min(rest);
                rest -= n;
                buffered += n;
                records += buffered / 65536;
                buffered %= 65536;
                if buffered > 0 {
                    records += 1;
                    buffered = 0;
                }
            }
            buffered += rest;
            records += buffered / 65536 + usize::from(!buffered.is_multiple_of(65536)) + 1;
            plain.len() + 20 * records
        }
    }
}

#[test]
fn errors_are_sticky_and_finish_is_once() {
    let ct = encrypt_pieces(encryptor(Format::AgeRt, false), b"hello", &[]);
    let mut dec = httpipe::crypto::Decryptor::new(&ids(), DecryptOptions::default()).unwrap();
    let mut out = Vec::new();
    dec.update(&ct[..ct.len() - 1], &mut out).unwrap();
    assert_eq!(dec.finish(&mut out), Err(Error::Truncated));
    assert_eq!(dec.update(b"x", &mut out), Err(Error::Truncated));
    let mut enc = encryptor(Format::Age, false);
    enc.finish(&mut out).unwrap();
    assert!(matches!(enc.update(b"x", &mut out), Err(Error::Usage(_))));
}

#[test]
fn exact_multiple_of_64k_ends_with_full_final_chunk() {
    let plain = vec![9u8; 2 * 65536];
    let ct = encrypt_pieces(encryptor(Format::Age, false), &plain, &[65536]);
    // header + nonce + exactly two full chunks, no empty third chunk
    let header_len = ct.len() - 16 - 2 * (65536 + 16);
    assert!(ct[..header_len].ends_with(b"\n") && header_len < 300);
    let (out, r) = decrypt_all(&ids(), DecryptOptions::default(), &ct, 1 << 20);
    assert_eq!(r, Ok(()));
    assert_eq!(out, plain);
}
