//! Each typed error is produced by the situation it names, with a message a person can act on.

mod crypto_support;

use crypto_support::{decrypt_all, encrypt_pieces};
use httpipe::crypto::{DecryptOptions, Encryptor, Error, FixedRandom, Format, Identity, Recipient};

fn x25519() -> (Identity, Recipient) {
    let id = Identity::generate_x25519_with_rng(&mut FixedRandom::new([1u8; 32])).unwrap();
    let r = id.to_recipient().unwrap();
    (id, r)
}

fn decrypt(ids: &[Identity], data: &[u8]) -> (Vec<u8>, Result<(), Error>) {
    decrypt_all(ids, DecryptOptions::default(), data, 1000)
}

#[test]
fn key_parsing() {
    let (id, r) = x25519();
    let s = r.to_string();
    assert!(s.starts_with("age1") && s.len() == 62);
    assert_eq!(s.parse::<Recipient>().unwrap().to_string(), s);
    let secret = id.to_secret_string().unwrap();
    let back: Identity = secret.parse().unwrap();
    assert_eq!(back.to_recipient().unwrap().to_string(), s);
    assert!(matches!(
        "age1tag1qqqq".parse::<Recipient>(),
        Err(Error::UnsupportedRecipient(_))
    ));
    // post-quantum recipients are supported: a malformed one is an invalid key
    assert!(matches!(
        "age1pq1qqqq".parse::<Recipient>(),
        Err(Error::InvalidKey(_))
    ));
    assert!(matches!(
        "ssh-ed25519 AAAA".parse::<Recipient>(),
        Err(Error::UnsupportedRecipient(_))
    ));
    assert!(matches!(
        "hello".parse::<Recipient>(),
        Err(Error::InvalidKey(_))
    ));
    // a flipped character breaks the Bech32 checksum
    let mut bad = s.clone().into_bytes();
    bad[10] = if bad[10] == b'q' { b'p' } else { b'q' };
    assert!(matches!(
        String::from_utf8(bad).unwrap().parse::<Recipient>(),
        Err(Error::InvalidKey(_))
    ));
    assert!(matches!(
        secret.to_lowercase().parse::<Identity>(),
        Err(Error::InvalidKey(_))
    ));
    assert!(matches!(
        "AGE-PLUGIN-YUBIKEY-1XYZ".parse::<Identity>(),
        Err(Error::UnsupportedRecipient(_))
    ));
    let file = format!("# created by a test\n\n{}\n", secret.as_str());
    assert_eq!(Identity::parse_file(&file).unwrap().len(), 1);
    assert!(Identity::parse_file("# nothing\n").is_err());
}

#[test]
fn usage_errors() {
    let (_, r) = x25519();
    assert!(matches!(
        Encryptor::new(Format::Age, &[]),
        Err(Error::Usage(_))
    ));
    let mixed = [r, Recipient::passphrase_with_work_factor("pw", 2)];
    let e = Encryptor::new(Format::Age, &mixed).err().unwrap();
    assert!(
        matches!(e, Error::Usage(_)) && e.to_string().contains("only recipient"),
        "{e}"
    );
    assert!(httpipe::crypto::Decryptor::new(&[], DecryptOptions::default()).is_err());
    assert!(matches!("zip".parse::<Format>(), Err(Error::Usage(_))));
    let (_, r) = x25519();
    let mut late = Encryptor::new(Format::Age, &[r]).unwrap();
    late.update(b"x", &mut Vec::new()).unwrap();
    let mut late = late.armored();
    assert!(matches!(late.finish(&mut Vec::new()), Err(Error::Usage(_))));
}

/// A byte changed in a stanza makes it open with no key, which is what a wrong key looks like:
/// the message says both, not "wrong passphrase" as a fact (a new user's trial, 2026-12-06).
#[test]
fn a_damaged_stanza_is_not_called_a_wrong_key_for_certain() {
    let ct = encrypt_pieces(
        Encryptor::with_passphrase_work_factor(Format::AgeRt, "pw", 4).unwrap(),
        b"x",
        &[],
    );
    let body = ct.iter().position(|&b| b == b'\n').unwrap() + 1; // the stanza's line
                                                                 // another base64 letter, not a flipped bit (which may make no base64 at all)
    let damage = |ct: &[u8]| {
        let mut d = ct.to_vec();
        d[body + 20] = if d[body + 20] == b'A' { b'B' } else { b'A' };
        d
    };
    let damaged = damage(&ct); // in the scrypt stanza's salt
    let e = decrypt(&[Identity::passphrase("pw")], &damaged)
        .1
        .unwrap_err();
    assert_eq!(e, Error::WrongPassphrase);
    assert!(e.to_string().contains(", or a damaged header"), "{e}");
    let (id, r) = x25519();
    let ct = encrypt_pieces(Encryptor::new(Format::AgeRt, &[r]).unwrap(), b"x", &[]);
    let damaged = damage(&ct); // in the X25519 stanza's share
    let e = decrypt(&[id], &damaged).1.unwrap_err();
    assert_eq!(e, Error::NoMatchingIdentity);
    assert!(e.to_string().contains(", or a damaged header"), "{e}");
}

