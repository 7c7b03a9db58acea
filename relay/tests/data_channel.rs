//! Data API channels (PROTOCOL.md §5.1 "Data API channels") against a real relay on 127.0.0.1:
//! `channel=ID` on a consumer's GET, a streaming producer's POST and every segmented part
//! meets only Data API requests with the same channel on the same stream path.

mod common;
use common::*;

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use httpipe::protocol::token::{sign, Claims, Mode};

const WAIT: Duration = Duration::from_millis(150);

/// A segmented part `POST {path_and_query}` (bounded).
async fn part(
    r: &Relay,
    path_and_query: &str,
    body: &'static str,
) -> http::Response<hyper::body::Incoming> {
    let mut c = r
        .call(
            T::H1,
            Method::POST,
            path_and_query,
            &[],
            full(Bytes::from_static(body.as_bytes())),
        )
        .await;
    within(5.0, "part answered", c.response()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_transfer_on_a_channel() {
    let r = relay().await;
    let mut c = r.get(T::H1, "/dc/s?channel=abc").await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    let mut p = r
        .post(T::H1, "/dc/s?channel=abc", full("hello channel"))
        .await;
    let got = within(5.0, "consumer body", read_all(c.response().await))
        .await
        .unwrap();
    assert_eq!(&got[..], b"hello channel");
    let log = within(5.0, "producer log", text(p.response().await)).await;
    assert!(
        log.trim_end().ends_with("[STATE:TRANSFER_SUCCESSFUL]"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_producer_meets_no_plain_consumer_nor_connect_caller() {
    let r = relay().await;
    let (tx, body) = channel_body();
    let mut p = r.post(T::H1, "/dc/x?channel=abc", body).await;
    r.until_gauge("httpipe_waiting_producers", 1).await;
    // a GET without channel on the same path waits for a plain producer
    let mut plain = r.get(T::H1, "/dc/x").await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    // nor does a Connect await-writer with the same channel id (or without) get released
    let mut w_chan = r
        .get(T::H1, "/connect/v0/dc/x?mode=await-writer&channel=abc")
        .await;
    let mut w_plain = r.get(T::H1, "/connect/v0/dc/x?mode=await-writer").await;
    r.until_gauge("httpipe_connect_waiting", 2).await;
    assert!(
        plain.still_waiting(WAIT).await,
        "plain GET paired with a channel producer"
    );
    assert!(
        w_chan.still_waiting(Duration::ZERO).await,
        "Connect channel caller released"
    );
    assert!(
        w_plain.still_waiting(Duration::ZERO).await,
        "Connect caller released"
    );
    r.until_gauge("httpipe_active_transfers", 0).await;
    // the channel's consumer still gets the bytes
    let mut c = r.get(T::H1, "/dc/x?channel=abc").await;
    tx.send("only for abc").await;
    drop(tx);
    let got = within(5.0, "consumer body", read_all(c.response().await))
        .await
        .unwrap();
    assert_eq!(&got[..], b"only for abc");
    let log = within(5.0, "producer log", text(p.response().await)).await;
    assert!(
        log.trim_end().ends_with("[STATE:TRANSFER_SUCCESSFUL]"),
        "{log}"
    );
    assert!(plain.still_waiting(Duration::ZERO).await);
    plain.cancel();
    w_chan.cancel();
    w_plain.cancel();
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.until_gauge("httpipe_waiting_consumers", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segmented_upload_on_a_channel() {
    let r = relay().await;
    let mut c = r.get(T::H1, "/dc/seg?channel=abc").await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    let p0 = part(&r, "/dc/seg?part=0&channel=abc", "zero,").await;
    assert_eq!(p0.status(), StatusCode::OK);
    let id = header(p0.headers(), "x-httpipe-upload")
        .expect("upload id")
        .to_string();
    let resp = within(5.0, "consumer head", c.response()).await;
    // a part without the channel, or with another one, doesn't find the upload
    for q in [
        format!("part=1&upload={id}"),
        format!("part=1&upload={id}&channel=other"),
    ] {
        let resp = part(&r, &format!("/dc/seg?{q}"), "intruder").await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{q}");
    }
    let p1 = part(
        &r,
        &format!("/dc/seg?part=1&upload={id}&channel=abc"),
        "one,",
    )
    .await;
    assert_eq!(p1.status(), StatusCode::OK);
    let p2 = part(
        &r,
        &format!("/dc/seg?part=2&final=1&upload={id}&channel=abc"),
        "two",
    )
    .await;
    assert_eq!(p2.status(), StatusCode::OK);
    let log = text(p2).await;
    assert!(
        log.trim_end().ends_with("[STATE:TRANSFER_SUCCESSFUL]"),
        "{log}"
    );
    let got = within(5.0, "consumer body", read_all(resp)).await.unwrap();
    assert_eq!(&got[..], b"zero,one,two");
}

/// Regression (#26): the channel id was the transfer id itself, in the URL: whoever read it
/// in a proxy's access log could answer a resume meeting as either peer or splice bytes into
/// a resumed transfer. Now the URL's id is derived from a key that travels in a header
/// (§5.1): the id alone, or another key, is refused before it waits; the peers still meet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_id_from_a_log_opens_nothing() {
    let r = relay().await;
    let key = "TransferId0123456789ab";
    let id = httpipe::protocol::channel::channel_id(key);
    // the real consumer waits on the channel (its key in the header)
    let mut c = r.get(T::H1, &format!("/dc/log?channel={key}")).await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    let logged = format!("/dc/log?channel={id}");
    let connect = format!("/connect/v0/dc/log?mode=await-reader&channel={id}");
    for (method, path, headers) in [
        (Method::POST, &logged, vec![]),
        (
            Method::POST,
            &logged,
            vec![("x-httpipe-channel-key", "AnotherKey")],
        ),
        (
            Method::POST,
            &logged,
            vec![("x-httpipe-channel-key", id.as_str())],
        ),
        (Method::GET, &connect, vec![]),
    ] {
        let mut a = r
            .call_as_is(T::H1, method.clone(), path, &headers, full("spliced"))
            .await;
        let resp = within(3.0, "refused", a.response()).await;
        assert_eq!(
            resp.status(),
            StatusCode::BAD_REQUEST,
            "{method} {path} {headers:?}"
        );
        assert_eq!(
            header(resp.headers(), "x-httpipe-error"),
            Some("invalid-header")
        );
    }
    // the real producer, with the key, still meets the consumer
    let mut p = r
        .post(T::H1, &format!("/dc/log?channel={key}"), full("real"))
        .await;
    let got = within(5.0, "consumer body", read_all(c.response().await))
        .await
        .unwrap();
    assert_eq!(&got[..], b"real");
    let log = within(5.0, "producer log", text(p.response().await)).await;
    assert!(log.contains("[STATE:TRANSFER_SUCCESSFUL]"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_channel_is_refused() {
    let r = relay().await;
    for (method, q) in [
        (Method::GET, "channel="),
        (Method::GET, "channel=a.b"),
        (Method::POST, "channel=a/b"),
        (Method::POST, "channel=a&channel=a"),
        (Method::POST, "part=0&channel=%20"),
    ] {
        let mut c = r
            .call(T::H1, method.clone(), &format!("/dc/bad?{q}"), &[], empty())
            .await;
        let resp = within(3.0, q, c.response()).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{method} {q}");
        assert_eq!(
            header(resp.headers(), "x-httpipe-error"),
            Some("invalid-parameter"),
            "{q}"
        );
    }
}

const KEY: &str = "test-key-data-channel";

fn token(path: &str, mode: Mode) -> String {
    sign(
        KEY.as_bytes(),
        &Claims {
            path: path.into(),
            mode,
            recursive: false,
            expires: httpipe_relay::auth::now() + 600,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_paths_tokens_work_on_a_channel() {
    let r = relay_with(|c| c.auth_keys = vec![KEY.into()]).await;
    let read = format!("Bearer {}", token("/dc/a", Mode::Read));
    let write = format!("Bearer {}", token("/dc/a", Mode::Write));
    // no token: refused as without channel
    let mut none = r.get(T::H1, "/dc/a?channel=abc").await;
    assert_eq!(
        within(3.0, "no token", none.response()).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let mut c = r
        .call(
            T::H1,
            Method::GET,
            "/dc/a?channel=abc",
            &[("authorization", &read)],
            empty(),
        )
        .await;
    r.until_gauge("httpipe_waiting_consumers", 1).await;
    let mut p = r
        .call(
            T::H1,
            Method::POST,
            "/dc/a?channel=abc",
            &[("authorization", &write)],
            full("secret"),
        )
        .await;
    let got = within(5.0, "consumer body", read_all(c.response().await))
        .await
        .unwrap();
    assert_eq!(&got[..], b"secret");
    let log = within(5.0, "producer log", text(p.response().await)).await;
    assert!(
        log.trim_end().ends_with("[STATE:TRANSFER_SUCCESSFUL]"),
        "{log}"
    );
}
