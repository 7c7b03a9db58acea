//! Graceful shutdown (PROTOCOL.md §9, issue #10 fault 8): waiting peers are sent away at once
//! with a clear answer; transfers may finish within the grace period, then are aborted with an
//! `[ERROR]` line for the producer and truncation for the consumers.

mod common;
use common::*;

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use http_body_util::BodyExt;
use httpipe::protocol::control::failure_line;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn only_waiting_peers_on(t: T) {
    let mut r = relay_with(|c| c.shutdown_grace = Duration::from_secs(20)).await;
    let mut consumer = r.get(t, "/wait-c").await;
    let mut producer = r.post(t, "/wait-p", full("never sent")).await;
    let mut connect = r.get(t, "/connect/v0/wait-x?mode=await-reader").await;
    let mut part0 = r
        .call(t, Method::POST, "/wait-s?part=0", &[], full("part"))
        .await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    r.until_gauge("httpipe_waiting_producers", 2).await;
    r.until_gauge("httpipe_connect_waiting", 1).await;
    let producer = within(5.0, "producer head", producer.response()).await;
    assert_eq!(producer.status(), StatusCode::OK);
    // a withdrawal that waits for the path the waiting producer holds (§3.10)
    let mut withdrawal = r.call(t, Method::DELETE, "/wait-p", &[], empty()).await;
    assert!(withdrawal.still_waiting(Duration::from_millis(100)).await);
    let started = Instant::now();
    let stopped = r.begin_shutdown();
    for (who, call) in [
        ("consumer", &mut consumer),
        ("connect", &mut connect),
        ("part 0", &mut part0),
        ("withdrawal", &mut withdrawal),
    ] {
        let resp = within(2.0, who, call.response()).await;
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE, "{who}");
        assert_eq!(
            header(resp.headers(), "x-httpipe-error"),
            Some("shutting-down")
        );
    }
    let log = within(2.0, "producer log", text(producer)).await;
    assert!(
        log.ends_with(&format!("{}\n", failure_line::SHUTTING_DOWN)),
        "{log}"
    );
    within(5.0, "shutdown", stopped).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "only waiting peers: shutdown must not wait for the grace period ({:?})",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_waiting_peers_leave_at_once_h1() {
    only_waiting_peers_on(T::H1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_waiting_peers_leave_at_once_h2() {
    only_waiting_peers_on(T::H2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_past_the_grace_period_get_an_error_line() {
    for t in [T::H1, T::H2c] {
        let mut r = relay_with(|c| c.shutdown_grace = Duration::from_millis(800)).await;
        let mut consumer = r.get(t, "/long").await;
        let (tx, body) = channel_body();
        let mut producer = r.post(t, "/long", body).await;
        tx.send("first").await;
        let producer = within(5.0, "producer head", producer.response()).await;
        let mut got = within(5.0, "consumer head", consumer.response())
            .await
            .into_body();
        let first = within(5.0, "first bytes", got.frame()).await;
        assert!(matches!(first, Some(Ok(_))));
        let started = Instant::now();
        let stopped = r.begin_shutdown();
        // the transfer may continue during the grace period
        tx.send("more").await;
        let more = within(2.0, "bytes during the grace period", got.frame()).await;
        assert!(matches!(more, Some(Ok(_))), "{more:?}");
        let log = within(5.0, "producer log", text(producer)).await;
        assert!(
            log.ends_with(&format!("{}\n", failure_line::SHUTTING_DOWN)),
            "{t:?}: {log}"
        );
        let end = within(5.0, "consumer end", async {
            loop {
                match got.frame().await {
                    Some(Ok(_)) => continue,
                    other => break other,
                }
            }
        })
        .await;
        assert!(
            matches!(end, Some(Err(_))),
            "{t:?}: truncation, got {end:?}"
        );
        within(5.0, "shutdown", stopped).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(700));
        drop(tx);
    }
}

/// Regression (found by trying the direct feed against the build before it): with consumers
/// that stopped reading, the upload's task waited for room in their channels and never saw the
/// grace period end, so the relay closed the producer's connection without its `[ERROR]` line.
/// One consumer (its response reads the upload itself) and two (the channel) alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_to_stalled_consumers_still_gets_the_error_line() {
    for (t, n) in [(T::H1, 1), (T::H1, 2), (T::H2c, 1), (T::H2c, 2)] {
        let mut r = relay_with(|c| c.shutdown_grace = Duration::from_millis(500)).await;
        let path = format!("/stalled?n={n}");
        let mut consumers = Vec::new();
        for _ in 0..n {
            consumers.push(r.get(t, &path).await);
        }
        let (tx, body) = channel_body();
        let mut producer = r.post(t, &path, body).await;
        tx.send("first").await;
        let producer = within(5.0, "producer head", producer.response()).await;
        let mut heads = Vec::new();
        for c in &mut consumers {
            heads.push(within(5.0, "consumer head", c.response()).await);
        }
        // The consumers read nothing: push until the upload stalls behind them.
        let chunk = bytes::Bytes::from(vec![7u8; 64 * 1024]);
        let pushed = tx
            .push_until(chunk, Instant::now() + Duration::from_millis(1000))
            .await;
        assert!(pushed > 0, "{t:?} n={n}");
        let stopped = r.begin_shutdown();
        let log = within(5.0, "producer log", read_all(producer)).await;
        let log = log.unwrap_or_else(|e| panic!("{t:?} n={n}: the log is cut: {e}"));
        let log = String::from_utf8_lossy(&log).into_owned();
        assert!(
            log.ends_with(&format!("{}\n", failure_line::SHUTTING_DOWN)),
            "{t:?} n={n}: {log}"
        );
        within(5.0, "shutdown", stopped).await.unwrap();
        drop((heads, tx));
    }
}

/// The same for a segmented upload (§4): the part that waits behind a consumer that stopped
/// reading held the session, so the grace period's end never failed the transfer, and the
/// part's request failed unanswered (h2c: "stream closed because of a broken pipe"). HTTP/1.1
/// is not in the loop: there the waiting part is answered as the relay starts draining,
/// before the grace period ends (not investigated further).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segmented_part_for_a_stalled_consumer_gets_the_error_line() {
    let t = T::H2c;
    let mut r = relay_with(|c| c.shutdown_grace = Duration::from_millis(500)).await;
    let mut consumer = r.get(t, "/seg-stalled").await;
    let mut p0 = r
        .call(t, Method::POST, "/seg-stalled?part=0", &[], full("zero"))
        .await;
    let p0 = within(5.0, "part 0", p0.response()).await;
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    let head = within(5.0, "consumer head", consumer.response()).await;
    // Parts of 4 MiB until one waits behind the consumer, which reads nothing.
    let big = bytes::Bytes::from(vec![7u8; 4 << 20]);
    let mut waiting = None;
    for k in 1..64 {
        let q = format!("/seg-stalled?part={k}&upload={id}");
        let mut c = r.call(t, Method::POST, &q, &[], full(big.clone())).await;
        if c.still_waiting(Duration::from_millis(1500)).await {
            waiting = Some(c);
            break;
        }
        assert_eq!(
            c.response().await.status(),
            StatusCode::OK,
            "{t:?} part {k}"
        );
    }
    let mut waiting = waiting.expect("a part waits behind the stalled consumer");
    let stopped = r.begin_shutdown();
    let resp = within(5.0, "the waiting part's answer", waiting.response()).await;
    let status = resp.status();
    let error = header(resp.headers(), "x-httpipe-error").map(str::to_string);
    let log = text(resp).await;
    assert!(
        log.ends_with(&format!("{}\n", failure_line::SHUTTING_DOWN)),
        "{t:?}: {status} {error:?} {log:?}"
    );
    within(5.0, "shutdown", stopped).await.unwrap();
    drop(head);
}

/// A waiting producer whose chunked upload is malformed is told why (and the path is free).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_producer_with_a_malformed_upload_gets_an_error_line() {
    let r = relay().await;
    let mut s = TcpStream::connect(r.http).await.unwrap();
    s.write_all(
        b"POST /bad HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nXYZ\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    let _ = within(5.0, "producer answer", s.read_to_end(&mut out)).await;
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains(failure_line::UPLOAD_FAILED), "{out}");
    r.until_gauge("httpipe_waiting_producers", 0).await;
    r.shutdown().await;
}
