//! Native throughput of the crypto core next to raw ChaCha20-Poly1305 over the same 64 KiB
//! chunks (the named peer: the upper bound our framing can reach), and one scrypt 2^18.
//! Prints medians of several runs. Run by bench/crypto.sh.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use httpipe::crypto::{
    DecryptOptions, Decryptor, Encryptor, FixedRandom, Format, Identity, Recipient,
};
use std::time::Instant;

const CHUNK: usize = 64 * 1024;
const RUNS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `peer` and `ours` alternately (the machine is shared: both see the same load) and
/// returns median MB/s (10^6 bytes/s) of each and the median of the per-pair ratios.
fn paired(bytes: usize, mut peer: impl FnMut(), mut ours: impl FnMut()) -> (f64, f64, f64) {
    peer();
    ours(); // warm up
    let (mut p, mut o, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t0 = Instant::now();
        peer();
        let t1 = Instant::now();
        ours();
        let t2 = Instant::now();
        let (pr, or) = (
            bytes as f64 / (t1 - t0).as_secs_f64() / 1e6,
            bytes as f64 / (t2 - t1).as_secs_f64() / 1e6,
        );
        p.push(pr);
        o.push(or);
        r.push(or / pr);
    }
    (median(p), median(o), median(r))
}

fn encrypt(format: Format, r: &Recipient, plain: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut enc = Encryptor::with_rng(
        format,
        std::slice::from_ref(r),
        &mut FixedRandom::new([5u8; 64]),
    )
    .unwrap();
    for piece in plain.chunks(CHUNK) {
        enc.update(piece, out).unwrap();
        enc.flush(out).unwrap(); // age-rt: one 64 KiB record per piece; age v1: no-op
    }
    enc.finish(out).unwrap();
}

fn decrypt(id: &Identity, ct: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut dec = Decryptor::new(std::slice::from_ref(id), DecryptOptions::default()).unwrap();
    for piece in ct.chunks(CHUNK) {
        dec.update(piece, out).unwrap();
    }
    dec.finish(out).unwrap();
}

fn main() {
    let mb: usize = std::env::var("BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let n = mb << 20;
    let plain: Vec<u8> = (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761) as u8)
        .collect();
    let id = Identity::generate_x25519_with_rng(&mut FixedRandom::new([3u8; 32])).unwrap();
    let r = id.to_recipient().unwrap();

    let aead = ChaCha20Poly1305::new(Key::from_slice(&[7u8; 32]));
    let mut buf = plain.clone();
    let mut tags = Vec::with_capacity(n / CHUNK + 1);
    let mut raw_seal = || {
        tags.clear();
        for (i, c) in buf.chunks_mut(CHUNK).enumerate() {
            let mut nonce = [0u8; 12];
            nonce[3..11].copy_from_slice(&(i as u64).to_be_bytes());
            tags.push(
                aead.encrypt_in_place_detached(Nonce::from_slice(&nonce), b"", c)
                    .unwrap(),
            );
        }
    };

    println!(
        "native ({mb} MiB, 64 KiB pieces, median of {RUNS} alternating pairs; MB = 10^6 bytes)"
    );
    println!("{:<34} {:>8} {:>14}", "operation", "MB/s", "vs raw AEAD");
    let mut out = Vec::with_capacity(n + 4096);
    for (name, fmt) in [("age-rt", Format::AgeRt), ("age v1", Format::Age)] {
        let mut ct = Vec::with_capacity(n + n / 1000 + 4096);
        encrypt(fmt, &r, &plain, &mut ct);
        let mut scratch = Vec::with_capacity(ct.capacity());
        let (peer, enc, enc_ratio) =
            paired(n, &mut raw_seal, || encrypt(fmt, &r, &plain, &mut scratch));
        println!(
            "{:<34} {:>8.0}",
            format!("raw ChaCha20-Poly1305 (peer, {name})"),
            peer
        );
        println!(
            "{:<34} {:>8.0} {:>14.2}",
            format!("{name} encrypt"),
            enc,
            enc_ratio
        );
        let (_, dec, dec_ratio) = paired(n, &mut raw_seal, || decrypt(&id, &ct, &mut out));
        assert!(out == plain);
        println!(
            "{:<34} {:>8.0} {:>14.2}",
            format!("{name} decrypt"),
            dec,
            dec_ratio
        );
    }
    let times: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            Encryptor::with_passphrase(Format::AgeRt, "bench").unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    println!(
        "{:<28} {:>10.3} s (median of 3)",
        "scrypt log2 N = 18",
        median(times)
    );
}
