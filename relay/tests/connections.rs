//! Connections (PROTOCOL.md §3.6, §9): waiting peers that hang up unnoticed by hyper free
//! their path at once; header, idle and header-size limits on every port; the binary stops on
//! SIGTERM whatever happened to its stdout and stderr.

mod common;

use std::time::{Duration, Instant};

use common::*;
use http::Method;
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A transfer on `path` between fresh clients: the consumer gets exactly `data`, clean end.
async fn transfer_works(r: &Relay, path: &str, data: &'static str) {
    let mut c = r.get(T::H1, path).await;
    within(
        5.0,
        "consumer registered",
        r.until_gauge("httpipe_waiting_consumers", 1),
    )
    .await;
    let mut p = r.post(T::H1, path, full(data)).await;
    let resp = within(5.0, "consumer head", c.response()).await;
    let got = within(5.0, "consumer body", read_all(resp)).await;
    assert_eq!(got.expect("clean end"), data.as_bytes());
    let log = within(5.0, "producer log", async {
        text(p.response().await).await
    })
    .await;
    assert!(log.ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"), "{log}");
}

/// Item 3: a complete 1-byte POST with a second request pipelined behind it, then the client
/// closes. hyper doesn't read past the buffered second request, so only the hang-up watcher
/// sees the FIN; before it the path answered "Another sender" for good.
async fn pipelined_producer_hangs_up(tls: bool) {
    let r = relay().await;
    let mut s = r.raw(tls).await;
    let req = b"POST /pp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\
                GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
    within(5.0, "write", s.write_all(req)).await.unwrap();
    within(
        5.0,
        "registered",
        r.until_gauge("httpipe_waiting_producers", 1),
    )
    .await;
    drop(s);
    within(
        2.0,
        "path freed",
        r.until_gauge("httpipe_waiting_producers", 0),
    )
    .await;
    transfer_works(&r, "/pp", "fresh producer").await;
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Item 3, consumer side: before the fix the dead consumer stayed registered and the next
/// producer was matched to it.
async fn pipelined_consumer_hangs_up(tls: bool) {
    let r = relay().await;
    let mut s = r.raw(tls).await;
    let req = b"GET /pc HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
    within(5.0, "write", s.write_all(req)).await.unwrap();
    within(
        5.0,
        "registered",
        r.until_gauge("httpipe_waiting_consumers", 1),
    )
    .await;
    drop(s);
    within(
        2.0,
        "path freed",
        r.until_gauge("httpipe_waiting_consumers", 0),
    )
    .await;
    transfer_works(&r, "/pc", "for the live consumer").await;
    within(5.0, "shutdown", r.shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_producer_hangs_up_h1() {
    pipelined_producer_hangs_up(false).await
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_producer_hangs_up_h1_tls() {
    pipelined_producer_hangs_up(true).await
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_consumer_hangs_up_h1() {
    pipelined_consumer_hangs_up(false).await
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_consumer_hangs_up_h1_tls() {
    pipelined_consumer_hangs_up(true).await
}

/// A raw HTTP/1.1 producer on `path` announcing `len` bytes, once the relay has it waiting.
async fn waiting_producer(r: &Relay, path: &str, len: usize) -> Raw {
    let mut s = r.raw(false).await;
    let head = format!("POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: {len}\r\n\r\n");
    within(5.0, "head", s.write_all(head.as_bytes()))
        .await
        .unwrap();
    within(
        5.0,
        "registered",
        r.until_gauge("httpipe_waiting_producers", 1),
    )
    .await;
    s
}

/// Writes 64 KiB chunks of 7s until `limit` bytes went out or a write blocks for 300 ms (the
/// relay stopped reading); the bytes written.
async fn write_until_blocked(s: &mut Raw, limit: usize) -> usize {
    let chunk = vec![7u8; 64 * 1024];
    let mut sent = 0usize;
    while sent < limit {
        match tokio::time::timeout(Duration::from_millis(300), s.write_all(&chunk)).await {
            Ok(Ok(())) => sent += chunk.len(),
            _ => break,
        }
    }
    sent
}

/// Item 11: a waiting producer that pushed more than the read-ahead (16 MiB) and the socket
/// buffers hold, then hung up (its unread response makes the close a reset): the path is free
/// within a second, and the next consumer gets the next producer's bytes, not a truncated
/// stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_waiting_upload_hangs_up() {
    let r = relay().await;
    let mut s = waiting_producer(&r, "/big", 90_000_000).await;
    // past the read-ahead (16 MiB) and the socket buffers
    let sent = write_until_blocked(&mut s, 80_000_000).await;
    assert!(sent > 1_000_000, "only {sent} bytes went out");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let closed = Instant::now();
    drop(s);
    within(
        1.5,
        "path freed",
        r.until_gauge("httpipe_waiting_producers", 0),
    )
    .await;
    assert!(closed.elapsed() < Duration::from_millis(1500));
    transfer_works(&r, "/big", "the next producer's data").await;
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Issue 28 item 4: a waiting producer that read everything it was sent (its status log) and
/// closed with upload bytes unsent: its FIN could reach the relay only behind those bytes,
/// which nobody read (the read-ahead was 64 KiB), so the path stayed busy until a consumer
/// came, and that consumer got a truncated stream. The read-ahead (up to 16 MiB, lent by the
/// relay's pool) reads them now: the FIN shows and the path is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_waiting_sender_that_read_its_log_frees_the_path() {
    let r = relay().await;
    let mut s = waiting_producer(&r, "/killed", 30_000_000).await;
    // Everything the relay sent is read, so the close is a FIN (a reset would be noticed).
    let mut log = Vec::new();
    within(5.0, "the status log's first line", async {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&log).contains("receiver(s)...\n") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&log));
            log.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    write_until_blocked(&mut s, 12_000_000).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(s); // 12 of the 30 MB announced: a cut upload
    within(
        3.0,
        "path freed",
        r.until_gauge("httpipe_waiting_producers", 0),
    )
    .await;
    r.until_gauge("httpipe_read_ahead_bytes", 0).await;
    transfer_works(&r, "/killed", "the next producer's data").await;
    within(5.0, "shutdown", r.shutdown()).await;
}

/// The pool's gauge now (`/metrics`).
async fn read_ahead_bytes(r: &Relay) -> u64 {
    let mut c = r.get(T::H1, "/metrics").await;
    let m = text(c.response().await).await;
    let line = m
        .lines()
        .find(|l| l.starts_with("httpipe_read_ahead_bytes "));
    line.and_then(|l| l.split(' ').nth(1)?.parse().ok())
        .expect("httpipe_read_ahead_bytes")
}

/// The byte at `i` of producer `p`'s upload.
fn pattern(p: usize, i: usize) -> u8 {
    ((i / 4096 + p * 31) % 251) as u8
}

/// Issue 28 item 4: what waiting producers read ahead is bounded relay-wide (64 MiB beyond
/// their own 64 KiB each; a read may pass a loan by one chunk), and a producer's queued bytes
/// reach its consumer first, in order, with the rest behind them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_ahead_is_bounded_and_delivered_in_order() {
    const LEN: usize = 20_000_000;
    let r = relay().await;
    let mut producers = Vec::new();
    for p in 0..5 {
        let mut s = r.raw(false).await;
        let head = format!("POST /ra{p} HTTP/1.1\r\nHost: a\r\nContent-Length: {LEN}\r\n\r\n");
        within(5.0, "head", s.write_all(head.as_bytes()))
            .await
            .unwrap();
        let mut sent = 0usize;
        while sent < LEN {
            let chunk: Vec<u8> = (sent..(sent + 65536).min(LEN))
                .map(|i| pattern(p, i))
                .collect();
            match tokio::time::timeout(Duration::from_millis(300), s.write_all(&chunk)).await {
                Ok(Ok(())) => sent += chunk.len(),
                _ => break,
            }
        }
        producers.push((s, sent));
    }
    let lent = read_ahead_bytes(&r).await;
    assert!(lent <= (64 << 20) + 5 * (512 << 10), "lent {lent}");
    assert!(lent >= 32 << 20, "lent only {lent}");
    // Producer 0 finishes as its consumer reads.
    let (mut s, sent) = producers.remove(0);
    let rest = tokio::spawn(async move {
        let tail: Vec<u8> = (sent..LEN).map(|i| pattern(0, i)).collect();
        s.write_all(&tail).await.unwrap();
        s
    });
    let mut c = r.get(T::H1, "/ra0").await;
    let resp = within(10.0, "consumer head", c.response()).await;
    let got = within(20.0, "consumer body", read_all(resp)).await.unwrap();
    assert_eq!(got.len(), LEN);
    let wrong = (0..LEN).find(|&i| got[i] != pattern(0, i));
    assert_eq!(wrong, None, "first wrong byte");
    let _s = within(5.0, "producer 0 wrote all", rest).await.unwrap();
    drop(producers);
    within(
        5.0,
        "pool repaid",
        r.until_gauge("httpipe_read_ahead_bytes", 0),
    )
    .await;
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Reads until the relay closes the connection; the time it took (panics after `secs`).
async fn closed_within(s: &mut Raw, secs: f64, what: &str) -> Duration {
    let t = Instant::now();
    within(secs, what, async {
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    t.elapsed()
}

async fn short_limits() -> Relay {
    relay_with(|c| {
        c.header_timeout = Duration::from_secs(1);
        c.idle_timeout = Duration::from_secs(2);
    })
    .await
}

/// Item 7: a connection that sends nothing is closed after the header timeout, on both ports
/// (the plain port kept it open forever; TLS ones after 20 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_closed() {
    let r = short_limits().await;
    let mut plain: Raw = Box::new(tokio::net::TcpStream::connect(r.http).await.unwrap());
    let mut tls_tcp: Raw = Box::new(tokio::net::TcpStream::connect(r.https).await.unwrap());
    let mut tls = r.raw(true).await; // handshake done, then silence
    let a = closed_within(&mut plain, 4.0, "silent plain connection closed").await;
    assert!(a >= Duration::from_millis(800), "closed too early: {a:?}");
    closed_within(&mut tls_tcp, 4.0, "silent TCP on the TLS port closed").await;
    closed_within(&mut tls, 4.0, "silent TLS connection closed").await;
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Item 7: a request head sent one byte at a time (slowloris) is cut off at the header
/// timeout on both ports, on the first request and on a kept-alive connection's next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off() {
    let r = short_limits().await;
    for tls in [false, true] {
        let mut s = r.raw(tls).await;
        let head =
            b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        let t = Instant::now();
        within(6.0, "slow head cut off", async {
            for b in head {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if s.write_all(&[*b]).await.is_err() || s.flush().await.is_err() {
                    return;
                }
            }
            // every byte went out: it must not have been answered
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf).await;
            assert!(buf.is_empty(), "{}", String::from_utf8_lossy(&buf));
        })
        .await;
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "tls={tls} {:?}",
            t.elapsed()
        );
    }
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Item 7: keep-alive idle is bounded (HTTP/1.1 by the header timeout, h2c by the idle
/// timeout), while a request that waits (here 3 s, longer than both) is never cut off and a
/// transfer starts at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_is_bounded_but_waiting_is_not() {
    let r = short_limits().await;
    // HTTP/1.1: one request, then nothing
    let mut s = r.raw(false).await;
    within(
        5.0,
        "write",
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"),
    )
    .await
    .unwrap();
    closed_within(&mut s, 4.0, "idle keep-alive closed").await;
    // h2c: one request, then nothing; the client's connection task ends when the relay closes
    let tcp = tokio::net::TcpStream::connect(r.http).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    let conn = tokio::spawn(conn);
    let req = http::Request::get(format!("{}/healthz", r.base(T::H2c)))
        .body(empty())
        .unwrap();
    let resp = within(5.0, "h2c request", send.send_request(req))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let _ = within(5.0, "h2c body", resp.into_body().collect()).await;
    let t = Instant::now();
    let _ = within(6.0, "idle h2c connection closed", conn).await;
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    // waiting longer than both limits is fine; the transfer then starts at once
    for t in [T::H1, T::H1Tls, T::H2c, T::H2] {
        let path = format!("/wait-{t:?}");
        let mut c = r.get(t, &path).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let started = Instant::now();
        let _p = r
            .call(t, Method::POST, &path, &[], full("after a wait"))
            .await;
        let resp = within(5.0, "consumer head", c.response()).await;
        assert!(started.elapsed() < Duration::from_secs(1), "{t:?}");
        let got = within(5.0, "consumer body", read_all(resp)).await.unwrap();
        assert_eq!(&got[..], b"after a wait", "{t:?}");
    }
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Item 7: a request head larger than `max_header_bytes` (64 KiB by default) gets 431 on
/// HTTP/1.1 (100 KB was accepted before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_headers_get_431() {
    let r = relay().await;
    for tls in [false, true] {
        let mut s = r.raw(tls).await;
        let big = "a".repeat(100_000);
        let req = format!("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: {big}\r\n\r\n");
        let _ = within(5.0, "write", s.write_all(req.as_bytes())).await;
        let mut buf = Vec::new();
        let _ = within(5.0, "answer", s.read_to_end(&mut buf)).await;
        let answer = String::from_utf8_lossy(&buf);
        assert!(answer.starts_with("HTTP/1.1 431"), "tls={tls}: {answer}");
        // a head within the limit is fine
        let mut s = r.raw(tls).await;
        let ok = "a".repeat(30_000);
        let req =
            format!("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: {ok}\r\nConnection: close\r\n\r\n");
        within(5.0, "write", s.write_all(req.as_bytes()))
            .await
            .unwrap();
        let mut buf = Vec::new();
        let _ = within(5.0, "answer", s.read_to_end(&mut buf)).await;
        assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
    }
    within(5.0, "shutdown", r.shutdown()).await;
}

/// Item 6: the binary, its stdout or stderr a pipe nobody reads any more (read end closed),
/// still serves and exits on SIGTERM within a few seconds. (With stderr closed the first log
/// line after it panicked the task writing it: SIGTERM was ignored, the relay served on.)
#[test]
fn sigterm_stops_the_binary_with_stdout_or_stderr_closed() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let healthy = |port: u16| {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.ends_with("ok\n")
    };
    for closed in ["stderr", "stdout"] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"));
        cmd.args(["--no-tls", "--shutdown-grace", "1s", "--http-port"])
            .arg(port.to_string())
            .env("RUST_LOG", "debug") // plenty of log lines to fail on
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = KillOnDrop(cmd.spawn().unwrap());
        let stdout = child.0.stdout.take().unwrap();
        let stderr = child.0.stderr.take().unwrap();
        if closed == "stderr" {
            // started, then the supervisor stops reading stderr
            let first = BufReader::new(stdout).lines().next();
            assert!(first.is_some_and(|l| l.is_ok_and(|l| l.starts_with("listening"))));
            drop(stderr);
        } else {
            drop(stdout); // closed before the relay writes its start-up lines
            std::thread::spawn(move || std::io::copy(&mut { stderr }, &mut std::io::sink()));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !healthy(port) {
            assert!(
                Instant::now() < deadline,
                "{closed} closed: relay not serving"
            );
            assert!(
                child.0.try_wait().unwrap().is_none(),
                "{closed} closed: relay died"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300)); // the signal handler is installed
        child.sigterm_and_wait(&format!("{closed} closed"));
    }
}
