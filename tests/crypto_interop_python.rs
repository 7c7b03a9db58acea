//! Interop with the Python reference package `age-rt==0.2.2` (in `.venv`, created by
//! `scripts/setup.sh full`): random flush sequences encrypted by Python (both its age-rt and
//! age modes) decrypt with ours, and ours decrypt with Python. Passphrase, scrypt 2^18.

mod crypto_support;

use crypto_support::{decrypt_all, encrypt_pieces, pseudo_random, venv_python, TempDir};
use httpipe::crypto::{DecryptOptions, Encryptor, Format, Identity};
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = r#"
import sys, age_rt
mode = sys.argv[1]
if mode == "encrypt":
    fmt, pt_path, sizes, out_path = sys.argv[2:6]
    data = open(pt_path, "rb").read()
    if fmt == "age-rt":
        chunks, pos = [], 0
        for n in [int(s) for s in sizes.split(",") if s]:
            chunks.append(data[pos:pos + n]); pos += n
        enc = age_rt.AgeRTEncoder.from_passphrase("secret")
    else:  # age v1: full 64 KiB chunks, the way zebrastream-io's "age" mode writes
        chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]
        enc = age_rt.AgeEncoder.from_passphrase("secret")
    open(out_path, "wb").write(age_rt.encode_bytes(chunks, enc))
else:
    ct_path, out_path = sys.argv[2:4]
    data = open(ct_path, "rb").read()
    out = b"".join(age_rt.decode_bytes(data, age_rt.AgeAutoDecoder("secret")))
    open(out_path, "wb").write(out)
"#;

fn python(args: &[&str]) {
    let out = Command::new(venv_python())
        .arg("-c")
        .arg(SCRIPT)
        .args(args)
        .output()
        .expect("spawn python");
    assert!(
        out.status.success(),
        "python {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Random flush sizes (some empty, some a full 64 KiB) summing to at most `total`.
fn flush_sizes(total: usize, seed: u64) -> Vec<usize> {
    let r = pseudo_random(4096, seed);
    let (mut sizes, mut sum) = (Vec::new(), 0);
    for pair in r.chunks(2) {
        let n = match pair[0] % 8 {
            0 => 0,
            1 => 65536,
            2..=4 => pair[1] as usize,
            _ => (u16::from_le_bytes([pair[0], pair[1]]) as usize) % 20_000,
        };
        if sum + n > total {
            break;
        }
        sizes.push(n);
        sum += n;
    }
    sizes.push(total - sum);
    sizes
}

fn join(sizes: &[usize]) -> String {
    sizes
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn check(seed: u64, total: usize, dir: &Path) {
    let plain = pseudo_random(total, seed);
    let sizes = flush_sizes(total, seed + 7);
    let pt = dir.join("plain");
    std::fs::write(&pt, &plain).unwrap();
    let ct = dir.join("ct");
    let back = dir.join("back");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let id = [Identity::passphrase("secret")];
    // zebrastream-io's age mode ends an exact multiple of 64 KiB with an empty final chunk.
    let lenient = DecryptOptions {
        lenient_empty_final_chunk: true,
        ..DecryptOptions::default()
    };
    for (fmt, name) in [(Format::AgeRt, "age-rt"), (Format::Age, "age")] {
        // Python -> ours
        python(&["encrypt", name, &s(&pt), &join(&sizes), &s(&ct)]);
        let data = std::fs::read(&ct).unwrap();
        let (out, r) = decrypt_all(&id, lenient.clone(), &data, 4099);
        assert_eq!(r, Ok(()), "{name} from Python, seed {seed}, total {total}");
        assert!(
            out == plain,
            "{name} from Python: plaintext differs (seed {seed})"
        );

        // ours -> Python
        let enc = Encryptor::with_passphrase(fmt, "secret").unwrap();
        std::fs::write(&ct, encrypt_pieces(enc, &plain, &sizes)).unwrap();
        python(&["decrypt", &s(&ct), &s(&back)]);
        assert!(
            std::fs::read(&back).unwrap() == plain,
            "{name} to Python: plaintext differs (seed {seed})"
        );
    }
}

#[test]
fn python_age_rt_reads_ours_and_we_read_python() {
    let dir = TempDir::new("py-interop");
    check(1, 200_000, &dir.0);
    check(2, 3 * 65536, &dir.0); // exact multiple of 64 KiB: exercises the final-chunk rules
}
