//! Helpers shared by the crypto integration tests: in-memory encrypt/decrypt, pseudo-random
//! data, temporary files, external tools.
#![allow(dead_code)]

use httpipe::crypto::{DecryptOptions, Decryptor, Encryptor, Error, Identity};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Deterministic pseudo-random bytes (xorshift64*), so failures reproduce.
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Encrypts `plain`, calling `flush` after each of the given piece sizes (rest in one piece).
pub fn encrypt_pieces(mut enc: Encryptor, plain: &[u8], pieces: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = plain;
    for &n in pieces {
        let n = n.min(rest.len());
        enc.update(&rest[..n], &mut out).expect("update");
        enc.flush(&mut out).expect("flush");
        rest = &rest[n..];
    }
    enc.update(rest, &mut out).expect("update");
    enc.finish(&mut out).expect("finish");
    out
}

/// Decrypts `data` fed in `step`-byte pieces; returns the released plaintext and the outcome.
pub fn decrypt_all(
    ids: &[Identity],
    options: DecryptOptions,
    data: &[u8],
    step: usize,
) -> (Vec<u8>, Result<(), Error>) {
    let mut dec = Decryptor::new(ids, options).expect("decryptor");
    let mut out = Vec::new();
    for piece in data.chunks(step.max(1)) {
        if let Err(e) = dec.update(piece, &mut out) {
            return (out, Err(e));
        }
    }
    let r = dec.finish(&mut out);
    (out, r)
}

/// A fresh empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "httpipe-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The project's Python virtualenv interpreter (created by `scripts/setup.sh full`).
pub fn venv_python() -> PathBuf {
    let p = repo_root().join(".venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run `scripts/setup.sh full` (it creates .venv with age-rt==0.2.2; CI does this)",
        p.display()
    );
    p
}

/// The Debian `age` CLI.
pub fn age_cli() -> PathBuf {
    for p in ["/usr/bin/age", "/usr/local/bin/age"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("the `age` command is missing: run `scripts/setup.sh full` (installs Debian's age; CI does this)");
}
