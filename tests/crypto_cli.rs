//! The `examples/age.rs` CLI (built by `cargo test` with the other examples): keygen,
//! X25519, post-quantum and passphrase round trips, real-time age-rt lines, one-line errors, exit codes.

mod crypto_support;

use crypto_support::{age_cli, TempDir};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn cli() -> PathBuf {
    // target/<profile>/deps/crypto_cli-HASH -> target/<profile>/examples/age
    let exe = std::env::current_exe().unwrap();
    let p = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("age");
    assert!(
        p.exists(),
        "{} missing: run via `cargo test` (it builds the examples)",
        p.display()
    );
    p
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(cli())
        .args(args)
        .env("PASS", "correct horse")
        .env("WRONG", "battery staple")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

#[test]
fn keygen_x25519_round_trip_and_age_reads_it() {
    let dir = TempDir::new("cli");
    let out = run(&["keygen"], b"");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();
    assert!(text.lines().any(|l| l.starts_with("AGE-SECRET-KEY-1")));
    let key = dir.path("key.txt");
    std::fs::write(&key, &text).unwrap();
    let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    for armor in [false, true] {
        let mut args = vec!["encrypt", "-r", &recipient];
        if armor {
            args.push("--armor");
        }
        let ct = run(&args, &plain);
        assert!(
            ct.status.success(),
            "{}",
            String::from_utf8_lossy(&ct.stderr)
        );
        let back = run(&["decrypt", "-i", key.to_str().unwrap()], &ct.stdout);
        assert!(back.status.success());
        assert!(back.stdout == plain);
        // and the real age CLI agrees
        std::fs::write(dir.path("ct"), &ct.stdout).unwrap();
        let age = Command::new(age_cli())
            .args(["-d", "-i"])
            .arg(&key)
            .arg(dir.path("ct"))
            .output()
            .unwrap();
        assert!(age.status.success() && age.stdout == plain);
    }
}

#[test]
fn keygen_pq_round_trip_in_both_formats() {
    let dir = TempDir::new("cli-pq");
    let out = run(&["keygen", "-pq"], b"");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();
    assert!(recipient.starts_with("age1pq1"), "{recipient}");
    assert!(text.lines().any(|l| l.starts_with("AGE-SECRET-KEY-PQ-1")));
    let key = dir.path("key.txt");
    std::fs::write(&key, &text).unwrap();
    let plain: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
    for format in ["age", "age-rt"] {
        let ct = run(&["encrypt", "--format", format, "-r", &recipient], &plain);
        assert!(
            ct.status.success(),
            "{}",
            String::from_utf8_lossy(&ct.stderr)
        );
        assert!(String::from_utf8_lossy(&ct.stdout[..100]).contains("-> mlkem768x25519 "));
        let back = run(&["decrypt", "-i", key.to_str().unwrap()], &ct.stdout);
        assert!(back.status.success());
        assert!(back.stdout == plain, "{format}");
    }
}

#[test]
fn passphrase_errors_are_one_line_and_release_nothing_unauthenticated() {
    let ct = run(
        &[
            "encrypt",
            "--format",
            "age-rt",
            "--passphrase-env",
            "PASS",
            "--work-factor",
            "12",
        ],
        b"one\ntwo\n",
    );
    assert!(ct.status.success());
    let ok = run(&["decrypt", "--passphrase-env", "PASS"], &ct.stdout);
    assert_eq!(ok.stdout, b"one\ntwo\n");

    let wrong = run(&["decrypt", "--passphrase-env", "WRONG"], &ct.stdout);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(wrong.stdout.is_empty());
    let err = String::from_utf8(wrong.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("wrong passphrase"), "{err}");

    // Cut off the empty final record: both authentic records are written, then the error.
    let cut = run(
        &["decrypt", "--passphrase-env", "PASS"],
        &ct.stdout[..ct.stdout.len() - 20],
    );
    assert_eq!(cut.status.code(), Some(1));
    assert_eq!(cut.stdout, b"one\ntwo\n");
    assert!(String::from_utf8(cut.stderr).unwrap().contains("truncated"));

    // Tamper with the last data record: only the first record comes out.
    let mut bad = ct.stdout.clone();
    let n = bad.len();
    bad[n - 25] ^= 1;
    let tampered = run(&["decrypt", "--passphrase-env", "PASS"], &bad);
    assert_eq!(tampered.status.code(), Some(1));
    assert_eq!(tampered.stdout, b"one\n");
    assert!(String::from_utf8(tampered.stderr)
        .unwrap()
        .contains("failed to authenticate"));

    let usage = run(&["encrypt"], b"");
    assert_eq!(usage.status.code(), Some(1));
}

#[test]
fn age_rt_lines_are_real_time() {
    // encrypt | decrypt, with encrypt's stdin kept open: each line must come through at once.
    let mut enc = Command::new(cli())
        .args([
            "encrypt",
            "--format",
            "age-rt",
            "--passphrase-env",
            "PASS",
            "--work-factor",
            "10",
        ])
        .env("PASS", "pw")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut dec = Command::new(cli())
        .args(["decrypt", "--passphrase-env", "PASS"])
        .env("PASS", "pw")
        .stdin(enc.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (enc_pid, dec_pid) = (enc.id(), dec.id());
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        // The test hangs only if lines are held back: end our two children so it fails
        // visibly. They are not reaped before `done` is set, so their PIDs are still ours.
        if !flag.load(Ordering::SeqCst) {
            for pid in [enc_pid, dec_pid] {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    });
    let mut input = enc.stdin.take().unwrap();
    let mut lines = BufReader::new(dec.stdout.take().unwrap());
    for msg in ["first line\n", "second line\n"] {
        input.write_all(msg.as_bytes()).unwrap();
        input.flush().unwrap();
        let mut got = String::new();
        lines.read_line(&mut got).unwrap();
        assert_eq!(got, msg, "line not delivered while the stream is open");
    }
    drop(input);
    let (e, d) = (enc.wait().unwrap(), dec.wait().unwrap());
    done.store(true, Ordering::SeqCst);
    assert!(e.success() && d.success());
}
