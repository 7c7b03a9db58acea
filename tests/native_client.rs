//! The native client (`httpipe::native`) against the real relay binary on 127.0.0.1:
//! transfers of every kind (plain, age-rt passphrase, age X25519; streaming and segmented;
//! both arrival orders, with and without rendezvous; HTTP/1.1 and h2 over TLS), writers with
//! flush / auto-flush / abort, and every failure code a person can provoke.
//!
//! The relay binary is taken from the same target directory (built with
//! `cargo build -p httpipe-relay` first if it is missing).
#![cfg(all(feature = "native", not(target_arch = "wasm32")))]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use httpipe::native::{
    Client, ConnectMode, Error, ErrorCode, Format, ReceiveOptions, SendOptions, SendReport, Target,
    Transport, UploadMode,
};
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------------
// The relay

struct Relay {
    child: Child,
    http: String,
    https: Option<String>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>` of this test binary (`target/<profile>/deps/native_client-HASH`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

fn relay_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("target dir").to_path_buf();
        let name = format!("httpipe-relay{}", std::env::consts::EXE_SUFFIX);
        let candidates = [
            profile.join(&name),
            target.join("release").join(&name),
            target.join("debug").join(&name),
        ];
        if let Some(p) = candidates.iter().find(|p| p.exists()) {
            return p.clone();
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "httpipe-relay"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build -p httpipe-relay");
        assert!(status.success(), "cargo build -p httpipe-relay failed");
        let p = target.join("debug").join(&name);
        assert!(p.exists(), "{} missing after the build", p.display());
        p
    })
    .clone()
}

fn start_relay(extra: &[&str]) -> Relay {
    let mut child = Command::new(relay_binary())
        .args([
            "--host",
            "127.0.0.1",
            "--http-port",
            "0",
            "--https-port",
            "0",
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start httpipe-relay");
    let stdout = child.stdout.take().expect("relay stdout");
    let mut lines = BufReader::new(stdout).lines();
    let (mut http, mut https) = (None, None);
    for line in lines.by_ref() {
        let line = line.expect("relay output");
        if let Some(u) = line.strip_prefix("listening ") {
            if u.starts_with("https://") {
                https = Some(u.trim().to_string());
            } else {
                http = Some(u.trim().to_string());
            }
        }
        if http.is_some() && https.is_some() {
            break;
        }
    }
    // Keep draining stdout so the relay never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    Relay {
        child,
        http: http.expect("the relay printed no http URL"),
        https,
    }
}

fn path(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "/native/{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn target(relay: &Relay, name: &str) -> Target {
    Target::new(relay.http.clone(), path(name))
}

fn client() -> Client {
    Client::new().expect("client")
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n);
    v
}

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

const T: Duration = Duration::from_secs(20);

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(T, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still running after {T:?}"),
    }
}

/// A writer and its consumer, met: the consumer's stream starts before the first write (the
/// writer's upload is at the relay once `open_writer` returned, PROTOCOL.md §12.5). Each side
/// is bounded on its own, so that a hang names its side.
async fn open_pair(
    c: &Client,
    so: SendOptions,
    ro: ReceiveOptions,
) -> (httpipe::native::Writer, httpipe::native::Reader) {
    let receiving = {
        let c = c.clone();
        tokio::spawn(async move { c.receive(ro).await })
    };
    let w = within("open_writer (until its consumer came)", c.open_writer(so))
        .await
        .expect("open_writer");
    let received = within(
        "receive (its stream starts before the writer's first byte)",
        receiving,
    )
    .await
    .expect("join")
    .expect("receive");
    (w, received.reader)
}

async fn read_all(mut r: httpipe::native::Reader) -> Result<Vec<u8>, Error> {
    let mut all = Vec::new();
    while let Some(c) = r.next_chunk().await? {
        all.extend_from_slice(&c);
    }
    Ok(all)
}

#[derive(Clone, Copy, Debug)]
enum First {
    Sender,
    Receiver,
}

#[derive(Debug)]
struct Got {
    content_type: Option<String>,
    filename: Option<String>,
    size: Option<u64>,
    bytes: Vec<u8>,
}

/// Sends `payload` and receives it, `first` starting 150 ms before the other side.
async fn transfer(
    send: SendOptions,
    recv: ReceiveOptions,
    payload: Vec<u8>,
    first: First,
) -> (Result<SendReport, Error>, Result<Got, Error>) {
    let c = client();
    let head_start = Duration::from_millis(150);
    let s = async {
        if let First::Receiver = first {
            tokio::time::sleep(head_start).await;
        }
        c.send(std::io::Cursor::new(payload), send).await
    };
    let r = async {
        if let First::Sender = first {
            tokio::time::sleep(head_start).await;
        }
        let got = c.receive(recv).await?;
        Ok(Got {
            content_type: got.content_type,
            filename: got.filename,
            size: got.size,
            bytes: read_all(got.reader).await?,
        })
    };
    within("transfer", async { tokio::join!(s, r) }).await
}

fn code<T: std::fmt::Debug>(r: Result<T, Error>) -> ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code,
    }
}

// ---------------------------------------------------------------------------------------------
// Transfers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_sizes_both_orders_with_and_without_rendezvous() {
    let relay = start_relay(&[]);
    for (i, size) in [0usize, 1, 3 << 20, 20 << 20].into_iter().enumerate() {
        let payload = data(size, i as u64);
        for first in [First::Sender, First::Receiver] {
            for rendezvous in [true, false] {
                let t = target(&relay, "plain");
                let mut so = SendOptions::new(t.clone());
                so.rendezvous = rendezvous;
                so.content_type = Some("text/csv".into());
                so.filename = Some("Grüße.csv".into());
                so.size = Some(size as u64);
                let mut ro = ReceiveOptions::new(t);
                ro.rendezvous = rendezvous;
                let (s, r) = transfer(so, ro, payload.clone(), first).await;
                let ctx = format!("{size} B, {first:?} first, rendezvous {rendezvous}");
                let rep = s.unwrap_or_else(|e| panic!("{ctx}: send: {e}"));
                let got = r.unwrap_or_else(|e| panic!("{ctx}: receive: {e}"));
                assert_eq!(got.bytes.len(), size, "{ctx}");
                assert_eq!(sha(&got.bytes), sha(&payload), "{ctx}");
                assert_eq!(rep.bytes, size as u64, "{ctx}");
                assert_eq!(rep.transport, Transport::Stream, "{ctx}");
                assert_eq!(rep.relay_state, "[STATE:TRANSFER_SUCCESSFUL]", "{ctx}");
                assert_eq!(got.content_type.as_deref(), Some("text/csv"), "{ctx}");
                assert_eq!(got.filename.as_deref(), Some("Grüße.csv"), "{ctx}");
                assert_eq!(got.size, Some(size as u64), "{ctx}");
                // Delivery receipts (PROTOCOL.md §12) need the rendezvous: a plain one commits
                // to the bytes as they arrived (a checksum, not authenticated).
                match (&rep.receipt, rendezvous) {
                    (Some(r), true) => {
                        assert_eq!(r.bytes, size as u64, "{ctx}");
                        assert!(!r.authenticated, "{ctx}");
                    }
                    (None, false) => {}
                    (r, _) => panic!("{ctx}: receipt {r:?}"),
                }
                assert_eq!(rep.resumes, 0, "{ctx}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn age_rt_passphrase_and_age_x25519_both_orders() {
    let relay = start_relay(&[]);
    let (secret, public) = httpipe::crypto::generate_x25519().expect("keygen");
    let payload = data((1 << 20) + 4321, 7);
    for first in [First::Sender, First::Receiver] {
        // age-rt, passphrase
        let t = target(&relay, "agert");
        let mut so = SendOptions::new(t.clone());
        so.passphrase = Some("correct horse".into());
        so.filename = Some("secret.txt".into());
        let mut ro = ReceiveOptions::new(t);
        ro.passphrase = Some("correct horse".into());
        let (s, r) = transfer(so, ro, payload.clone(), first).await;
        let rep = s.unwrap_or_else(|e| panic!("age-rt {first:?}: send: {e}"));
        let got = r.unwrap_or_else(|e| panic!("age-rt {first:?}: receive: {e}"));
        // The receipt of a decrypting consumer: the plaintext, signed with the receipt key.
        let receipt = rep.receipt.expect("a receipt");
        assert_eq!(receipt.bytes, payload.len() as u64);
        assert!(receipt.authenticated);
        assert_eq!(sha(&got.bytes), sha(&payload), "age-rt {first:?}");
        assert_eq!(got.filename, None, "nothing about the plaintext in clear");
        assert_eq!(got.content_type, None);
        // age v1, X25519 (a multiple of 64 KiB: the final-chunk edge)
        let t = target(&relay, "age");
        let exact = data(4 * 64 * 1024, 8);
        let mut so = SendOptions::new(t.clone());
        so.recipients = vec![public.clone()];
        so.format = Format::Age;
        let mut ro = ReceiveOptions::new(t);
        ro.identities = vec![secret.to_string()];
        let (s, r) = transfer(so, ro, exact.clone(), first).await;
        let rep = s.unwrap_or_else(|e| panic!("age {first:?}: send: {e}"));
        let got = r.unwrap_or_else(|e| panic!("age {first:?}: receive: {e}"));
        assert!(rep.receipt.expect("a receipt").authenticated);
        assert_eq!(sha(&got.bytes), sha(&exact), "age {first:?}");
    }
}

// Regression (PROTOCOL.md §12.1 `plain`): an age file sent as it is to a receiver that
// decrypts it: the receiver's receipt committed to the plaintext, and the sender, which holds
// no key, failed UNCONFIRMED ("says N bytes arrived, but M were sent") on a complete transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_age_file_sent_as_it_is_to_a_receiver_that_decrypts_is_delivered() {
    let relay = start_relay(&[]);
    let (secret, public) = httpipe::crypto::generate_x25519().expect("keygen");
    let plaintext = data((1 << 20) + 99, 11);
    let recipient: httpipe::crypto::Recipient = public.parse().expect("recipient");
    let mut enc = httpipe::crypto::Encryptor::new(Format::Age, &[recipient]).expect("encryptor");
    let mut file = Vec::new();
    enc.update(&plaintext, &mut file).expect("encrypt");
    enc.finish(&mut file).expect("finish");
    for first in [First::Sender, First::Receiver] {
        let t = target(&relay, "agefile");
        let so = SendOptions::new(t.clone());
        let mut ro = ReceiveOptions::new(t);
        ro.identities = vec![secret.to_string()];
        let (s, r) = transfer(so, ro, file.clone(), first).await;
        let rep = s.unwrap_or_else(|e| panic!("{first:?}: send: {e}"));
        let got = r.unwrap_or_else(|e| panic!("{first:?}: receive: {e}"));
        assert_eq!(sha(&got.bytes), sha(&plaintext), "{first:?}: decrypted");
        // the sender's commitment: the bytes it sent, unauthenticated (it holds no key)
        let receipt = rep.receipt.expect("a receipt");
        assert_eq!(receipt.bytes, file.len() as u64, "{first:?}");
        assert!(!receipt.authenticated, "{first:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segmented_upload_when_forced() {
    let relay = start_relay(&[]);
    let payload = data((1 << 20) + 123, 3);
    for first in [First::Sender, First::Receiver] {
        let t = target(&relay, "seg");
        let mut so = SendOptions::new(t.clone());
        so.upload = UploadMode::Segmented;
        so.part_size = Some(100_000);
        so.content_type = Some("application/x-test".into());
        let (s, r) = transfer(so, ReceiveOptions::new(t), payload.clone(), first).await;
        let rep = s.unwrap_or_else(|e| panic!("{first:?}: send: {e}"));
        let got = r.unwrap_or_else(|e| panic!("{first:?}: receive: {e}"));
        assert_eq!(rep.transport, Transport::Segmented);
        assert_eq!(rep.bytes, payload.len() as u64);
        assert_eq!(sha(&got.bytes), sha(&payload));
        assert_eq!(got.content_type.as_deref(), Some("application/x-test"));
    }
    // Encrypted, and empty.
    let t = target(&relay, "seg-enc");
    let mut so = SendOptions::new(t.clone());
    so.upload = UploadMode::Segmented;
    so.part_size = Some(50_000);
    let (secret, public) = httpipe::crypto::generate_x25519().expect("keygen");
    so.recipients = vec![public];
    let mut ro = ReceiveOptions::new(t);
    ro.identities = vec![secret.to_string()];
    let (s, r) = transfer(so, ro, payload.clone(), First::Sender).await;
    assert_eq!(s.expect("send").transport, Transport::Segmented);
    assert_eq!(sha(&r.expect("receive").bytes), sha(&payload));
    let t = target(&relay, "seg-empty");
    let mut so = SendOptions::new(t.clone());
    so.upload = UploadMode::Segmented;
    let (s, r) = transfer(so, ReceiveOptions::new(t), Vec::new(), First::Receiver).await;
    s.expect("send");
    assert!(r.expect("receive").bytes.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_over_tls_streams() {
    let relay = start_relay(&[]);
    let c = Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .expect("client");
    let t = Target::new(relay.https.clone().expect("https"), path("h2"));
    let payload = data(5 << 20, 11);
    let p2 = payload.clone();
    let (s, r) = within("h2", async {
        tokio::join!(
            c.send(std::io::Cursor::new(p2), SendOptions::new(t.clone())),
            async {
                let got = c.receive(ReceiveOptions::new(t.clone())).await?;
                read_all(got.reader).await
            }
        )
    })
    .await;
    assert_eq!(s.expect("send").transport, Transport::Stream);
    assert_eq!(sha(&r.expect("receive")), sha(&payload));
    // Without accepting the self-signed certificate: a network error.
    let strict = Client::builder()
        .danger_accept_invalid_certs(false)
        .build()
        .expect("client");
    let e = strict
        .connect(
            &Target::new(relay.https.clone().expect("https"), path("h2-strict")),
            ConnectMode::AwaitReader,
            Some(Duration::from_secs(1)),
        )
        .await;
    assert_eq!(code(e), ErrorCode::Network);
}

// ---------------------------------------------------------------------------------------------
// Writers

async fn writer_lines(passphrase: Option<&str>) {
    let relay = start_relay(&[]);
    let c = client();
    let t = target(&relay, "writer");
    let mut so = SendOptions::new(t.clone());
    so.passphrase = passphrase.map(str::to_string);
    let mut ro = ReceiveOptions::new(t);
    ro.passphrase = passphrase.map(str::to_string);
    let (mut w, mut reader) = open_pair(&c, so, ro).await;
    for i in 0..3 {
        let line = format!("{{\"event\":{i}}}\n");
        w.write_all(line.as_bytes()).await.expect("write");
        w.flush().await.expect("flush");
        let mut got = Vec::new();
        while got.len() < line.len() {
            // `within`'s bound, not less: the first read runs scrypt with a passphrase, on a
            // machine that runs the other tests too (unflushed, it would never come)
            let chunk = within(
                "the flushed line, before the writer finishes",
                reader.next_chunk(),
            )
            .await
            .expect("read")
            .expect("not the end yet");
            got.extend_from_slice(&chunk);
        }
        assert_eq!(got, line.as_bytes());
    }
    // A large write (split by the encoder) and the end.
    let big = data(3 << 20, 5);
    w.write_all(&big).await.expect("big write");
    let (rep, rest) = within("finish", async {
        tokio::join!(w.finish(), read_all(reader))
    })
    .await;
    let rep = rep.expect("finish");
    assert_eq!(rep.relay_state, "[STATE:TRANSFER_SUCCESSFUL]");
    assert_eq!(sha(&rest.expect("rest")), sha(&big));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_flushed_lines_arrive_before_finish_plain() {
    writer_lines(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_flushed_lines_arrive_before_finish_age_rt() {
    writer_lines(Some("pw")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_auto_flush_and_async_write() {
    let relay = start_relay(&[]);
    use tokio::io::AsyncWriteExt;
    for passphrase in [None, Some("pw")] {
        let c = client();
        let t = target(&relay, "autoflush");
        let mut so = SendOptions::new(t.clone());
        so.auto_flush = Some(Duration::from_millis(200));
        so.passphrase = passphrase.map(str::to_string);
        let mut ro = ReceiveOptions::new(t);
        ro.passphrase = passphrase.map(str::to_string);
        let (mut w, mut reader) = open_pair(&c, so, ro).await;
        let started = Instant::now();
        // Through AsyncWrite, without any flush.
        AsyncWriteExt::write_all(&mut w, b"tick\n")
            .await
            .expect("write");
        // `within`'s bound (scrypt runs in the first read with a passphrase): unflushed, the
        // line would never come before finish
        let chunk = within("the auto-flushed line", reader.next_chunk())
            .await
            .expect("read")
            .expect("data");
        assert_eq!(&chunk[..], b"tick\n");
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "{:?}",
            started.elapsed()
        );
        // finish waits for the consumer's receipt (PROTOCOL.md §12), sent at its clean end:
        // read on while it runs.
        let (done, end) = within("finish", async {
            tokio::join!(w.shutdown(), reader.next_chunk())
        })
        .await;
        done.expect("shutdown = finish");
        assert_eq!(end.expect("clean end"), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_abort_and_dropped_send_truncate_the_consumer() {
    let relay = start_relay(&[]);
    let c = client();
    for passphrase in [None, Some("pw")] {
        let t = target(&relay, "abort");
        let mut so = SendOptions::new(t.clone());
        so.passphrase = passphrase.map(str::to_string);
        let mut ro = ReceiveOptions::new(t);
        ro.passphrase = passphrase.map(str::to_string);
        let (mut w, mut reader) = open_pair(&c, so, ro).await;
        w.write_all(b"partial").await.expect("write");
        w.flush().await.expect("flush");
        let first = within("read", reader.next_chunk()).await.expect("read");
        assert_eq!(first.as_deref(), Some(&b"partial"[..]));
        w.abort("test").await;
        let e = within("truncation", read_all(reader)).await;
        assert_eq!(code(e), ErrorCode::Truncated, "{passphrase:?}");
    }
    // A send future dropped midway cuts the stream too.
    let t = target(&relay, "dropped");
    let sending = {
        let c = c.clone();
        let t = t.clone();
        tokio::spawn(async move { c.send(tokio::io::repeat(7), SendOptions::new(t)).await })
    };
    let mut reader = within("receive", c.receive(ReceiveOptions::new(t)))
        .await
        .expect("receive")
        .reader;
    let mut n = 0;
    while n < (1 << 20) {
        n += within("read", reader.next_chunk())
            .await
            .expect("read")
            .expect("data")
            .len();
    }
    sending.abort();
    let e = within("truncation", read_all(reader)).await;
    assert_eq!(code(e), ErrorCode::Truncated);
}

// ---------------------------------------------------------------------------------------------
// Failures

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_leaving_is_peer_disconnected() {
    let relay = start_relay(&[]);
    let c = client();
    // send() of an endless source.
    let t = target(&relay, "leave");
    let sending = {
        let c = c.clone();
        let t = t.clone();
        tokio::spawn(async move { c.send(tokio::io::repeat(1), SendOptions::new(t)).await })
    };
    let mut reader = within("receive", c.receive(ReceiveOptions::new(t)))
        .await
        .expect("receive")
        .reader;
    let mut n = 0;
    while n < (2 << 20) {
        n += reader
            .next_chunk()
            .await
            .expect("read")
            .expect("data")
            .len();
    }
    drop(reader);
    let r = within("send ends", sending).await.expect("join");
    assert_eq!(code(r), ErrorCode::PeerDisconnected);

    // A writer: write_all fails soon after.
    let t = target(&relay, "leave-w");
    let (mut w, mut reader) = open_pair(
        &c,
        SendOptions::new(t.clone()),
        ReceiveOptions::new(t.clone()),
    )
    .await;
    let chunk = vec![0u8; 256 * 1024];
    w.write_all(&chunk).await.expect("write");
    within("read", reader.next_chunk()).await.expect("read");
    drop(reader);
    let e = within("write fails", async {
        loop {
            if let Err(e) = w.write_all(&chunk).await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(e.code, ErrorCode::PeerDisconnected, "{e}");
    assert_eq!(code(w.flush().await), ErrorCode::PeerDisconnected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passphrase_is_wrong_key_before_any_plaintext() {
    let relay = start_relay(&[]);
    let t = target(&relay, "wrongkey");
    let mut so = SendOptions::new(t.clone());
    so.passphrase = Some("right".into());
    let mut ro = ReceiveOptions::new(t);
    ro.passphrase = Some("wrong".into());
    let c = client();
    let (s, r) = within("wrong key", async {
        tokio::join!(c.send(std::io::Cursor::new(data(100_000, 1)), so), async {
            let mut got = c.receive(ro).await?;
            // The very first read fails: no plaintext was released.
            got.reader.next_chunk().await
        })
    })
    .await;
    assert_eq!(code(r), ErrorCode::WrongKey);
    // The producer of a small payload may have finished before the consumer left.
    if let Err(e) = s {
        assert_eq!(e.code, ErrorCode::PeerDisconnected, "{e}");
        // the consumer's code, from its failed receipt (PROTOCOL.md §12.2)
        assert_eq!(e.peer(), Some(ErrorCode::WrongKey), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_are_connect_timeout() {
    let relay = start_relay(&[]);
    let c = client();
    let started = Instant::now();
    let e = c
        .connect(
            &target(&relay, "timeout"),
            ConnectMode::AwaitReader,
            Some(Duration::from_secs(1)),
        )
        .await;
    assert_eq!(code(e), ErrorCode::ConnectTimeout);
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut so = SendOptions::new(target(&relay, "timeout-send"));
    so.timeout = Some(Duration::from_secs(1));
    assert_eq!(code(c.send(&b"x"[..], so).await), ErrorCode::ConnectTimeout);
    let mut ro = ReceiveOptions::new(target(&relay, "timeout-recv"));
    ro.timeout = Some(Duration::from_secs(1));
    assert_eq!(code(c.receive(ro).await), ErrorCode::ConnectTimeout);
    // Without rendezvous the GET itself waits (and times out).
    let mut ro = ReceiveOptions::new(target(&relay, "timeout-get"));
    ro.rendezvous = false;
    ro.timeout = Some(Duration::from_secs(1));
    assert_eq!(code(c.receive(ro).await), ErrorCode::ConnectTimeout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_not_listening_is_network() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let t = Target::new(format!("http://127.0.0.1:{port}"), "/nobody");
    let c = client();
    assert_eq!(
        code(c.send(&b"x"[..], SendOptions::new(t.clone())).await),
        ErrorCode::Network
    );
    let mut so = SendOptions::new(t.clone());
    so.rendezvous = false;
    assert_eq!(code(c.send(&b"x"[..], so).await), ErrorCode::Network);
    assert_eq!(
        code(c.receive(ReceiveOptions::new(t.clone())).await),
        ErrorCode::Network
    );
    assert_eq!(
        code(c.open_writer(SendOptions::new(t)).await),
        ErrorCode::Network
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_options_are_unsupported() {
    let relay = start_relay(&[]);
    let c = client();
    let mut so = SendOptions::new(Target::new("ftp://x", "/p"));
    assert_eq!(
        code(c.send(&b""[..], so.clone()).await),
        ErrorCode::Unsupported
    );
    so.target = target(&relay, "bad");
    so.recipients = vec!["age1notakey".into()];
    assert_eq!(
        code(c.send(&b""[..], so.clone()).await),
        ErrorCode::Unsupported
    );
    so.recipients.clear();
    so.part_size = Some(0);
    assert_eq!(code(c.send(&b""[..], so).await), ErrorCode::Unsupported);
    let mut ro = ReceiveOptions::new(target(&relay, "bad"));
    ro.identities = vec!["AGE-SECRET-KEY-1NOPE".into()];
    assert_eq!(code(c.receive(ro).await), ErrorCode::Unsupported);
    let ro = ReceiveOptions::new(Target::new(relay.http.clone(), "/a?b"));
    assert_eq!(code(c.receive(ro).await), ErrorCode::Unsupported);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_path_is_relay_error() {
    let relay = start_relay(&[]);
    let c = client();
    let t = target(&relay, "busy");
    let mut so = SendOptions::new(t.clone());
    so.rendezvous = false;
    let first = {
        let c = c.clone();
        let so = so.clone();
        tokio::spawn(async move { c.send(tokio::io::repeat(0), so).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = within("second sender", c.send(&b"second"[..], so)).await;
    let e = e.expect_err("a second sender is refused");
    assert_eq!(e.code, ErrorCode::RelayError, "{e}");
    assert!(e.message.contains("Another sender"), "{e}");
    first.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_mode_tokens() {
    use httpipe::protocol::token::{sign, Claims, Mode};
    let dir = std::env::temp_dir().join(format!("httpipe-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let key_file = dir.join("relay.key");
    let key = "native-client-test-key-0123456789abcdef";
    std::fs::write(&key_file, format!("{key}\n")).expect("key file");
    let relay = start_relay(&["--auth-key-file", key_file.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_dir_all(&dir);
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        + 3600;
    let token = |p: &str, mode: Mode| {
        sign(
            key.as_bytes(),
            &Claims {
                path: p.into(),
                mode,
                recursive: false,
                expires,
            },
        )
    };
    let c = client();
    let p = path("auth");
    let mut t = Target::new(relay.http.clone(), p.clone());
    // No token.
    assert_eq!(
        code(c.send(&b"x"[..], SendOptions::new(t.clone())).await),
        ErrorCode::Unauthorized
    );
    let mut ro = ReceiveOptions::new(t.clone());
    ro.rendezvous = false;
    assert_eq!(code(c.receive(ro).await), ErrorCode::Unauthorized);
    // A read token for writing; a write token for another path.
    t.token = Some(token(&p, Mode::Read));
    assert_eq!(
        code(c.send(&b"x"[..], SendOptions::new(t.clone())).await),
        ErrorCode::Forbidden
    );
    t.token = Some(token("/elsewhere", Mode::Write));
    let mut so = SendOptions::new(t.clone());
    so.rendezvous = false;
    assert_eq!(code(c.send(&b"x"[..], so).await), ErrorCode::Forbidden);
    // The right tokens work.
    let mut st = t.clone();
    st.token = Some(token(&p, Mode::Write));
    let mut rt = t;
    rt.token = Some(token(&p, Mode::Read));
    let payload = data(200_000, 9);
    let (s, r) = transfer(
        SendOptions::new(st),
        ReceiveOptions::new(rt),
        payload.clone(),
        First::Receiver,
    )
    .await;
    s.expect("send with a token");
    assert_eq!(sha(&r.expect("receive with a token").bytes), sha(&payload));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_is_at_the_relay_before_its_first_byte_and_progress_is_reported() {
    use std::sync::Mutex;
    let relay = start_relay(&[]);
    let c = client();
    let t = target(&relay, "early");
    let mut so = SendOptions::new(t.clone());
    so.rendezvous = false;
    so.size = Some(300_000);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let s2 = sent.clone();
    so.on_progress = Some(Arc::new(move |p| s2.lock().unwrap().push(p)));
    let mut w = c.open_writer(so).await.expect("open_writer");
    let mut ro = ReceiveOptions::new(t);
    ro.rendezvous = false;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s3 = seen.clone();
    ro.on_progress = Some(Arc::new(move |p| s3.lock().unwrap().push(p)));
    // The producer's request is at the relay although nothing was written yet.
    let got = tokio::time::timeout(Duration::from_secs(5), c.receive(ro))
        .await
        .expect("the consumer's stream starts before the first write")
        .expect("receive");
    assert_eq!(got.size, Some(300_000));
    let payload = data(300_000, 2);
    w.write_all(&payload).await.expect("write");
    let (rep, rest) = within("finish", async {
        tokio::join!(w.finish(), read_all(got.reader))
    })
    .await;
    assert_eq!(rep.expect("finish").bytes, 300_000);
    assert_eq!(sha(&rest.expect("read")), sha(&payload));
    for (side, reports) in [("sender", sent), ("receiver", seen)] {
        let reports = reports.lock().unwrap();
        let last = reports
            .last()
            .unwrap_or_else(|| panic!("{side}: no progress"));
        assert_eq!(last.bytes, 300_000, "{side}");
        assert_eq!(last.total, Some(300_000), "{side}");
    }
}

#[test]
fn the_public_types_can_cross_tasks() {
    fn send<T: Send>(_: &T) {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Client>();
    send_sync::<Error>();
    send_sync::<SendOptions>();
    let c = client();
    let t = Target::new("http://127.0.0.1:9", "/p");
    send(&c.send(&b""[..], SendOptions::new(t.clone())));
    send(&c.open_writer(SendOptions::new(t.clone())));
    send(&c.receive(ReceiveOptions::new(t.clone())));
    send(&c.connect(&t, ConnectMode::AwaitWriter, None));
    fn send_type<T: Send>() {}
    send_type::<httpipe::native::Writer>();
    send_type::<httpipe::native::Reader>();
    send_type::<httpipe::native::Received>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_errors_carry_the_code() {
    use tokio::io::AsyncReadExt;
    let relay = start_relay(&[]);
    let c = client();
    let t = target(&relay, "io");
    let (mut w, mut reader) = open_pair(
        &c,
        SendOptions::new(t.clone()),
        ReceiveOptions::new(t.clone()),
    )
    .await;
    w.write_all(b"abc").await.expect("write");
    w.flush().await.expect("flush");
    let mut buf = [0u8; 2];
    reader.read_exact(&mut buf).await.expect("read");
    assert_eq!(&buf, b"ab");
    w.abort("io test").await;
    let mut rest = Vec::new();
    let e = within("read", reader.read_to_end(&mut rest))
        .await
        .expect_err("a cut stream is an error, not EOF");
    assert_eq!(rest, b"c");
    let coded = httpipe::native::error_of(&e).expect("carries the Error");
    assert_eq!(coded.code, ErrorCode::Truncated);
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

/// A proxy in front of the relay that cuts every streaming upload (a `POST` without `part=`)
/// right after its head, as a hop that can't stream would: the producer must fall back to the
/// segmented upload, replaying the bytes it had pulled, and remember that for the origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_upload_cut_before_any_byte_falls_back_to_segmented() {
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let relay = start_relay(&[]);
    let upstream: std::net::SocketAddr = relay
        .http
        .trim_start_matches("http://")
        .parse()
        .expect("relay address");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let proxy = format!("http://{}", listener.local_addr().expect("addr"));
    let cut = Arc::new(AtomicUsize::new(0));
    let cut2 = cut.clone();
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let cut = cut2.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match inbound.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                if line.starts_with("POST ") && !line.contains("part=") {
                    cut.fetch_add(1, Ordering::SeqCst);
                    return; // closes the connection
                }
                let Ok(mut out) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                if out.write_all(&head).await.is_ok() {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    let payload = data(1_500_000, 21);
    for round in 0..2 {
        let t = Target::new(proxy.clone(), path("fallback"));
        let mut so = SendOptions::new(t.clone());
        so.rendezvous = false;
        so.part_size = Some(200_000);
        let mut ro = ReceiveOptions::new(t);
        ro.rendezvous = false;
        let (s, r) = transfer(so, ro, payload.clone(), First::Receiver).await;
        let rep = s.unwrap_or_else(|e| panic!("round {round}: send: {e}"));
        assert_eq!(rep.transport, Transport::Segmented, "round {round}");
        assert_eq!(rep.bytes, payload.len() as u64);
        assert_eq!(
            sha(&r.expect("receive").bytes),
            sha(&payload),
            "round {round}"
        );
        // Round 0 tried streaming once; round 1 remembered that the origin can't stream.
        assert_eq!(cut.load(Ordering::SeqCst), 1, "round {round}");
    }
    server.abort();
}
