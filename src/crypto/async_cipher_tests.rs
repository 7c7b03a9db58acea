//! The split for an asynchronous cipher (the SDK's WebCrypto path): an encryptor that hands
//! its chunks out (`defer_seals`) and a decryptor that takes chunks opened ahead of time
//! (`plan_opens` / `prefetched`) give the same bytes, digests and errors as the plain ones.
//! The "outside" cipher here is RustCrypto's, called as an adapter would call WebCrypto.

#![cfg(test)]

use super::keys::aead;
use super::{DecryptOptions, Decryptor, Encryptor, Error, FixedRandom, Format, Identity};
use chacha20poly1305::aead::AeadInPlace;

fn rng() -> FixedRandom {
    FixedRandom::new((0..4096u32).map(|i| (i * 7 + 3) as u8).collect::<Vec<_>>())
}

fn identity() -> Identity {
    Identity::generate_x25519_with_rng(&mut FixedRandom::new([9u8; 32])).unwrap()
}

fn plain(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + (i >> 8)) as u8).collect()
}

/// Encrypts `data` in writes of `write` bytes, each flushed; `defer`: chunks sealed outside,
/// every third left to the encryptor (as when the outside cipher fails).
fn encrypt(format: Format, data: &[u8], write: usize, defer: bool) -> (Vec<u8>, [u8; 32]) {
    let r = identity().to_recipient().unwrap();
    let mut e = Encryptor::with_rng(format, &[r], &mut rng()).unwrap();
    if defer {
        e = e.defer_seals();
    }
    let mut wire = Vec::new();
    let mut step = |e: &mut Encryptor, out: Vec<u8>| {
        let mut out = out;
        if defer {
            let key = aead(&e.payload_key());
            let jobs = e.seal_jobs();
            let mut done = Vec::new();
            for (i, j) in jobs.iter().enumerate() {
                let sealed = i % 3 != 2;
                if sealed {
                    let (p, t) = out[j.start..j.start + j.len + 16].split_at_mut(j.len);
                    let tag = key
                        .encrypt_in_place_detached((&j.nonce).into(), b"", p)
                        .unwrap();
                    t.copy_from_slice(&tag);
                }
                done.push(sealed);
            }
            e.complete_seals(&mut out, &done).unwrap();
            assert!(e.seal_jobs().is_empty());
        }
        wire.extend_from_slice(&out);
    };
    for w in data.chunks(write.max(1)) {
        let mut out = Vec::new();
        e.update(w, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        step(&mut e, out);
    }
    let mut out = Vec::new();
    e.finish(&mut out).unwrap();
    step(&mut e, out);
    (wire, e.tag_digest())
}

/// Decrypts `wire` fed in pieces of `piece` bytes; `prefetch`: chunks opened outside first
/// (plans of at most 3 chunks).
fn decrypt(wire: &[u8], piece: usize, prefetch: bool) -> (Vec<u8>, Result<(), Error>) {
    let mut d = Decryptor::new(&[identity()], DecryptOptions::default()).unwrap();
    let mut out = Vec::new();
    let mut run = || -> Result<(), Error> {
        for mut p in wire.chunks(piece) {
            while !p.is_empty() {
                if !prefetch || !d.in_payload() {
                    let take = if prefetch { p.len().min(100) } else { p.len() };
                    d.update(&p[..take], &mut out)?;
                    p = &p[take..];
                    continue;
                }
                let key = aead(&d.payload_key().unwrap());
                let (jobs, upto) = d.plan_opens(p, 3, 1);
                for j in jobs {
                    let (ct, tag) = j.chunk.split_at(j.chunk.len() - 16);
                    let mut buf = ct.to_vec();
                    if key
                        .decrypt_in_place_detached((&j.nonce).into(), b"", &mut buf, tag.into())
                        .is_ok()
                    {
                        d.prefetched(j, buf);
                    }
                }
                d.update(&p[..upto], &mut out)?;
                p = &p[upto..];
            }
        }
        d.finish(&mut out)
    };
    let r = run();
    (out, r)
}

#[test]
fn deferred_seals_give_the_same_bytes() {
    for format in [Format::Age, Format::AgeRt] {
        for size in [0, 1, 65535, 65536, 65537, 200_000, 3 * 65536] {
            for write in [1000, 65536, 100_000, 1 << 20] {
                let data = plain(size);
                let sync = encrypt(format, &data, write, false);
                let deferred = encrypt(format, &data, write, true);
                assert!(sync == deferred, "{format:?} {size} B in writes of {write}");
                for piece in [7, 4096, 65552, 200_000] {
                    let (out, r) = decrypt(&sync.0, piece, true);
                    r.unwrap();
                    assert!(out == data, "{format:?} {size} B, pieces of {piece}");
                }
            }
        }
    }
}

#[test]
fn a_tampered_chunk_fails_the_same_and_releases_nothing_of_it() {
    for format in [Format::Age, Format::AgeRt] {
        let data = plain(5 * 65536 + 10);
        let (wire, _) = encrypt(format, &data, 65536, false);
        for at in [wire.len() - 65536 - 100, wire.len() - 5, wire.len() / 2] {
            let mut bad = wire.clone();
            bad[at] ^= 1;
            for piece in [1000, 65552, 1 << 20] {
                let (want_out, want) = decrypt(&bad, piece, false);
                let (out, got) = decrypt(&bad, piece, true);
                assert_eq!(
                    got, want,
                    "{format:?}: flipped byte {at}, pieces of {piece}"
                );
                assert!(got.is_err());
                assert!(out == want_out, "{format:?}: the same plaintext released");
            }
        }
    }
}

#[test]
fn a_prefetched_plaintext_goes_only_with_its_own_chunk() {
    let data = plain(3 * 65536 + 1);
    let (wire, _) = encrypt(Format::Age, &data, 65536, false);
    let mut d = Decryptor::new(&[identity()], DecryptOptions::default()).unwrap();
    let mut out = Vec::new();
    let head = wire.len() - 3 * 65552 - 17;
    d.update(&wire[..head], &mut out).unwrap();
    assert!(d.in_payload());
    let (jobs, upto) = d.plan_opens(&wire[head..], 8, 1);
    assert_eq!((jobs.len(), upto), (3, wire.len() - head));
    // a "plaintext" handed back for chunk 0, and for chunk 1, which then changes on the wire
    d.prefetched(jobs[0].clone(), vec![0xAA; 65536]);
    d.prefetched(jobs[1].clone(), vec![0xBB; 65536]);
    let mut tampered = wire.clone();
    tampered[head + 65552 + 5] ^= 1;
    let e = d.update(&tampered[head..], &mut out).unwrap_err();
    // chunk 0: its forged plaintext is released (the adapter vouches for what it hands back),
    // chunk 1 (changed on the wire): opened here, and it fails
    assert_eq!(e, Error::ChunkAuth { index: 1 });
    assert_eq!(out, vec![0xAA; 65536]);
}

#[test]
fn a_seekable_deferred_encryptor_seals_again_the_same_bytes() {
    for format in [Format::Age, Format::AgeRt] {
        let data = plain(3 * 65536 + 777);
        let r = identity().to_recipient().unwrap();
        let mut e = Encryptor::with_rng(format, &[r], &mut rng())
            .unwrap()
            .seekable()
            .defer_seals();
        let mut wire = Vec::new();
        e.flush(&mut wire).unwrap();
        let key = aead(&e.payload_key());
        let mut pieces = data.chunks(50_000).map(Some).collect::<Vec<_>>();
        pieces.push(None);
        for piece in pieces {
            let mut out = Vec::new();
            match piece {
                Some(p) => {
                    e.update(p, &mut out).unwrap();
                    e.flush(&mut out).unwrap();
                }
                None => e.finish(&mut out).unwrap(),
            }
            // a reseal while chunks are out covers only what was given back
            let done = wire.len() as u64;
            let jobs = e.seal_jobs();
            if !jobs.is_empty() {
                assert!(e.reseal(e.header_len(), done).is_ok());
            }
            for j in &jobs {
                let (p, t) = out[j.start..j.start + j.len + 16].split_at_mut(j.len);
                let tag = key
                    .encrypt_in_place_detached((&j.nonce).into(), b"", p)
                    .unwrap();
                t.copy_from_slice(&tag);
            }
            e.complete_seals(&mut out, &vec![true; jobs.len()]).unwrap();
            wire.extend_from_slice(&out);
        }
        let head = e.header_len();
        let mut r = e.reseal(head, wire.len() as u64).unwrap();
        let (start, end) = r.plaintext();
        let mut again = Vec::new();
        r.push(&data[start as usize..end as usize], &mut again)
            .unwrap();
        r.finish(&mut again).unwrap();
        assert!(again == wire[head as usize..], "{format:?}");
    }
}
