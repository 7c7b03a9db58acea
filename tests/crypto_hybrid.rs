//! The hybrid post-quantum recipient type `mlkem768x25519` (PROTOCOL.md §7.1) through the
//! public API: key generation and text round trips, both formats, armor, several recipients,
//! reproducible output from fixed randomness, the mixing and header-size rules, and the typed
//! errors of wrong keys. (Known answers: the C2SP CCTV `hybrid*` vectors in crypto_cctv.rs
//! and the spec's key example in the module's unit tests.)

mod crypto_support;

use crypto_support::{decrypt_all, encrypt_pieces, pseudo_random};
use httpipe::crypto::{
    generate_hybrid, DecryptOptions, Encryptor, Error, FixedRandom, Format, Identity, Recipient,
};

fn hybrid(seed: u8) -> (Identity, Recipient) {
    let id = Identity::generate_hybrid_with_rng(&mut FixedRandom::new([seed; 32])).unwrap();
    let r = id.to_recipient().unwrap();
    (id, r)
}

fn decrypt(ids: &[Identity], data: &[u8]) -> (Vec<u8>, Result<(), Error>) {
    decrypt_all(ids, DecryptOptions::default(), data, 777)
}

#[test]
fn generated_keys_round_trip_through_their_text() {
    let (sk, pk) = generate_hybrid().unwrap();
    assert!(
        sk.starts_with("AGE-SECRET-KEY-PQ-1") && sk.len() == 77,
        "{}",
        sk.len()
    );
    assert!(
        pk.starts_with("age1pq1") && pk.len() == 1959,
        "{}",
        pk.len()
    );
    let id: Identity = sk.parse().unwrap();
    assert!(id.is_post_quantum());
    assert_eq!(id.to_recipient().unwrap().to_string(), pk);
    assert_eq!(id.to_secret_string().unwrap().as_str(), sk.as_str());
    let r: Recipient = pk.parse().unwrap();
    assert!(r.is_post_quantum() && !r.is_passphrase());
    assert_eq!(r.to_string(), pk);
    // Surrounding whitespace is ignored, as for X25519 keys; identity files take them.
    assert_eq!(
        format!("  {pk}\n")
            .parse::<Recipient>()
            .unwrap()
            .to_string(),
        pk
    );
    let file = format!("# created: now\n# public key: {pk}\n{}\n", sk.as_str());
    let ids = Identity::parse_file(&file).unwrap();
    assert_eq!(ids.len(), 1);
    assert!(ids[0].is_post_quantum());
    // Debug shows neither the secret nor the whole 1959-character recipient.
    let dbg = format!("{id:?}");
    assert!(!dbg.contains(&sk[19..]) && dbg.len() < 100, "{dbg}");
    // Two generations differ; a seed gives the same key each time.
    assert_ne!(generate_hybrid().unwrap().1, pk);
    assert_eq!(hybrid(7).1.to_string(), hybrid(7).1.to_string());
}

#[test]
fn both_formats_armored_or_not_and_in_pieces() {
    let (id, r) = hybrid(1);
    let plain = pseudo_random(200_000, 13);
    for format in [Format::Age, Format::AgeRt] {
        for armor in [false, true] {
            let mut enc = Encryptor::new(format, std::slice::from_ref(&r)).unwrap();
            if armor {
                enc = enc.armored();
            }
            let ct = encrypt_pieces(enc, &plain, &[1, 70_000, 3]);
            if !armor {
                let head = String::from_utf8_lossy(&ct[..200]);
                assert!(head.contains("\n-> mlkem768x25519 "), "{head}");
            }
            let (out, res) = decrypt(std::slice::from_ref(&id), &ct);
            assert_eq!(res, Ok(()), "{format:?} armor={armor}");
            assert!(out == plain, "{format:?} armor={armor}");
        }
    }
}

#[test]
fn several_post_quantum_recipients_each_open_it() {
    let keys: Vec<_> = (10..13).map(hybrid).collect();
    let recipients: Vec<_> = keys.iter().map(|k| k.1.clone()).collect();
    // age v1 takes any number; age-rt's 4 KiB header takes two (a stanza is 1557 bytes).
    let ct = encrypt_pieces(
        Encryptor::new(Format::Age, &recipients).unwrap(),
        b"hi",
        &[],
    );
    for (id, _) in &keys {
        assert_eq!(
            decrypt(std::slice::from_ref(id), &ct),
            (b"hi".to_vec(), Ok(()))
        );
    }
    let ct = encrypt_pieces(
        Encryptor::new(Format::AgeRt, &recipients[..2]).unwrap(),
        b"hi",
        &[],
    );
    assert_eq!(decrypt(&[keys[1].0.clone()], &ct), (b"hi".to_vec(), Ok(())));
    let e = Encryptor::new(Format::AgeRt, &recipients).err().unwrap();
    assert!(
        matches!(&e, Error::Usage(m) if m.contains("4096") && m.contains("format age")),
        "{e}"
    );
}

