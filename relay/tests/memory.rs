//! Memory comes back after load (issue #10 item 10): the real `httpipe-relay` binary, rounds
//! of 500 waiting consumers plus 50 concurrent 4 MiB transfers, then its RSS
//! (`/proc/PID/status` VmRSS) must return to within 20 % of what it was before the load.
//! Linux only (procfs).

mod common;
use common::{within, KillOnDrop};

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAITING: usize = 500;
const TRANSFERS: usize = 50;
const TRANSFER_BYTES: usize = 4 * 1024 * 1024;
const ROUNDS: usize = 4;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("procfs");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line")
}

async fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads a response head; returns it (as text) and whatever body bytes came with it.
async fn read_head(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the response head");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            return (head, buf[end + 4..].to_vec());
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .expect("a Content-Length")
}

/// `GET /metrics` value of gauge `name`.
async fn gauge(port: u16, name: &str) -> u64 {
    let mut s = connect(port).await;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).await.unwrap();
    let prefix = format!("{name} ");
    all.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .expect("the gauge")
}

async fn until_gauge(port: u16, name: &str, value: u64) {
    while gauge(port, name).await != value {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One transfer of `TRANSFER_BYTES` on `path`: consumer first, then a producer with a
/// Content-Length; checks the byte count and the producer's last log line.
async fn transfer(port: u16, path: String) {
    let mut c = connect(port).await;
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let consumer = tokio::spawn(async move {
        let (head, first) = read_head(&mut c).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let len = content_length(&head);
        let mut got = first.len();
        let mut buf = vec![0u8; 64 * 1024];
        while got < len {
            let n = c.read(&mut buf).await.unwrap();
            assert!(n > 0, "consumer response truncated at {got} of {len}");
            got += n;
        }
        assert_eq!(got, TRANSFER_BYTES);
    });
    let mut p = connect(port).await;
    p.write_all(
        format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {TRANSFER_BYTES}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let (mut rd, mut wr) = p.into_split();
    let upload = tokio::spawn(async move {
        let chunk = vec![0x5au8; 256 * 1024];
        for _ in 0..TRANSFER_BYTES / chunk.len() {
            wr.write_all(&chunk).await.unwrap();
        }
        wr
    });
    let mut log = Vec::new();
    let mut buf = [0u8; 4096];
    // (the log is chunked: look for the line, not at the end)
    let done = b"[STATE:TRANSFER_SUCCESSFUL]\n";
    while !log.windows(done.len()).any(|w| w == done) {
        let n = rd.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "producer log ended early: {}",
            String::from_utf8_lossy(&log)
        );
        log.extend_from_slice(&buf[..n]);
    }
    drop(upload.await.unwrap());
    consumer.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rss_returns_after_load() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc");
        return;
    }
    let child = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .args(["--host", "127.0.0.1", "--http-port", "0", "--no-tls"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let pid = child.0.id();
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port: u16 = first.rsplit(':').next().unwrap().parse().unwrap();

    // warm up with one transfer, so the code pages it touches and lazily built structures
    // are in the baseline
    within(20.0, "warm-up transfer", transfer(port, "/warm".into())).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let base = rss_kib(pid);

    let started = Instant::now();
    let mut peaks = Vec::new();
    for round in 0..ROUNDS {
        let mut waiting = Vec::with_capacity(WAITING);
        for i in 0..WAITING {
            let mut s = connect(port).await;
            s.write_all(format!("GET /idle-{round}-{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
                .await
                .unwrap();
            waiting.push(s);
        }
        within(
            20.0,
            "waiting consumers registered",
            until_gauge(port, "httpipe_waiting_consumers", WAITING as u64),
        )
        .await;
        let transfers: Vec<_> = (0..TRANSFERS)
            .map(|i| tokio::spawn(transfer(port, format!("/load-{round}-{i}"))))
            .collect();
        within(60.0, "50 concurrent transfers", async {
            for t in transfers {
                t.await.unwrap();
            }
        })
        .await;
        peaks.push(rss_kib(pid));
        drop(waiting);
        within(
            20.0,
            "waiting consumers gone",
            until_gauge(port, "httpipe_waiting_consumers", 0),
        )
        .await;
    }
    let load_time = started.elapsed();

    // give it a few seconds
    let deadline = Instant::now() + Duration::from_secs(6);
    let mut after = rss_kib(pid);
    while after * 10 > base * 12 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = rss_kib(pid);
    }
    eprintln!(
        "RSS before load {base} KiB, at the end of each round {peaks:?} KiB, after {after} KiB \
         ({ROUNDS} rounds in {load_time:.1?})"
    );
    assert!(
        after * 10 <= base * 12,
        "RSS {after} KiB after load, {base} KiB before (peaks {peaks:?}): more than 20 % above"
    );
}
