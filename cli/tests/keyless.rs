//! Receipts mean what they say (PROTOCOL.md §11.3 steps 5–6, §12.2), from the shell: a reader
//! without keys on an encrypted stream, and empty passphrases. Regressions of issue #26: a
//! keyless `httpipe read` wrote the age-rt ciphertext to stdout, exited 0, and its producer
//! printed "delivered"; `HTTPIPE_PASSPHRASE=` sent the data unencrypted.
//!
//! Run: `cargo test -p httpipe-cli --test keyless`.

mod common;

use common::*;

const AGE_RT_LINE: &[u8] = b"github.com/parsimonit/age-rt-encryption/";

/// `httpipe write` with a passphrase and `extra` flags, fed 64 KiB from a file.
fn encrypted_writer(relay: &Relay, path: &str, dir: &std::path::Path, extra: &[&str]) -> Proc {
    let input = dir.join("in");
    std::fs::write(&input, pseudo_random(64 * 1024, 3)).expect("write");
    let mut w = httpipe(["write", "-s", path, "-U", &relay.connect_url()]);
    w.args(extra).env("HTTPIPE_PASSPHRASE", "a passphrase");
    Proc::spawn("write (passphrase)", &mut w, In::File(&input), Out::Null)
}

fn keyless_reader(relay: &Relay, path: &str, extra: &[&str]) -> Done {
    let mut r = httpipe(["read", "-s", path, "-U", &relay.connect_url()]);
    r.args(extra);
    run("read (no key)", &mut r, CHILD_TIMEOUT)
}

#[test]
fn a_reader_without_keys_refuses_ciphertext_and_its_producer_is_told() {
    let relay = Relay::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = unique_path("keyless");
    let mut w = encrypted_writer(&relay, &path, dir.path(), &[]);
    let r = keyless_reader(&relay, &path, &[]);
    r.clean_error(1, &["the stream is encrypted (age-rt)", "passphrase"]);
    assert!(
        !r.stdout
            .windows(AGE_RT_LINE.len())
            .any(|w| w == AGE_RT_LINE),
        "the header line reached stdout"
    );
    let wd = w.wait(CHILD_TIMEOUT);
    wd.clean_error(5, &["WRONG_KEY"]);
    assert!(!wd.stderr.contains("delivered"), "{}", wd.stderr);
}

#[test]
fn ciphertext_on_request_is_stored_but_not_delivered_unless_accepted() {
    let relay = Relay::start();
    let dir = tempfile::tempdir().expect("tempdir");
    // asked for: the ciphertext as it is; the producer does not count it delivered
    let path = unique_path("ciphertext");
    let mut w = encrypted_writer(&relay, &path, dir.path(), &[]);
    let r = keyless_reader(&relay, &path, &["--ciphertext"]);
    r.code(0);
    assert!(r.stdout.starts_with(AGE_RT_LINE), "not the ciphertext");
    let wd = w.wait(CHILD_TIMEOUT);
    wd.clean_error(5, &["holds no key", "not confirmed"]);

    // the producer accepts ciphertext receipts: delivered, and it says which kind
    let path = unique_path("ciphertext-ok");
    let mut w = encrypted_writer(&relay, &path, dir.path(), &["--ciphertext-receipt"]);
    keyless_reader(&relay, &path, &["--ciphertext"]).code(0);
    let wd = w.wait(CHILD_TIMEOUT);
    wd.code(0);
    assert!(
        wd.stderr
            .contains("(ciphertext, not authenticated: the receiver holds no key)"),
        "{}",
        wd.stderr
    );
}

#[test]
fn an_encrypted_receipt_says_it_is_authenticated() {
    let relay = Relay::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = unique_path("authenticated");
    let mut w = encrypted_writer(&relay, &path, dir.path(), &[]);
    let mut r = httpipe(["read", "-s", &path, "-U", &relay.connect_url()]);
    r.env("HTTPIPE_PASSPHRASE", "a passphrase");
    run("read (passphrase)", &mut r, CHILD_TIMEOUT).code(0);
    let wd = w.wait(CHILD_TIMEOUT);
    wd.code(0);
    assert!(
        wd.stderr
            .contains("confirmed 65536 bytes (authenticated: it decrypted them)"),
        "{}",
        wd.stderr
    );
}

#[test]
fn an_empty_passphrase_is_a_usage_error_everywhere() {
    let relay = Relay::start();
    for mode in ["write", "read"] {
        for var in ["HTTPIPE_PASSPHRASE", "ZEBRASTREAM_PASSPHRASE"] {
            let mut c = httpipe([mode, "-s", "/empty", "-U", &relay.connect_url()]);
            c.env(var, "");
            run(mode, &mut c, CHILD_TIMEOUT).clean_error(2, &[var, "set but empty"]);
        }
        let mut c = httpipe([mode, "-s", "/empty", "-U", &relay.connect_url(), "-p", ""]);
        run(mode, &mut c, CHILD_TIMEOUT).clean_error(2, &["the passphrase is empty"]);
    }
}
