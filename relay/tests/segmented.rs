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
