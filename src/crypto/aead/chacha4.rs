//! ChaCha20 (RFC 8439) computing four blocks at once on 4-lane u32 vectors, and
//! ChaCha20-Poly1305 (RFC 8439 §2.8, empty associated data) on top of it.
//!
//! Used for the payload on wasm32 with simd128, where the RustCrypto `chacha20` crate has only
//! its portable scalar backend (the bottleneck in `bench/crypto.sh`). The algorithm is generic
//! over [`Lanes`]; the unit tests run it with [`Portable`] lanes against the RustCrypto
//! crates, and the wasm lanes differ only in the one-line vector operations.
// Native builds use this module only in its tests; wasm builds don't use `Portable`.
#![allow(dead_code)]

use poly1305::universal_hash::{KeyInit, UniversalHash};
use poly1305::{Block, Poly1305};

/// Four u32 lanes.
pub(crate) trait Lanes: Copy {
    fn splat(x: u32) -> Self;
    fn from_array(a: [u32; 4]) -> Self;
    fn to_array(self) -> [u32; 4];
    fn add(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn rotl16(self) -> Self;
    fn rotl12(self) -> Self;
    fn rotl8(self) -> Self;
    fn rotl7(self) -> Self;
    /// 4x4 transpose: lane j of input i becomes lane i of output j.
    fn transpose4(x: [Self; 4]) -> [Self; 4];
    /// XORs the 16 little-endian bytes of `self` into `buf`.
    fn xor_into(self, buf: &mut [u8; 16]);
}

/// Plain arrays: the reference used by the native unit tests.
#[derive(Clone, Copy)]
pub(crate) struct Portable([u32; 4]);

impl Lanes for Portable {
    fn splat(x: u32) -> Self {
        Portable([x; 4])
    }
    fn from_array(a: [u32; 4]) -> Self {
        Portable(a)
    }
    fn to_array(self) -> [u32; 4] {
        self.0
    }
    fn add(self, o: Self) -> Self {
        Portable(core::array::from_fn(|i| self.0[i].wrapping_add(o.0[i])))
    }
    fn xor(self, o: Self) -> Self {
        Portable(core::array::from_fn(|i| self.0[i] ^ o.0[i]))
    }
    fn rotl16(self) -> Self {
        Portable(self.0.map(|x| x.rotate_left(16)))
    }
    fn rotl12(self) -> Self {
        Portable(self.0.map(|x| x.rotate_left(12)))
    }
    fn rotl8(self) -> Self {
        Portable(self.0.map(|x| x.rotate_left(8)))
    }
    fn rotl7(self) -> Self {
        Portable(self.0.map(|x| x.rotate_left(7)))
    }
    fn transpose4(x: [Self; 4]) -> [Self; 4] {
        core::array::from_fn(|j| Portable(core::array::from_fn(|i| x[i].0[j])))
    }
    fn xor_into(self, buf: &mut [u8; 16]) {
        for (i, w) in self.0.iter().enumerate() {
            for (b, k) in buf[4 * i..4 * i + 4].iter_mut().zip(w.to_le_bytes()) {
                *b ^= k;
            }
        }
    }
}

/// wasm simd128 vectors.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod wasm {
    use core::arch::wasm32::*;

    #[derive(Clone, Copy)]
    pub(crate) struct Simd(v128);

