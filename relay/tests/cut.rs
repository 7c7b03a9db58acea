//! A producer that dies after the meeting, before its first byte, cuts its consumer's response
//! (PROTOCOL.md §3.3): the consumer gets the response head, then a body without its end — never
//! a request failed before any answer, which a client reports as a network failure instead of
//! a cut stream (`TRUNCATED`, §11.3).
//!
//! Found in CI (the Worker example's relay test, on a loaded machine): hyper (HTTP/1.1) buffers
//! the response head and writes it when the body first waits or yields; a body whose first poll
//! was the producer's abort made it close the connection with the head unsent.

mod common;
use common::*;

use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

on_all_transports!(a_producer_gone_before_its_first_byte_still_gets_the_consumer_a_head);

/// 50 rounds: a producer by hand sends its request head; when its log says the transfer
/// started (the consumer met it), its connection closes.
async fn a_producer_gone_before_its_first_byte_still_gets_the_consumer_a_head(t: T) {
    let r = relay().await;
    for i in 0..50 {
        let path = format!("/cut-{i}");
        let mut producer = r.raw(false).await;
        let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        producer.write_all(head.as_bytes()).await.unwrap();
        r.until_gauge("httpipe_waiting_producers", 1).await;
        let mut consumer = r.get(t, &path).await;
        let mut log = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&log).contains("Start sending") {
            let n = producer.read(&mut buf).await.unwrap();
            assert!(n > 0, "the producer's log ended early");
            log.extend_from_slice(&buf[..n]);
        }
        drop(producer);
        let resp = within(10.0, "the consumer's answer", consumer.try_response()).await;
        let resp = resp.unwrap_or_else(|e| panic!("round {i}: no response head: {e}"));
        assert_eq!(resp.status(), http::StatusCode::OK, "round {i}");
        let end = within(10.0, "the consumer's body ends", resp.into_body().collect()).await;
        assert!(
            end.is_err(),
            "round {i}: a cut must not look like a clean end"
        );
    }
    r.shutdown().await;
}
