//! Small transfers' delivery verdict (PROTOCOL.md §3.2, issue 28 item 2): the producer's
//! `[STATE:TRANSFER_SUCCESSFUL]` comes without a fixed wait, yet only once the consumer's TCP
//! stack has every byte, and never while the consumer's window holds the last bytes back.
//! Behaviour only: no timing is asserted tightly.

mod common;
use common::*;

use std::time::Duration;

use httpipe::protocol::control::TRANSFER_SUCCESSFUL;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn connect(r: &Relay) -> TcpStream {
    let s = TcpStream::connect(r.http).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads `s` until `needle` appears in what was read (or EOF / 10 s); returns all of it.
async fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
            if String::from_utf8_lossy(&got).contains(needle) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    String::from_utf8_lossy(&got).into_owned()
}

/// What `s` has in its receive buffer now: read until a read waits 50 ms.
async fn available(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A 1-byte upload, with `Content-Length` and chunked, 20 times each: when the producer hears
/// of success, the consumer's socket already holds the whole response (the byte is there to
/// read at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_success_only_once_the_consumer_has_it() {
    let r = relay().await;
    for i in 0..40 {
        let chunked = i % 2 == 1;
        let path = format!("/small-{i}");
        let mut consumer = connect(&r).await;
        consumer
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes())
            .await
            .unwrap();
        r.until_gauge("httpipe_waiting_consumers", 1).await;
        let mut producer = connect(&r).await;
        let req = if chunked {
            format!("POST {path} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\n\r\n")
        } else {
            format!("POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx")
        };
        producer.write_all(req.as_bytes()).await.unwrap();
        let log = read_until(&mut producer, TRANSFER_SUCCESSFUL).await;
        assert!(log.contains(TRANSFER_SUCCESSFUL), "round {i}: {log}");
        let got = available(&mut consumer).await;
        let body = got.split("\r\n\r\n").nth(1).unwrap_or_default();
        assert!(
            body == "x" || body.starts_with("1\r\nx\r\n"),
            "round {i} (chunked {chunked}): the consumer didn't have the byte at success: {got:?}"
        );
    }
    r.shutdown().await;
}

/// A consumer that doesn't read, with a small receive buffer, and an upload larger than what
/// its window and the relay's socket buffers hold: no success while the last bytes wait; once
/// the consumer reads everything, success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_success_while_the_consumer_window_holds_the_end_back() {
    const TOTAL: usize = 1 << 20;
    let r = relay().await;
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(16 << 10).unwrap();
    let mut consumer = sock.connect(r.http).await.unwrap();
    consumer
        .write_all(b"GET /held HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    let mut producer = connect(&r).await;
    let head = format!("POST /held HTTP/1.1\r\nHost: a\r\nContent-Length: {TOTAL}\r\n\r\n");
    producer.write_all(head.as_bytes()).await.unwrap();
    let (mut p_read, mut p_write) = producer.into_split();
    let writer = tokio::spawn(async move {
        let _ = p_write.write_all(&vec![7u8; TOTAL]).await;
        p_write
    });
    // The producer's log while the consumer reads nothing: no verdict.
    let mut log = Vec::new();
    let mut buf = vec![0u8; 4096];
    let quiet = tokio::time::timeout(Duration::from_millis(1500), async {
        loop {
            match p_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => log.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(quiet.is_err(), "the producer's log ended early");
    let text = String::from_utf8_lossy(&log).into_owned();
    assert!(!text.contains(TRANSFER_SUCCESSFUL), "{text}");
    // Now the consumer reads it all; the producer hears of success.
    let reader = tokio::spawn(async move {
        let mut n = 0usize;
        let mut buf = vec![0u8; 256 << 10];
        loop {
            match consumer.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
            if n >= TOTAL {
                break;
            }
        }
        (consumer, n)
    });
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match p_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => log.extend_from_slice(&buf[..n]),
            }
            if String::from_utf8_lossy(&log).contains(TRANSFER_SUCCESSFUL) {
                break;
            }
        }
    })
    .await;
    assert!(
        rest.is_ok(),
        "no verdict after the consumer read everything"
    );
    let text = String::from_utf8_lossy(&log).into_owned();
    assert!(text.contains(TRANSFER_SUCCESSFUL), "{text}");
    let (_consumer, n) = reader.await.unwrap();
    assert!(n >= TOTAL, "consumer read {n}");
    drop(writer.await.unwrap());
    r.shutdown().await;
}