    impl super::Lanes for Simd {
        #[inline(always)]
        fn splat(x: u32) -> Self {
            Simd(u32x4_splat(x))
        }
        #[inline(always)]
        fn from_array(a: [u32; 4]) -> Self {
            Simd(u32x4(a[0], a[1], a[2], a[3]))
        }
        #[inline(always)]
        fn to_array(self) -> [u32; 4] {
            [
                u32x4_extract_lane::<0>(self.0),
                u32x4_extract_lane::<1>(self.0),
                u32x4_extract_lane::<2>(self.0),
                u32x4_extract_lane::<3>(self.0),
            ]
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            Simd(u32x4_add(self.0, o.0))
        }
        #[inline(always)]
        fn xor(self, o: Self) -> Self {
            Simd(v128_xor(self.0, o.0))
        }
        #[inline(always)]
        fn rotl16(self) -> Self {
            Simd(i8x16_shuffle::<
                2,
                3,
                0,
                1,
                6,
                7,
                4,
                5,
                10,
                11,
                8,
                9,
                14,
                15,
                12,
                13,
            >(self.0, self.0))
        }
        #[inline(always)]
        fn rotl12(self) -> Self {
            Simd(v128_or(u32x4_shl(self.0, 12), u32x4_shr(self.0, 20)))
        }
        #[inline(always)]
        fn rotl8(self) -> Self {
            Simd(i8x16_shuffle::<
                3,
                0,
                1,
                2,
                7,
                4,
                5,
                6,
                11,
                8,
                9,
                10,
                15,
                12,
                13,
                14,
            >(self.0, self.0))
        }
        #[inline(always)]
        fn rotl7(self) -> Self {
            Simd(v128_or(u32x4_shl(self.0, 7), u32x4_shr(self.0, 25)))
        }
        #[inline(always)]
        fn transpose4(x: [Self; 4]) -> [Self; 4] {
            let [a, b, c, d] = x.map(|v| v.0);
            let t0 = i32x4_shuffle::<0, 4, 1, 5>(a, b);
            let t1 = i32x4_shuffle::<2, 6, 3, 7>(a, b);
            let t2 = i32x4_shuffle::<0, 4, 1, 5>(c, d);
            let t3 = i32x4_shuffle::<2, 6, 3, 7>(c, d);
            [
                Simd(i64x2_shuffle::<0, 2>(t0, t2)),
                Simd(i64x2_shuffle::<1, 3>(t0, t2)),
                Simd(i64x2_shuffle::<0, 2>(t1, t3)),
                Simd(i64x2_shuffle::<1, 3>(t1, t3)),
            ]
        }
        #[inline(always)]
        fn xor_into(self, buf: &mut [u8; 16]) {
            let p = buf.as_mut_ptr() as *mut v128;
            // SAFETY: `buf` is exactly 16 writable bytes; v128_load/v128_store allow any
            // alignment; wasm is little-endian, so lane bytes are the keystream bytes.
            unsafe { v128_store(p, v128_xor(v128_load(p), self.0)) }
        }
    }
}

const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];
/// Bytes of keystream per round of four blocks.
const STRIDE: usize = 256;

#[inline(always)]
fn quarter<L: Lanes>(v: &mut [L; 16], a: usize, b: usize, c: usize, d: usize) {
    v[a] = v[a].add(v[b]);
    v[d] = v[d].xor(v[a]).rotl16();
    v[c] = v[c].add(v[d]);
    v[b] = v[b].xor(v[c]).rotl12();
    v[a] = v[a].add(v[b]);
    v[d] = v[d].xor(v[a]).rotl8();
    v[c] = v[c].add(v[d]);
    v[b] = v[b].xor(v[c]).rotl7();
}

/// ChaCha20 key and nonce as state words.
pub(crate) struct ChaCha {
    key: [u32; 8],
    nonce: [u32; 3],
}

impl ChaCha {
    pub(crate) fn new(key: &[u8; 32], nonce: &[u8; 12]) -> Self {
        let w = |b: &[u8], i: usize| {
            u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
        };
        ChaCha {
            key: core::array::from_fn(|i| w(key, i)),
            nonce: core::array::from_fn(|i| w(nonce, i)),
        }
    }

    /// The final state of blocks `counter .. counter + 4`, one block per lane.
    #[inline(always)]
    fn rounds<L: Lanes>(&self, counter: u32) -> [L; 16] {
        let k = &self.key;
        let n = &self.nonce;
        let c = counter;
        let init: [L; 16] = [
            L::splat(SIGMA[0]),
            L::splat(SIGMA[1]),
            L::splat(SIGMA[2]),
            L::splat(SIGMA[3]),
            L::splat(k[0]),
            L::splat(k[1]),
            L::splat(k[2]),
            L::splat(k[3]),
            L::splat(k[4]),
            L::splat(k[5]),
            L::splat(k[6]),
            L::splat(k[7]),
            L::from_array([c, c.wrapping_add(1), c.wrapping_add(2), c.wrapping_add(3)]),
            L::splat(n[0]),
            L::splat(n[1]),
            L::splat(n[2]),
        ];
        let mut v = init;
        for _ in 0..10 {
            quarter(&mut v, 0, 4, 8, 12);
            quarter(&mut v, 1, 5, 9, 13);
            quarter(&mut v, 2, 6, 10, 14);
            quarter(&mut v, 3, 7, 11, 15);
            quarter(&mut v, 0, 5, 10, 15);
            quarter(&mut v, 1, 6, 11, 12);
            quarter(&mut v, 2, 7, 8, 13);
            quarter(&mut v, 3, 4, 9, 14);
        }
        core::array::from_fn(|i| v[i].add(init[i]))
    }

