//! Segmented upload (PROTOCOL.md §4) against a real relay on 127.0.0.1.

mod common;
use common::*;

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

async fn part(
    r: &Relay,
    t: T,
    q: &str,
    body: impl Into<Bytes>,
) -> http::Response<hyper::body::Incoming> {
    let mut c = r
        .call(
            t,
            Method::POST,
            &format!("/seg?{q}"),
            &[("content-type", "application/x-seg")],
            full(body.into()),
        )
        .await;
    within(5.0, "part answered", c.response()).await
}

async fn ordered_parts_retry_and_order_on(t: T) {
    let r = relay().await;
    let mut c = r.get(t, "/seg").await;
    let p0 = part(&r, t, "part=0", "zero,").await;
    assert_eq!(p0.status(), StatusCode::OK);
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    assert!(header(p0.headers(), "access-control-expose-headers")
        .unwrap()
        .contains("X-Httpipe-Upload"));
    let resp = c.response().await;
    assert_eq!(
        header(resp.headers(), "content-type"),
        Some("application/x-seg")
    );
    // relayed documents can't run script with the relay's origin (§3.3)
    assert_eq!(
        header(resp.headers(), "x-content-type-options"),
        Some("nosniff")
    );
    assert_eq!(
        header(resp.headers(), "content-security-policy"),
        Some("sandbox")
    );
    let mut body = resp.into_body();
    assert_eq!(
        text(p0).await.lines().next(),
        Some("[INFO] Waiting for 1 receiver(s)...")
    );

    assert_eq!(
        part(&r, t, &format!("part=1&upload={id}"), "one,")
            .await
            .status(),
        StatusCode::OK
    );
    // idempotent retry of an accepted part: 200, nothing forwarded
    assert_eq!(
        part(&r, t, &format!("part=1&upload={id}"), "one,")
            .await
            .status(),
        StatusCode::OK
    );
    // a retry of part 0 naming the upload (query or header): 200, nothing forwarded
    let p0r = part(&r, t, &format!("part=0&upload={id}"), "zero,").await;
    assert_eq!(p0r.status(), StatusCode::OK);
    assert!(!text(p0r).await.contains("[ERROR]"));
    let mut p0h = r
        .call(
            t,
            Method::POST,
            "/seg?part=0",
            &[("x-httpipe-upload", &id)],
            full("zero,"),
        )
        .await;
    assert_eq!(p0h.response().await.status(), StatusCode::OK);
    assert_eq!(
        part(&r, t, &format!("part=0&upload={id}"), "0")
            .await
            .status(),
        StatusCode::CONFLICT
    );
    // part 0 without the upload id on the busy path: another sender
    assert_eq!(
        part(&r, t, "part=0", "zero,").await.status(),
        StatusCode::BAD_REQUEST
    );
    // same part with another length: conflict
    assert_eq!(
        part(&r, t, &format!("part=1&upload={id}"), "uno")
            .await
            .status(),
        StatusCode::CONFLICT
    );
    // a gap: conflict
    assert_eq!(
        part(&r, t, &format!("part=3&upload={id}"), "three")
            .await
            .status(),
        StatusCode::CONFLICT
    );
    // unknown id
    assert_eq!(
        part(&r, t, "part=2&upload=nope", "x").await.status(),
        StatusCode::NOT_FOUND
    );
    // the id may come as a header
    let mut c2 = r
        .call(
            t,
            Method::POST,
            "/seg?part=2",
            &[("x-httpipe-upload", &id)],
            full("two"),
        )
        .await;
    assert_eq!(c2.response().await.status(), StatusCode::OK);
    let last = part(&r, t, &format!("part=3&upload={id}&final=1"), "").await;
    assert_eq!(last.status(), StatusCode::OK);
    let log = text(last).await;
    assert!(log.ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"), "{log}");
    let mut got = Vec::new();
    while let Some(f) = body.frame().await {
        if let Ok(d) = f.unwrap().into_data() {
            got.extend_from_slice(&d);
        }
    }
    assert_eq!(String::from_utf8(got).unwrap(), "zero,one,two");
    // the session is gone, the path is free
    assert_eq!(
        part(&r, t, &format!("part=4&upload={id}"), "x")
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_parts_retry_and_order() {
    for t in [T::H1, T::H2] {
        ordered_parts_retry_and_order_on(t).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_final_part_and_producer_waits_for_consumer() {
    let r = relay().await;
    let t = T::H1;
    let mut p = r
        .call(
            t,
            Method::POST,
            "/seg?part=0&final=1",
            &[],
            full("all at once"),
        )
        .await;
    assert!(
        p.still_waiting(Duration::from_millis(100)).await,
        "part 0 must wait for the consumer"
    );
    let mut c = r.get(t, "/seg").await;
    assert_eq!(text(c.response().await).await, "all at once");
    assert!(text(p.response().await)
        .await
        .ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gap_timeout_truncates_and_frees_the_path() {
    let r = relay_with(|c| c.upload_gap_timeout = Duration::from_millis(300)).await;
    let t = T::H1;
    let mut c = r.get(t, "/seg").await;
    let p0 = part(&r, t, "part=0", "start").await;
    let mut body = c.response().await.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"start");
    drop(p0);
    let end = within(3.0, "truncated after the gap timeout", body.frame()).await;
    assert!(
        matches!(end, Some(Err(_))),
        "expected truncation, got {end:?}"
    );
    // the path is free again
    let mut p = r.post(t, "/seg", full("next")).await;
    assert_eq!(p.response().await.status(), StatusCode::OK);
    r.shutdown().await;
}

/// §4 "Abandoning" (regression, #25: an aborted segmented upload left its consumer waiting
/// for the gap timeout): `DELETE ?upload=ID` truncates the consumer at once and frees the
/// path; an unknown upload, or one already ended, is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_upload_truncates_its_consumer_at_once() {
    let r = relay().await; // the default gap timeout: 60 s
    let t = T::H1;
    let mut c = r.get(t, "/seg").await;
    let p0 = part(&r, t, "part=0", "start").await;
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    let mut body = c.response().await.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"start");
    let r = &r;
    let delete = |q: String| async move {
        let mut d = r
            .call(t, Method::DELETE, &format!("/seg?{q}"), &[], empty())
            .await;
        within(5.0, "abandon answered", d.response()).await
    };
    let a = delete(format!("upload={id}")).await;
    assert_eq!(a.status(), StatusCode::OK);
    assert_eq!(text(a).await, "[INFO] The upload was abandoned.\n");
    let end = within(3.0, "truncated at once", body.frame()).await;
    assert!(
        matches!(end, Some(Err(_))),
        "expected truncation, got {end:?}"
    );
    for q in [format!("upload={id}"), "upload=unknown".to_string()] {
        let again = delete(q).await;
        assert_eq!(again.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            header(again.headers(), "x-httpipe-error"),
            Some("unknown-upload")
        );
    }
    // the path is free again (the producer's response is kept: dropping it hangs up, and a
    // producer that hangs up while it waits is unregistered, §3.6 — the consumer then waited
    // for nobody, 1 run in 3 under load)
    let mut p = r.post(t, "/seg", full("next")).await;
    let mut c2 = r.get(t, "/seg").await;
    let log = p.response().await;
    assert_eq!(log.status(), StatusCode::OK);
    let got = within(5.0, "the next transfer", c2.response()).await;
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(text(got).await, "next");
    assert!(text(log).await.ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn part_size_cap() {
    let r = relay_with(|c| c.max_part_bytes = 1000).await;
    let mut c = r.get(T::H1, "/seg").await;
    let big = part(&r, T::H1, "part=0", vec![0u8; 2000]).await;
    assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let ok = part(&r, T::H1, "part=0&final=1", vec![7u8; 1000]).await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(read_all(c.response().await).await.unwrap().len(), 1000);
    r.shutdown().await;
}

/// Issue #10 fault 1: with `?n=2` and one slow consumer, a part request abandoned while the
/// relay waits on the slow consumer had already reached the fast one; its retry was delivered
/// again and the fast consumer ended cleanly with the part twice. A part reaches every consumer
/// exactly once (§4).
async fn abandoned_part_is_delivered_once_on(t: T) {
    let r = relay_with(|c| c.max_part_bytes = 32 << 20).await;
    let mut fast = r.get(t, "/fan?n=2").await;
    let mut slow = r.get(t, "/fan?n=2").await;
    let p0 = r
        .call(t, Method::POST, "/fan?n=2&part=0", &[], full("p0."))
        .await;
    let mut p0 = p0;
    let p0 = within(5.0, "part 0", p0.response()).await;
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    let fast = within(5.0, "fast head", fast.response()).await;
    let fast = tokio::spawn(read_all(fast));
    let slow = within(5.0, "slow head", slow.response()).await;
    // Parts are bigger than every buffer between the relay and the slow consumer, which reads
    // nothing yet: part 1 fills its socket, part 2 its queue; part 3 reaches the fast one, then
    // the relay waits on the slow one. The client gives up on part 3.
    let big: Bytes = random_bytes(16 << 20).into();
    let mut want = b"p0.".to_vec();
    // Send parts until one waits (how many fit in the buffers depends on the transport).
    let mut k = 1;
    let (abandoned, q1) = loop {
        assert!(k <= 8, "no part ever waited for the slow consumer");
        let q = format!("/fan?n=2&part={k}&upload={id}");
        let mut p = r.call(t, Method::POST, &q, &[], full(big.clone())).await;
        if p.still_waiting(Duration::from_millis(1500)).await {
            break (p, q);
        }
        let p = within(5.0, "a part that didn't wait", p.response()).await;
        assert_eq!(p.status(), StatusCode::OK);
        want.extend_from_slice(&big);
        k += 1;
    };
    abandoned.cancel();
    // The retry of the same part, then the slow consumer starts reading.
    let mut retry = r.call(t, Method::POST, &q1, &[], full(big.clone())).await;
    let slow = tokio::spawn(read_all(slow));
    let retried = within(30.0, "retry of part 1", retry.response()).await;
    assert_eq!(retried.status(), StatusCode::OK);
    let q2 = format!("/fan?n=2&part={}&final=1&upload={id}", k + 1);
    let mut last = r.call(t, Method::POST, &q2, &[], full(".end")).await;
    let last = within(30.0, "final part", last.response()).await;
    assert_eq!(last.status(), StatusCode::OK);
    want.extend_from_slice(&big);
    want.extend_from_slice(b".end");
    for (who, got) in [("fast", fast), ("slow", slow)] {
        let got = within(30.0, "consumer body", got)
            .await
            .unwrap()
            .expect("clean end");
        assert_eq!(got.len(), want.len(), "{who} consumer: byte count");
        assert!(got[..] == want[..], "{who} consumer: bytes differ");
    }
    assert!(text(last).await.ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_part_is_delivered_once_h1() {
    abandoned_part_is_delivered_once_on(T::H1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_part_is_delivered_once_h2c() {
    abandoned_part_is_delivered_once_on(T::H2c).await;
}

/// Issue #10 fault 2: the final part's request is abandoned while a slow consumer drains; the
/// transfer still completes, its retry gets the verdict (not 404), and the upload is gone from
/// `httpipe_segmented_uploads` and counted as completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_final_part_still_ends_the_upload() {
    let t = T::H1;
    let r = relay_with(|c| c.max_part_bytes = 32 << 20).await;
    let mut consumer = r.get(t, "/fin").await;
    let mut p0 = r.call(t, Method::POST, "/fin?part=0", &[], full("a")).await;
    let p0 = within(5.0, "part 0", p0.response()).await;
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    let resp = within(5.0, "consumer head", consumer.response()).await;
    let big: Bytes = random_bytes(16 << 20).into();
    let q = format!("/fin?part=1&final=1&upload={id}");
    let abandoned = r.call(t, Method::POST, &q, &[], full(big.clone())).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    abandoned.cancel();
    let got = tokio::spawn(read_all(resp));
    let mut retry = r.call(t, Method::POST, &q, &[], full(big.clone())).await;
    let retried = within(30.0, "retry of the final part", retry.response()).await;
    assert_eq!(retried.status(), StatusCode::OK);
    assert!(
        text(retried)
            .await
            .ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"),
        "the retry of a final part reports the transfer's verdict"
    );
    let got = within(30.0, "consumer body", got)
        .await
        .unwrap()
        .expect("clean end");
    assert_eq!(got.len(), 1 + big.len());
    r.until_gauge("httpipe_segmented_uploads", 0).await;
    r.until_gauge("httpipe_transfers_completed_total", 1).await;
    r.shutdown().await;
}
