//! The producer's verdict is true on every transport (PROTOCOL.md §3.2, issue 25 item 3):
//! `[STATE:TRANSFER_SUCCESSFUL]` whenever the consumer got every byte, however quickly it
//! hangs up after its last one; `[ERROR:RECEIVER_PREMATURE_DISCONNECT]` for a consumer that
//! left without them. Real curl and an SDK-like consumer (hyper: reads the body, then drops
//! the connection at once), real relay, real sockets.
//!
//! Found with curl → relay → curl over HTTP/1.1 + TLS: the consumer's curl sends a TLS
//! `close_notify` and closes right after its last byte; the relay answers with its own
//! `close_notify`, which the closed socket never acknowledges, and the verdict counted every
//! byte written to the connection by the time it looked, that answer included.

mod common;
use common::*;

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use httpipe::protocol::control::{RECEIVER_PREMATURE_DISCONNECT, TRANSFER_SUCCESSFUL};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

const MIB: usize = 1 << 20;
/// Transfers per transport, most of them small.
const TRANSFERS: usize = 50;
/// Rounds with a 20 MiB payload (the size of the original finding): curl → curl, and a curl
/// or streamed producer with the other consumers.
const LARGE: [usize; 3] = [0, 7, 8];

/// A temporary file, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str) -> TempFile {
        let name = format!("httpipe-verdict-{tag}-{}", hex::encode(random_bytes(8)));
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// curl on transport `t`, with `args`, for `path` of the relay.
fn curl(r: &Relay, t: T, path: &str, args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "60"])
        .args(t.curl_flags())
        .args(args)
        .arg(format!("{}{path}", r.base(t)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The payload of round `i`: sizes around the edges of frames, records and buffers.
fn payload(i: usize) -> Bytes {
    const SMALL: [usize; 11] = [
        0, 1, 2, 17, 1000, 4096, 16384, 16385, 65536, 100_000, 262_145,
    ];
    let n = if LARGE.contains(&i) {
        20 * MIB
    } else {
        SMALL[i % SMALL.len()]
    };
    Bytes::from(random_bytes(n))
}

/// Who produces in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Producer {
    /// `curl -T FILE` (with `Content-Length`).
    Curl,
    /// hyper, with `Content-Length`.
    Sized,
    /// hyper, a streamed body without a length (the consumer's response is chunked, or ends
    /// with a separate `END_STREAM`).
    Streamed,
}

/// The producer's side of one transfer: its status log.
async fn produce(r: &Relay, t: T, path: &str, data: Bytes, who: Producer) -> String {
    if who == Producer::Streamed {
        let (tx, body) = channel_body();
        let mut call = r.call(t, Method::PUT, path, &[], body).await;
        for piece in data.chunks(64 << 10) {
            tx.send(Bytes::copy_from_slice(piece)).await;
        }
        drop(tx);
        return text(call.response().await).await;
    }
    if who == Producer::Curl {
        let file = TempFile::new("up");
        std::fs::write(&file.0, &data).unwrap();
        let out = curl(r, t, path, &["-T".as_ref(), file.0.as_ref()])
            .output()
            .await
            .unwrap();
        return String::from_utf8_lossy(&out.stdout).into_owned();
    }
    let len = data.len().to_string();
    let mut call = r
        .call(
            t,
            Method::PUT,
            path,
            &[("content-length", &len)],
            full(data),
        )
        .await;
    text(call.response().await).await
}

/// Who consumes in a round.
#[derive(Debug, Clone, Copy)]
enum Consumer {
    Curl,
    /// Reads the body to its end, then drops the connection at once (hyper).
    Sdk,
    /// HTTP/1.1 by hand: reads the response to its last byte, waits this long, then closes
    /// cleanly (a TLS `close_notify` first, as curl does). HTTP/2: as [`Consumer::Sdk`].
    ClosesAfter(Duration),
}

/// The consumer's side of one transfer: the body it got (`None` if it failed).
async fn consume(r: &Relay, t: T, path: &str, who: Consumer) -> Option<Bytes> {
    match who {
        Consumer::Curl => consume_curl(r, t, path).await,
        Consumer::ClosesAfter(pause) if !t.is_h2() => consume_h1(r, t, path, pause).await,
        _ => {
            let mut call = r.get(t, path).await;
            read_all(call.try_response().await.ok()?).await.ok()
        }
    }
}

async fn consume_curl(r: &Relay, t: T, path: &str) -> Option<Bytes> {
    let file = TempFile::new("down");
    let out = curl(r, t, path, &["-o".as_ref(), file.0.as_ref()])
        .output()
        .await
        .unwrap();
    out.status
        .success()
        .then(|| Bytes::from(std::fs::read(&file.0).unwrap_or_default()))
}

async fn consume_h1(r: &Relay, t: T, path: &str, pause: Duration) -> Option<Bytes> {
    let mut io = r
        .connect_with(t, tokio::net::TcpSocket::new_v4().ok()?)
        .await;
    let head = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    io.write_all(head.as_bytes()).await.ok()?;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    let body = loop {
        let n = io.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(body) = h1_body(&got) {
            break body;
        }
    };
    tokio::time::sleep(pause).await;
    let _ = io.shutdown().await;
    Some(Bytes::from(body))
}

/// The body of the HTTP/1.1 response in `got`, once complete (`Content-Length` or chunked).
fn h1_body(got: &[u8]) -> Option<Vec<u8>> {
    let end = got.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let mut rest = &got[end + 4..];
    if let Some(n) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
    {
        let n: usize = n.trim().parse().ok()?;
        return (rest.len() >= n).then(|| rest[..n].to_vec());
    }
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?, 16).ok()?;
        rest = &rest[line_end + 2..];
        if rest.len() < size + 2 {
            return None;
        }
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// 50 transfers: curl and the SDK-like client (sized and streamed) as producers, those and a
/// consumer that closes cleanly 0–15 ms after its last byte as consumers; whenever the
/// consumer got every byte, the producer's verdict is success.
async fn every_complete_transfer_is_a_success(t: T) {
    let r = relay().await;
    let mut wrong = Vec::new();
    for i in 0..TRANSFERS {
        let who = match i % 3 {
            0 => Consumer::Curl,
            1 => Consumer::Sdk,
            _ => Consumer::ClosesAfter(Duration::from_millis((i * 7 % 16) as u64)),
        };
        let producer = [Producer::Curl, Producer::Sized, Producer::Streamed][(i / 3) % 3];
        let path = format!("/verdict-{i}");
        let data = payload(i);
        let (got, log) = tokio::join!(
            consume(&r, t, &path, who),
            produce(&r, t, &path, data.clone(), producer),
        );
        let got = got.unwrap_or_else(|| panic!("{t:?} round {i}: the consumer failed"));
        assert!(
            got == data,
            "{t:?} round {i}: {} of {} bytes",
            got.len(),
            data.len()
        );
        let last = log.lines().last().unwrap_or_default();
        if last != TRANSFER_SUCCESSFUL {
            let n = data.len();
            wrong.push(format!(
                "round {i} ({producer:?} -> {who:?}, {n} bytes): {last:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{t:?}: {} of {TRANSFERS} complete transfers without success: {wrong:#?}",
        wrong.len()
    );
    r.shutdown().await;
}

/// A consumer that leaves midway (curl killed, the SDK-like client dropping its response):
/// the producer hears it, never of success.
async fn a_consumer_that_leaves_midway_is_premature(t: T) {
    let r = relay().await;
    for curl_consumer in [true, false] {
        let path = format!("/midway-{curl_consumer}");
        let (tx, body) = channel_body();
        let mut producer = r.call(t, Method::POST, &path, &[], body).await;
        let chunk = Bytes::from(random_bytes(64 << 10));
        let pushing = tokio::spawn(async move {
            for _ in 0..512 {
                if tokio::time::timeout(Duration::from_secs(5), tx.send_lossy(chunk.clone()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        if curl_consumer {
            let args = ["--limit-rate", "1M", "-o", "/dev/null"].map(std::ffi::OsStr::new);
            let mut child = curl(&r, t, &path, &args).spawn().unwrap();
            tokio::time::sleep(Duration::from_millis(400)).await;
            child.start_kill().unwrap();
            let _ = child.wait().await;
        } else {
            let mut consumer = r.get(t, &path).await;
            let mut body = within(10.0, "consumer head", consumer.response())
                .await
                .into_body();
            within(10.0, "some bytes", body.frame()).await;
            drop(body);
            consumer.cancel();
        }
        premature(&mut producer, format!("{t:?} curl {curl_consumer}")).await;
        pushing.abort();
    }
    r.shutdown().await;
}

/// Bytes of the transfer in [`a_consumer_that_leaves_with_the_end_unread_is_premature`], sent
/// in pieces of [`HELD_PIECE`].
const HELD_TOTAL: usize = MIB;
const HELD_PIECE: usize = 16 << 10;

/// What the consumer leaves unread on HTTP/1.1 (more than its receive buffer takes), or beyond
/// its flow-control window on HTTP/2 (less than the last piece: the relay's body hands its
/// last bytes to h2, which holds them back).
fn held_back(t: T) -> usize {
    if t.is_h2() {
        4 << 10
    } else {
        64 << 10
    }
}

/// A consumer whose response reached its end in the relay (HTTP/1.1: hyper took the last
/// bytes; HTTP/2: the body ended, its last DATA held back by the consumer's window), but
/// which hangs up without them, while the producer's upload is still open (its last bytes
/// sent, `END_STREAM` not yet): when the verdict comes, the consumer's connection is long
/// gone, and it is no success.
async fn a_consumer_that_leaves_with_the_end_unread_is_premature(t: T) {
    let r = relay().await;
    let path = "/end-unread";
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let io = r.connect_with(t, socket).await;
    let mut consumer = if t.is_h2() {
        Held::H2(h2_get(&r, t, path, io).await)
    } else {
        Held::H1(h1_get(path, io).await)
    };
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    // The producer (h2c): every byte, then its upload stays open.
    let (tx, body) = channel_body();
    let len = HELD_TOTAL.to_string();
    let headers = [("content-length", len.as_str())];
    let mut producer = r.call(T::H2c, Method::PUT, path, &headers, body).await;
    let push = tokio::spawn(async move {
        for piece in random_bytes(HELD_TOTAL).chunks(HELD_PIECE) {
            tx.send(Bytes::copy_from_slice(piece)).await;
        }
        tx
    });
    // HTTP/1.1: reads all but the last bytes, then stops reading (HTTP/2: never reads).
    if let Held::H1(io) = &mut consumer {
        let mut got = 0usize;
        let mut buf = vec![0u8; 64 << 10];
        while got < HELD_TOTAL - held_back(t) {
            let n = within(10.0, "consumer read", io.read(&mut buf))
                .await
                .unwrap();
            assert!(n > 0, "{t:?}: the response ended early");
            got += n;
        }
    }
    let tx = within(10.0, "the upload's bytes sent", push).await.unwrap();
    // The relay hands on what it can; then the consumer hangs up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(consumer);
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(tx); // the upload ends: now the relay decides
    premature(&mut producer, format!("{t:?}")).await;
    r.shutdown().await;
}

/// Asserts that the producer's log tells of a consumer that left, not of success.
async fn premature(producer: &mut Call, case: String) {
    let log = within(15.0, "producer log", async {
        text(producer.response().await).await
    })
    .await;
    assert!(
        log.contains(RECEIVER_PREMATURE_DISCONNECT) && !log.contains(TRANSFER_SUCCESSFUL),
        "{case}: {log}"
    );
}

/// A consumer by hand: raw HTTP/1.1 bytes, or hyper's HTTP/2 client (connection and request
/// tasks, aborted when dropped: the connection closes).
enum Held {
    H1(Raw),
    H2(Vec<tokio::task::JoinHandle<()>>),
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::H2(tasks) = self {
            tasks.iter().for_each(|t| t.abort());
        }
    }
}

async fn h1_get(path: &str, mut io: Raw) -> Raw {
    let head = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    io.write_all(head.as_bytes()).await.unwrap();
    io
}

/// `GET path` over HTTP/2 with a flow-control window that takes all but the last
/// [`held_back`] bytes, never given back (the body is never read).
async fn h2_get(r: &Relay, t: T, path: &str, io: Raw) -> Vec<tokio::task::JoinHandle<()>> {
    let window = (HELD_TOTAL - held_back(t)) as u32;
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(window)
        .initial_connection_window_size(window)
        .handshake(TokioIo::new(io))
        .await
        .unwrap();
    let req = http::Request::get(format!("{}{path}", r.base(t)))
        .body(empty())
        .unwrap();
    vec![
        tokio::spawn(async move {
            let _ = conn.await;
        }),
        tokio::spawn(async move {
            let resp = sender.send_request(req).await;
            std::future::pending::<()>().await;
            drop(resp);
        }),
    ]
}

on_all_transports!(
    every_complete_transfer_is_a_success,
    a_consumer_that_leaves_midway_is_premature,
    a_consumer_that_leaves_with_the_end_unread_is_premature,
);