#[test]
fn wrong_key_and_passphrase() {
    let (_, r) = x25519();
    let ct = encrypt_pieces(Encryptor::new(Format::AgeRt, &[r]).unwrap(), b"x", &[]);
    let other = Identity::generate_x25519().unwrap();
    assert_eq!(decrypt(&[other], &ct).1, Err(Error::NoMatchingIdentity));
    // a passphrase can't open an X25519 file either
    assert_eq!(
        decrypt(&[Identity::passphrase("pw")], &ct).1,
        Err(Error::NoMatchingIdentity)
    );
    let ct = encrypt_pieces(
        Encryptor::with_passphrase_work_factor(Format::Age, "pw", 4).unwrap(),
        b"x",
        &[],
    );
    assert_eq!(
        decrypt(&[Identity::passphrase("nope")], &ct).1,
        Err(Error::WrongPassphrase)
    );
    assert_eq!(
        decrypt(
            &[Identity::passphrase("nope"), Identity::passphrase("pw")],
            &ct
        )
        .1,
        Ok(())
    );
}

#[test]
fn work_factor_cap() {
    let ct = encrypt_pieces(
        Encryptor::with_passphrase_work_factor(Format::Age, "pw", 12).unwrap(),
        b"x",
        &[],
    );
    let strict = DecryptOptions {
        max_scrypt_log2_n: 11,
        ..DecryptOptions::default()
    };
    let (out, r) = decrypt_all(&[Identity::passphrase("pw")], strict, &ct, 4096);
    assert_eq!(
        r,
        Err(Error::WorkFactorTooHigh {
            log2_n: 12,
            max: 11
        })
    );
    assert!(out.is_empty());
    assert!(Error::WorkFactorTooHigh {
        log2_n: 12,
        max: 11
    }
    .to_string()
    .contains("max_scrypt_log2_n"));
}

#[test]
fn header_problems() {
    let (id, r) = x25519();
    let ids = [id];
    // plain text, and random bytes without a newline in their first 64 (they were told
    // "line longer than 64 columns", as if they were damaged armor)
    let random: Vec<u8> = (0u32..500)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let long_line = [b"x".repeat(100), b"\n".to_vec()].concat();
    for input in [
        &b"hello world, not age at all\n"[..],
        &random,
        &long_line,
        b"  \r\n-----BEGIN AGE",
    ] {
        let (_, e) = decrypt(&ids, input);
        assert!(
            matches!(e, Err(Error::Armor(ref m)) if m.contains("not an age file")),
            "{e:?}"
        );
    }
    let (_, e) = decrypt(&ids, b"age-encryption.org/v2\n-> X\n\n--- x\n");
    assert!(
        matches!(e, Err(Error::HeaderMalformed(ref m)) if m.contains("unsupported version")),
        "{e:?}"
    );
    // age-rt headers are capped at 4 KiB
    let mut big = b"github.com/parsimonit/age-rt-encryption/v0.2\n".to_vec();
    while big.len() < 5000 {
        big.extend_from_slice(b"-> grease aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n\n");
    }
    assert_eq!(
        decrypt(&ids, &big).1,
        Err(Error::HeaderTooLarge { limit: 4096 })
    );
    // header MAC: flip a MAC character to another valid one
    let ct = encrypt_pieces(Encryptor::new(Format::AgeRt, &[r]).unwrap(), b"x", &[]);
    let mac_at = ct.windows(4).position(|w| w == b"--- ").unwrap() + 4;
    let mut bad = ct.clone();
    bad[mac_at] = if bad[mac_at] == b'A' { b'B' } else { b'A' };
    assert_eq!(decrypt(&ids, &bad).1, Err(Error::HeaderMac));
    // cut inside the header
    let (_, e) = decrypt(&ids, &ct[..mac_at]);
    assert!(
        matches!(e, Err(Error::HeaderMalformed(ref m)) if m.contains("ended inside the header")),
        "{e:?}"
    );
}

#[test]
fn payload_problems() {
    let (id, r) = x25519();
    let ids = [id];
    let ct = encrypt_pieces(
        Encryptor::new(Format::AgeRt, std::slice::from_ref(&r)).unwrap(),
        b"hello",
        &[],
    );
    // trailing data after the final record: the authentic plaintext comes out, then the error
    let mut t = ct.clone();
    t.extend_from_slice(b"junk");
    assert_eq!(
        decrypt(&ids, &t),
        (b"hello".to_vec(), Err(Error::TrailingData))
    );
    // a record length outside 16..=65552
    let body_at = ct.len() - (4 + 5 + 16) - 20;
    let mut l = ct.clone();
    l[body_at..body_at + 4].copy_from_slice(&70_000u32.to_be_bytes());
    assert!(
        matches!(decrypt(&ids, &l).1, Err(Error::PayloadMalformed(ref m)) if m.contains("70000"))
    );
    // a tampered record names its index
    let mut c = ct.clone();
    c[body_at + 6] ^= 0x80;
    assert_eq!(decrypt(&ids, &c).1, Err(Error::ChunkAuth { index: 0 }));
    // truncation
    assert_eq!(
        decrypt(&ids, &ct[..ct.len() - 20]),
        (b"hello".to_vec(), Err(Error::Truncated))
    );
    let msgs = [
        Error::Truncated,
        Error::TrailingData,
        Error::ChunkAuth { index: 3 },
        Error::HeaderMac,
    ];
    for m in msgs {
        assert!(m.to_string().len() > 20, "{m}");
    }
}
