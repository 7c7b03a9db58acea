//! What each side counts and commits to for a delivery receipt (`docs/PROTOCOL.md` §12.2), in
//! one place for every adapter (the wasm `fetch` one and the native one): which bytes are
//! counted and which hashed, the plaintext commitment (count + the cipher's tag digest) vs the
//! wire commitment (count + XXH3-128 of the bytes on the wire), and the receipt key from the
//! encryptor (producer) or the decryptor (consumer). The adapters only feed bytes in.

use zeroize::Zeroizing;

use super::receipt::{Commitment, Committer, Outcome};
use crate::crypto::{Decryptor, Encryptor};

/// The HMAC key of an encrypted transfer's receipt (§12.2).
pub type ReceiptKey = Zeroizing<[u8; 32]>;

/// What one side counted (and, when [`Ledger::hash`] is set, hashed) of the bytes that passed.
#[derive(Default, Clone)]
pub struct Ledger {
    /// The count and digest so far.
    pub committer: Committer,
    /// Hash the bytes (a receipt commits to them); otherwise only count them.
    pub hash: bool,
    /// Scratch space for adapters whose bytes live elsewhere ([`Ledger::add_with`]).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    buf: Vec<u8>,
}

impl Ledger {
    /// A ledger that hashes when `hash`.
    pub fn new(hash: bool) -> Self {
        Ledger {
            hash,
            ..Ledger::default()
        }
    }

    /// `bytes` passed.
    pub fn add(&mut self, bytes: &[u8]) {
        if self.hash {
            self.committer.update(bytes);
        } else {
            self.committer.count(bytes.len() as u64);
        }
    }

    /// `n` bytes passed that `fill` copies into a buffer when they must be hashed (a
    /// JavaScript `Uint8Array`: copied only when a receipt commits to them).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn add_with(&mut self, n: usize, fill: impl FnOnce(&mut [u8])) {
        if !self.hash {
            self.committer.count(n as u64);
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(n, 0);
        fill(&mut buf[..n]);
        self.committer.update(&buf[..n]);
        self.buf = buf;
    }

    /// Bytes counted so far.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn bytes(&self) -> u64 {
        self.committer.bytes()
    }
}

/// Whether the producer hashes the bytes it puts on the wire (§12.2): only when a receipt is
/// expected and it commits to them (a plain transfer, or a consumer without keys).
pub fn producer_hashes_wire(expects_receipt: bool, commits_to_plaintext: bool) -> bool {
    expects_receipt && !commits_to_plaintext
}

/// Whether the consumer hashes what it releases (§12.2): when it sends receipts and does not
/// decrypt (a decrypting consumer commits to the cipher's tags instead).
pub fn consumer_hashes(sends_receipt: bool, decrypts: bool) -> bool {
    sends_receipt && !decrypts
}

/// The producer's commitment and receipt key (§12.2): to a consumer that decrypts an
/// encrypted transfer (`to_plaintext`), the plaintext count (`plain`) and the encryptor's tag
/// digest, with the receipt key; otherwise the count and hash of the bytes on the wire
/// (`wire`). `enc` is the transfer's encryptor (`None`: plain, or not finished yet — then an
/// `ok` receipt can't match anyway).
pub fn producer_commitment(
    plain: &Ledger,
    wire: &Ledger,
    enc: Option<&Encryptor>,
    to_plaintext: bool,
    transfer: &str,
) -> (Commitment, Option<ReceiptKey>) {
    match enc {
        Some(e) if to_plaintext => (
            plain.committer.with_digest(e.tag_digest()),
            Some(e.receipt_key(transfer)),
        ),
        _ => (wire.committer.commitment(), None),
    }
}