    /// Keystream bytes of blocks `counter .. counter + 4`.
    fn blocks4<L: Lanes>(&self, counter: u32, out: &mut [u8; STRIDE]) {
        for (i, x) in self.rounds::<L>(counter).iter().enumerate() {
            for (j, word) in x.to_array().iter().enumerate() {
                out[64 * j + 4 * i..64 * j + 4 * i + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
    }

    /// XORs `data` with the keystream starting at block `counter`: whole 256-byte strides
    /// straight from the vectors (transposed to one block per vector), the tail bytewise.
    pub(crate) fn apply<L: Lanes>(&self, mut counter: u32, data: &mut [u8]) {
        let mut strides = data.chunks_exact_mut(STRIDE);
        for stride in &mut strides {
            let x = self.rounds::<L>(counter);
            for g in 0..4 {
                let y = L::transpose4([x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]]);
                for (j, yj) in y.iter().enumerate() {
                    let at = 64 * j + 16 * g;
                    if let Ok(block) = <&mut [u8; 16]>::try_from(&mut stride[at..at + 16]) {
                        yj.xor_into(block);
                    }
                }
            }
            counter = counter.wrapping_add(4);
        }
        let tail = strides.into_remainder();
        if !tail.is_empty() {
            let mut ks = [0u8; STRIDE];
            self.blocks4::<L>(counter, &mut ks);
            for (d, k) in tail.iter_mut().zip(ks.iter()) {
                *d ^= k;
            }
        }
    }

    fn mac<L: Lanes>(&self) -> Poly1305 {
        let mut ks = [0u8; STRIDE];
        self.blocks4::<L>(0, &mut ks);
        let mac = Poly1305::new(poly1305::Key::from_slice(&ks[..32]));
        ks.fill(0);
        mac
    }
}

fn tag_of(mut mac: Poly1305, ciphertext: &[u8]) -> poly1305::Tag {
    mac.update_padded(ciphertext);
    let mut lengths = Block::default();
    lengths[8..].copy_from_slice(&(ciphertext.len() as u64).to_le_bytes());
    mac.update(&[lengths]);
    mac.finalize()
}

/// ChaCha20-Poly1305 seal in place with empty associated data; returns the tag.
/// `buf` must be shorter than 256 GiB (the payload uses at most 64 KiB).
pub(crate) fn seal<L: Lanes>(key: &[u8; 32], nonce: &[u8; 12], buf: &mut [u8]) -> [u8; 16] {
    let c = ChaCha::new(key, nonce);
    let mac = c.mac::<L>();
    c.apply::<L>(1, buf);
    tag_of(mac, buf).into()
}

/// ChaCha20-Poly1305 open in place; `buf` is left unchanged (and false returned) if the tag
/// does not verify.
pub(crate) fn open<L: Lanes>(
    key: &[u8; 32],
    nonce: &[u8; 12],
    buf: &mut [u8],
    tag: &[u8; 16],
) -> bool {
    use subtle::ConstantTimeEq;
    let c = ChaCha::new(key, nonce);
    let expected: [u8; 16] = tag_of(c.mac::<L>(), buf).into();
    if !bool::from(expected.ct_eq(tag)) {
        return false;
    }
    c.apply::<L>(1, buf);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use chacha20poly1305::aead::AeadInPlace;
    use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(167).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn matches_rustcrypto_chacha20poly1305() {
        for len in [
            0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 4096, 65536,
        ] {
            let key: [u8; 32] = bytes(32, len as u8).try_into().unwrap();
            let nonce: [u8; 12] = bytes(12, (len as u8).wrapping_add(3)).try_into().unwrap();
            let plain = bytes(len, 9);
            let mut ours = plain.clone();
            let tag = seal::<Portable>(&key, &nonce, &mut ours);
            let mut theirs = plain.clone();
            let want = ChaCha20Poly1305::new(Key::from_slice(&key))
                .encrypt_in_place_detached(Nonce::from_slice(&nonce), b"", &mut theirs)
                .unwrap();
            assert_eq!(ours, theirs, "ciphertext, len {len}");
            assert_eq!(&tag[..], &want[..], "tag, len {len}");
            assert!(open::<Portable>(&key, &nonce, &mut ours, &tag));
            assert_eq!(ours, plain);
            let mut bad = theirs.clone();
            let mut wrong = tag;
            wrong[0] ^= 1;
            assert!(!open::<Portable>(&key, &nonce, &mut bad, &wrong));
            assert_eq!(bad, theirs, "a failed open leaves the buffer unchanged");
        }
    }

    #[test]
    fn rfc8439_keystream_vector() {
        // RFC 8439 §2.4.2: key 00..1f, nonce 00 00 00 00 00 00 00 4a 00 00 00 00, counter 1.
        let key: [u8; 32] = core::array::from_fn(|i| i as u8);
        let nonce = [0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0];
        let mut text = *b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        ChaCha::new(&key, &nonce).apply::<Portable>(1, &mut text);
        assert_eq!(
            &text[..16],
            &[
                0x6e, 0x2e, 0x35, 0x9a, 0x25, 0x68, 0xf9, 0x80, 0x41, 0xba, 0x07, 0x28, 0xdd, 0x0d,
                0x69, 0x81
            ]
        );
    }
}
