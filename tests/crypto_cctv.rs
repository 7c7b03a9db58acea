//! The C2SP CCTV age vector suite (tests/vectors/age, 143 files): every success vector
//! decrypts to its payload hash, every failure vector fails with the right class of error
//! having released exactly the plaintext whose hash is given, the post-quantum hybrid
//! (`mlkem768x25519`) ones included: nothing is skipped. Counts are printed.

use httpipe::crypto::{DecryptOptions, Decryptor, Error, Identity};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

struct Vector {
    expect: String,
    payload: String,
    identities: Vec<String>,
    passphrases: Vec<String>,
    body: Vec<u8>,
}

fn parse(raw: &[u8]) -> Vector {
    let split = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("blank line after metadata");
    let meta = std::str::from_utf8(&raw[..split]).expect("ascii metadata");
    let mut v = Vector {
        expect: String::new(),
        payload: String::new(),
        identities: vec![],
        passphrases: vec![],
        body: vec![],
    };
    let mut compressed = false;
    for line in meta.lines() {
        let (k, val) = line.split_once(": ").expect("key: value");
        match k {
            "expect" => v.expect = val.into(),
            "payload" => v.payload = val.into(),
            "identity" => v.identities.push(val.into()),
            "passphrase" => v.passphrases.push(val.into()),
            "compressed" => compressed = val == "zlib",
            _ => {}
        }
    }
    if v.payload.is_empty() {
        // No `payload` line: nothing may be released.
        v.payload = hex::encode(Sha256::digest(b""));
    }
    let body = &raw[split + 2..];
    v.body = if compressed {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(body)
            .read_to_end(&mut out)
            .expect("zlib");
        out
    } else {
        body.to_vec()
    };
    v
}

fn class(e: &Error) -> &'static str {
    match e {
        Error::NoMatchingIdentity | Error::WrongPassphrase => "no match",
        Error::HeaderMac => "HMAC failure",
        Error::HeaderMalformed(_)
        | Error::WorkFactorTooHigh { .. }
        | Error::HeaderTooLarge { .. } => "header failure",
        Error::ChunkAuth { .. }
        | Error::PayloadMalformed(_)
        | Error::Truncated
        | Error::TrailingData => "payload failure",
        Error::Armor(_) => "armor failure",
        _ => "other",
    }
}

/// Decrypts `body` fed in pieces of the given sizes (cycled); returns released plaintext and outcome.
fn run(ids: &[Identity], body: &[u8], pieces: &[usize]) -> (Vec<u8>, Result<(), Error>) {
    let mut dec = Decryptor::new(ids, DecryptOptions::default()).expect("identities");
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let n = pieces[i % pieces.len()].min(rest.len());
        i += 1;
        if let Err(e) = dec.update(&rest[..n], &mut out) {
            return (out, Err(e));
        }
        rest = &rest[n..];
    }
    let r = dec.finish(&mut out);
    (out, r)
}

#[test]
fn cctv_age_vectors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/age");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("vector dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 143, "expected the full CCTV suite");
    let (mut passed, mut failures) = (0, Vec::new());
    for name in &names {
        let v = parse(&std::fs::read(dir.join(name)).expect("read"));
        let mut ids = Vec::new();
        for s in &v.identities {
            match s.parse::<Identity>() {
                Ok(id) => ids.push(id),
                Err(e) => panic!("{name}: identity does not parse: {e}"),
            }
        }
        ids.extend(v.passphrases.iter().map(|p| Identity::passphrase(p)));
        if ids.is_empty() {
            // `empty` / `armor_empty` name no identity; any will do.
            ids.push(Identity::generate_x25519().expect("keygen"));
        }
        for pieces in [&[usize::MAX][..], &[1, 7, 4096, 65535, 65553, 100_000]] {
            let (out, result) = run(&ids, &v.body, pieces);
            let got_hash = hex::encode(Sha256::digest(&out));
            let got_class = match &result {
                Ok(()) => "success",
                Err(e) => class(e),
            };
            if got_class != v.expect || got_hash != v.payload {
                failures.push(format!(
                    "{name} (pieces {:?}): expected {} / {}, got {} ({:?}) / {}",
                    pieces,
                    v.expect,
                    &v.payload[..8],
                    got_class,
                    result.err().map(|e| e.to_string()),
                    &got_hash[..8]
                ));
            }
        }
        if !failures.iter().any(|f| f.starts_with(&format!("{name} "))) {
            passed += 1;
        }
    }
    // Written to the real stderr (not captured by the test harness) so CI logs show it.
    let summary = format!(
        "CCTV age vectors: {passed} passed, {} failed\n",
        names.len() - passed
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), summary.as_bytes());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(passed, 143);
}