/// What the consumer released (`ledger`) and, for an `ok` receipt of an encrypted transfer,
/// the receipt key (§12.2). A negative receipt needs no digest or MAC: the count alone,
/// without touching the decryptor (`dec` is only read for `ok`).
pub fn consumer_commitment(
    ledger: &Ledger,
    dec: Option<&Decryptor>,
    outcome: Outcome,
    transfer: &str,
) -> (Commitment, Option<ReceiptKey>) {
    if outcome != Outcome::Ok {
        return (ledger.committer.commitment(), None);
    }
    match dec {
        Some(d) => {
            // No tag digest before the payload (a wrong key): only a negative receipt can
            // follow, and its digest says nothing.
            let released = match d.tag_digest() {
                Some(digest) => ledger.committer.with_digest(digest),
                None => ledger.committer.commitment(),
            };
            (released, d.receipt_key(transfer))
        }
        None => (ledger.committer.commitment(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::receipt::{receipt_text, verify};
    use crate::crypto::{DecryptOptions, Format, Identity};

    #[test]
    fn counting_and_hashing() {
        let mut counted = Ledger::new(false);
        counted.add(b"hello");
        counted.add_with(3, |_| panic!("a count needs no copy"));
        assert_eq!(counted.bytes(), 8);
        let mut hashed = Ledger::new(true);
        hashed.add(b"hel");
        hashed.add_with(2, |b| b.copy_from_slice(b"lo"));
        let mut whole = Ledger::new(true);
        whole.add(b"hello");
        assert_eq!(hashed.committer.commitment(), whole.committer.commitment());
        assert!(producer_hashes_wire(true, false));
        assert!(!producer_hashes_wire(true, true) && !producer_hashes_wire(false, false));
        assert!(consumer_hashes(true, false));
        assert!(!consumer_hashes(true, true) && !consumer_hashes(false, false));
    }

    /// An encrypted transfer: the producer's plaintext commitment and key match the
    /// decrypting consumer's, so its `ok` receipt verifies (authenticated); to a consumer
    /// without keys both commit to the wire bytes.
    #[test]
    fn producer_and_consumer_commit_to_the_same() {
        let mut enc = Encryptor::with_passphrase(Format::AgeRt, "pw").unwrap();
        let (mut plain, mut wire) = (Ledger::new(false), Ledger::new(true));
        let mut out = Vec::new();
        enc.flush(&mut out).unwrap();
        for piece in [&b"abc"[..], b"defgh"] {
            plain.add(piece);
            enc.update(piece, &mut out).unwrap();
            enc.flush(&mut out).unwrap();
        }
        enc.finish(&mut out).unwrap();
        wire.add(&out);

        let mut dec =
            Decryptor::new(&[Identity::passphrase("pw")], DecryptOptions::default()).unwrap();
        let mut released = Ledger::new(consumer_hashes(true, true));
        let mut pt = Vec::new();
        dec.update(&out, &mut pt).unwrap();
        dec.finish(&mut pt).unwrap();
        released.add(&pt);
        assert_eq!(pt, b"abcdefgh");

        let (ours, key) = producer_commitment(&plain, &wire, Some(&enc), true, "T");
        let (theirs, their_key) = consumer_commitment(&released, Some(&dec), Outcome::Ok, "T");
        assert_eq!(ours, theirs);
        let text = receipt_text("T", Outcome::Ok, &theirs, their_key.as_deref());
        assert!(
            verify(&text, "T", &ours, key.as_deref())
                .unwrap()
                .authenticated
        );

        // a consumer without keys stores the ciphertext: both sides commit to the wire
        let mut stored = Ledger::new(consumer_hashes(true, false));
        stored.add(&out);
        let (ours, key) = producer_commitment(&plain, &wire, Some(&enc), false, "T");
        assert!(key.is_none());
        assert_eq!(ours, consumer_commitment(&stored, None, Outcome::Ok, "T").0);
        // a negative receipt: the count only, no key
        let (c, k) = consumer_commitment(&released, Some(&dec), Outcome::Cancelled, "T");
        assert_eq!(c.bytes, 8);
        assert!(k.is_none());
    }
}
