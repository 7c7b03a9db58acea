//! Interop with Debian's `age` CLI over X25519: files it encrypts (binary and armored with
//! `-a`) decrypt with ours; files we encrypt decrypt with `age -d -i`. Sizes 0, 1, 65535,
//! 65536, 65537, 131072 and 10 MiB of pseudo-random bytes.

mod crypto_support;

use crypto_support::{age_cli, decrypt_all, encrypt_pieces, pseudo_random, TempDir};
use httpipe::crypto::{DecryptOptions, Encryptor, Format, Identity, Recipient};
use std::process::{Command, Stdio};

const SIZES: [usize; 7] = [0, 1, 65535, 65536, 65537, 131072, 10 << 20];

fn run_age(args: &[&str], input: &std::path::Path) -> Vec<u8> {
    let out = Command::new(age_cli())
        .args(args)
        .stdin(std::fs::File::open(input).expect("input file"))
        .stderr(Stdio::piped())
        .output()
        .expect("spawn age");
    assert!(
        out.status.success(),
        "age {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn age_cli_reads_ours_and_we_read_age_cli() {
    let dir = TempDir::new("age-interop");
    let id = Identity::generate_x25519().unwrap();
    let recipient: Recipient = id.to_recipient().unwrap();
    let rstr = recipient.to_string();
    let key_file = dir.path("key.txt");
    std::fs::write(
        &key_file,
        format!("# test key\n{}\n", id.to_secret_string().unwrap().as_str()),
    )
    .unwrap();
    // A second, unrelated recipient: age must find its stanza among several.
    let other = Identity::generate_x25519().unwrap().to_recipient().unwrap();
    for (i, &size) in SIZES.iter().enumerate() {
        let plain = pseudo_random(size, 1000 + i as u64);
        let plain_file = dir.path("plain");
        std::fs::write(&plain_file, &plain).unwrap();

        // ours -> age (flushes at odd places must not matter for age v1)
        let enc = Encryptor::new(Format::Age, &[other.clone(), recipient.clone()]).unwrap();
        let ct = encrypt_pieces(enc, &plain, &[7, 70_000, 1]);
        let ct_file = dir.path("ours.age");
        std::fs::write(&ct_file, &ct).unwrap();
        assert!(
            run_age(&["-d", "-i", key_file.to_str().unwrap()], &ct_file) == plain,
            "age -d of ours, size {size}"
        );

        // ours armored -> age
        let enc = Encryptor::new(Format::Age, std::slice::from_ref(&recipient))
            .unwrap()
            .armored();
        std::fs::write(&ct_file, encrypt_pieces(enc, &plain, &[])).unwrap();
        assert!(
            run_age(&["-d", "-i", key_file.to_str().unwrap()], &ct_file) == plain,
            "age -d of our armor, size {size}"
        );

        // age -> ours, binary and armored, fed in uneven pieces
        for armor in [false, true] {
            let mut args = vec!["-r", rstr.as_str()];
            if armor {
                args.push("-a");
            }
            let ct = run_age(&args, &plain_file);
            let (out, r) = decrypt_all(
                std::slice::from_ref(&id),
                DecryptOptions::default(),
                &ct,
                10_007,
            );
            assert_eq!(r, Ok(()), "size {size}, armor {armor}");
            assert!(
                out == plain,
                "plaintext differs: size {size}, armor {armor}"
            );
        }
    }
}