#[test]
fn fixed_randomness_gives_the_same_bytes() {
    let (id, r) = hybrid(2);
    // file key 16, encapsulation 64, payload nonce 16
    let enc = || {
        let mut rng = FixedRandom::new(pseudo_random(96, 5));
        let enc = Encryptor::with_rng(Format::AgeRt, std::slice::from_ref(&r), &mut rng).unwrap();
        encrypt_pieces(enc, b"same", &[2])
    };
    let a = enc();
    assert_eq!(a, enc());
    assert_eq!(decrypt(&[id], &a), (b"same".to_vec(), Ok(())));
    // One byte fewer of randomness is a Random error, not a panic.
    let mut rng = FixedRandom::new(pseudo_random(95, 5));
    assert!(matches!(
        Encryptor::with_rng(Format::AgeRt, &[r], &mut rng),
        Err(Error::Random(_))
    ));
}

#[test]
fn post_quantum_and_x25519_recipients_do_not_mix() {
    let (_, pq) = hybrid(3);
    let x = Identity::generate_x25519().unwrap().to_recipient().unwrap();
    for list in [[pq.clone(), x.clone()], [x, pq.clone()]] {
        let e = Encryptor::new(Format::Age, &list).err().unwrap();
        assert!(
            matches!(&e, Error::Usage(m) if m.contains("post-quantum")),
            "{e}"
        );
    }
    let e = Encryptor::new(
        Format::Age,
        &[pq, Recipient::passphrase_with_work_factor("pw", 2)],
    )
    .err()
    .unwrap();
    assert!(
        matches!(&e, Error::Usage(m) if m.contains("only recipient")),
        "{e}"
    );
}

#[test]
fn wrong_keys_are_no_match() {
    let (id, r) = hybrid(4);
    let ct = encrypt_pieces(Encryptor::new(Format::AgeRt, &[r]).unwrap(), b"x", &[]);
    let (other, _) = hybrid(5);
    assert_eq!(
        decrypt(std::slice::from_ref(&other), &ct),
        (vec![], Err(Error::NoMatchingIdentity))
    );
    let x25519 = Identity::generate_x25519().unwrap();
    assert_eq!(
        decrypt(std::slice::from_ref(&x25519), &ct).1,
        Err(Error::NoMatchingIdentity)
    );
    assert_eq!(
        decrypt(&[Identity::passphrase("pw")], &ct).1,
        Err(Error::NoMatchingIdentity)
    );
    // The right one among others opens it.
    assert_eq!(decrypt(&[x25519, other, id], &ct), (b"x".to_vec(), Ok(())));
    // A post-quantum identity can't open an X25519 file.
    let xid = Identity::generate_x25519().unwrap();
    let ct = encrypt_pieces(
        Encryptor::new(Format::Age, &[xid.to_recipient().unwrap()]).unwrap(),
        b"x",
        &[],
    );
    assert_eq!(
        decrypt(&[hybrid(6).0], &ct).1,
        Err(Error::NoMatchingIdentity)
    );
}

#[test]
fn key_string_errors_are_typed() {
    let (sk, pk) = generate_hybrid().unwrap();
    let invalid = |r: Result<Identity, Error>| matches!(r, Err(Error::InvalidKey(_)));
    assert!(invalid(sk.to_lowercase().parse()));
    assert!(invalid(sk[..sk.len() - 1].parse()));
    assert!(invalid("AGE-SECRET-KEY-PQ-1".parse()));
    let e = sk[..sk.len() - 1].parse::<Identity>().err().unwrap();
    assert!(!e.to_string().contains(&sk[19..40]), "{e}");
    for bad in [&pk[..pk.len() - 2], "age1pq1", &pk.to_uppercase()] {
        assert!(
            matches!(bad.parse::<Recipient>(), Err(Error::InvalidKey(_))),
            "{}",
            &bad[..bad.len().min(20)]
        );
    }
    assert!(matches!(
        "age1tagpq1qqqq".parse::<Recipient>(),
        Err(Error::UnsupportedRecipient(_))
    ));
}
