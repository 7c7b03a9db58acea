//! Connect API hellos and channels (PROTOCOL.md §5.1) against a real relay on 127.0.0.1.

mod common;
use common::*;

use std::time::Duration;

use http::{Method, StatusCode};
use httpipe::protocol::headers::{HELLO, MAX_HELLO_BYTES, PEER_HELLO};
use httpipe::protocol::token::{sign, Claims, Mode};

const WAIT: Duration = Duration::from_millis(150);

/// `GET /connect/v0{path_and_query}` with an optional hello and bearer token.
async fn connect(
    r: &Relay,
    t: T,
    path_and_query: &str,
    hello: Option<&str>,
    token: Option<&str>,
) -> Call {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut hs: Vec<(&str, &str)> = Vec::new();
    if let Some(h) = hello {
        hs.push((HELLO, h));
    }
    if let Some(b) = &bearer {
        hs.push(("authorization", b));
    }
    r.call(
        t,
        Method::GET,
        &format!("/connect/v0{path_and_query}"),
        &hs,
        empty(),
    )
    .await
}

/// The peer hello of a 200 answer (bounded), checking the answer and that browsers may read it.
async fn peer_hello(r: &Relay, t: T, c: &mut Call, path: &str, what: &str) -> Option<String> {
    let resp = within(3.0, what, c.response()).await;
    assert_eq!(resp.status(), StatusCode::OK, "{what}");
    let expose = header(resp.headers(), "access-control-expose-headers").unwrap_or("");
    assert!(
        expose
            .split(',')
            .any(|h| h.trim().eq_ignore_ascii_case(PEER_HELLO)),
        "{what}: Access-Control-Expose-Headers is {expose:?}"
    );
    let hello = header(resp.headers(), PEER_HELLO).map(str::to_string);
    let body = within(3.0, what, text(resp)).await;
    assert_eq!(body, format!("{}{path}\n", r.base(t)), "{what}");
    hello
}

/// The status and `X-Httpipe-Error` of a refused call (bounded).
async fn refused(c: &mut Call, what: &str) -> (u16, Option<String>, String) {
    let resp = within(3.0, what, c.response()).await;
    let status = resp.status().as_u16();
    let code = header(resp.headers(), "x-httpipe-error").map(str::to_string);
    (status, code, within(3.0, what, text(resp)).await)
}

async fn hellos_swap_in_both_orders_on(t: T) {
    let r = relay().await;
    // producer first, then consumer first
    for (first, second, path) in [
        ("await-reader", "await-writer", "/h/one"),
        ("await-writer", "await-reader", "/h/two"),
    ] {
        let mut a = connect(
            &r,
            t,
            &format!("{path}?mode={first}"),
            Some("from first"),
            None,
        )
        .await;
        assert!(a.still_waiting(WAIT).await, "{t:?} {first} waits");
        let hello_b = "httpipe=1; transfer=AbC_-09; receipt";
        let q = format!("{path}?mode={second}");
        let mut b = connect(&r, t, &q, Some(hello_b), None).await;
        let what = format!("{t:?} {first} first");
        assert_eq!(
            peer_hello(&r, t, &mut a, path, &what).await.as_deref(),
            Some(hello_b)
        );
        assert_eq!(
            peer_hello(&r, t, &mut b, path, &what).await.as_deref(),
            Some("from first")
        );
    }
    // a hello of exactly the limit travels; a caller without a hello gives none
    let long = "~".repeat(MAX_HELLO_BYTES);
    let mut a = connect(&r, t, "/h/three?mode=await-reader", Some(&long), None).await;
    assert!(a.still_waiting(WAIT).await);
    let mut b = connect(&r, t, "/h/three?mode=await-writer", None, None).await;
    assert_eq!(
        peer_hello(&r, t, &mut a, "/h/three", "no hello").await,
        None
    );
    assert_eq!(
        peer_hello(&r, t, &mut b, "/h/three", "long hello").await,
        Some(long)
    );
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hellos_swap_in_both_orders() {
    for t in [T::H1, T::H2c, T::H1Tls, T::H2] {
        hellos_swap_in_both_orders_on(t).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_peer_hello_from_data_api_peers() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let p = |n: u32| format!("/d{}/{n}", t.is_h2());
        // a Data API consumer already waiting releases an await-reader: no peer hello
        let mut c = r.get(t, &p(1)).await;
        r.until_gauge("httpipe_waiting_consumers", 1).await;
        let mut w = connect(
            &r,
            t,
            &format!("{}?mode=await-reader", p(1)),
            Some("p"),
            None,
        )
        .await;
        assert_eq!(
            peer_hello(&r, t, &mut w, &p(1), "consumer waiting").await,
            None
        );
        let mut send = r.post(t, &p(1), full("via connect")).await;
        assert_eq!(
            within(3.0, "consumer body", async {
                text(c.response().await).await
            })
            .await,
            "via connect"
        );
        within(3.0, "producer log", send.response()).await;
        // one arriving later
        let mut w = connect(
            &r,
            t,
            &format!("{}?mode=await-reader", p(2)),
            Some("p"),
            None,
        )
        .await;
        assert!(w.still_waiting(WAIT).await);
        let c = r.get(t, &p(2)).await;
        assert_eq!(
            peer_hello(&r, t, &mut w, &p(2), "consumer later").await,
            None
        );
        c.cancel();
        // a waiting Data API producer releases an await-writer: no peer hello
        let (_tx, b) = channel_body();
        let mut send = r.post(t, &p(3), b).await;
        let _log = within(3.0, "producer log", send.response()).await;
        let mut rd = connect(
            &r,
            t,
            &format!("{}?mode=await-writer", p(3)),
            Some("c"),
            None,
        )
        .await;
        assert_eq!(
            peer_hello(&r, t, &mut rd, &p(3), "producer waiting").await,
            None
        );
        send.cancel();
        r.until_gauge("httpipe_waiting_producers", 0).await;
    }
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_meet_only_their_own_kind() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let path = format!("/ch{}", t.is_h2());
        let q = |mode: &str, channel: Option<&str>| match channel {
            Some(c) => format!("{path}?mode={mode}&channel={c}"),
            None => format!("{path}?mode={mode}"),
        };
        // a channel await-reader and a plain await-writer don't meet
        let mut ra = connect(&r, t, &q("await-reader", Some("a")), Some("ra"), None).await;
        let mut plain_w = connect(&r, t, &q("await-writer", None), Some("pw"), None).await;
        r.until_gauge("httpipe_connect_waiting", 2).await;
        assert!(ra.still_waiting(WAIT).await, "{t:?}: met a plain writer");
        assert!(plain_w.still_waiting(Duration::ZERO).await);
        // a waiting Data API producer releases the plain await-writer only
        let (tx, b) = channel_body();
        let mut send = r.post(t, &path, b).await;
        let log = within(3.0, "producer log", send.response()).await;
        assert_eq!(log.status(), StatusCode::OK);
        assert_eq!(
            peer_hello(&r, t, &mut plain_w, &path, "plain writer").await,
            None
        );
        // ... and doesn't release a channel await-writer arriving now
        let mut wb = connect(&r, t, &q("await-writer", Some("b")), Some("wb"), None).await;
        assert!(
            wb.still_waiting(WAIT).await,
            "{t:?}: released by a Data API producer"
        );
        // channel b's writer doesn't release a plain await-reader, nor channel a's reader
        let mut plain_r = connect(&r, t, &q("await-reader", None), Some("pr"), None).await;
        assert!(
            plain_r.still_waiting(WAIT).await,
            "{t:?}: met a channel writer"
        );
        assert!(
            ra.still_waiting(Duration::ZERO).await,
            "{t:?}: channel a met channel b"
        );
        // a Data API consumer gets the producer's bytes and releases the plain reader only
        let mut consumer = r.get(t, &path).await;
        assert_eq!(
            peer_hello(&r, t, &mut plain_r, &path, "plain reader").await,
            None
        );
        tx.send("plain transfer").await;
        drop(tx);
        assert_eq!(
            within(3.0, "consumer body", async {
                text(consumer.response().await).await
            })
            .await,
            "plain transfer"
        );
        drop(log);
        assert!(
            ra.still_waiting(Duration::ZERO).await,
            "{t:?}: channel a released"
        );
        assert!(
            wb.still_waiting(Duration::ZERO).await,
            "{t:?}: channel b released"
        );
        // each channel meets its own peer, with hellos
        let mut wa = connect(&r, t, &q("await-writer", Some("a")), Some("wa"), None).await;
        let mut rb = connect(&r, t, &q("await-reader", Some("b")), None, None).await;
        let what = format!("{t:?} channel a");
        assert_eq!(
            peer_hello(&r, t, &mut ra, &path, &what).await.as_deref(),
            Some("wa")
        );
        assert_eq!(
            peer_hello(&r, t, &mut wa, &path, &what).await.as_deref(),
            Some("ra")
        );
        let what = format!("{t:?} channel b");
        assert_eq!(
            peer_hello(&r, t, &mut rb, &path, &what).await.as_deref(),
            Some("wb")
        );
        assert_eq!(peer_hello(&r, t, &mut wb, &path, &what).await, None);
    }
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_channels_and_hellos_are_refused() {
    let r = relay().await;
    let long_channel = "c".repeat(65);
    let long_hello = "h".repeat(MAX_HELLO_BYTES + 1);
    for t in [T::H1, T::H2] {
        for channel in ["", "a%20b", "a.b", "a/b", "%C3%A9", long_channel.as_str()] {
            let q = format!("/x?mode=await-reader&channel={channel}");
            let mut c = connect(&r, t, &q, None, None).await;
            let (status, code, body) = refused(&mut c, &q).await;
            assert_eq!(status, 400, "{t:?} {q}");
            assert_eq!(code.as_deref(), Some("invalid-parameter"), "{t:?} {q}");
            assert_eq!(body, "[ERROR] Invalid \"channel\" query parameter\n");
        }
        let mut c = connect(
            &r,
            t,
            "/x?mode=await-writer&channel=a&channel=a",
            None,
            None,
        )
        .await;
        assert_eq!(
            refused(&mut c, "channel twice").await.1.as_deref(),
            Some("invalid-parameter")
        );
        // redirect makes no sense on a channel
        let q = "/x?mode=await-writer&channel=ok&redirect=true";
        let mut c = connect(&r, t, q, None, None).await;
        let (status, code, _) = refused(&mut c, q).await;
        assert_eq!((status, code.as_deref()), (400, Some("invalid-parameter")));

        for (what, hello) in [
            ("too long", long_hello.as_str()),
            ("non-ASCII", "caf\u{e9}"),
            ("a tab", "a\tb"),
        ] {
            let mut c = connect(&r, t, "/x?mode=await-reader", Some(hello), None).await;
            let (status, code, body) = refused(&mut c, what).await;
            assert_eq!(status, 400, "{t:?} {what}");
            assert_eq!(code.as_deref(), Some("invalid-header"), "{t:?} {what}");
            assert_eq!(body, "[ERROR] Invalid \"X-Httpipe-Hello\" header.\n");
        }
        // two hellos are one too many
        let q = "/connect/v0/x?mode=await-reader";
        let mut c = r
            .call(t, Method::GET, q, &[(HELLO, "a"), (HELLO, "b")], empty())
            .await;
        assert_eq!(
            refused(&mut c, "two hellos").await.1.as_deref(),
            Some("invalid-header")
        );
    }
    // nothing was registered by the refused calls
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_callers_that_leave_are_forgotten() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let path = format!("/gone{}", t.is_h2());
        let q = |mode: &str| format!("{path}?mode={mode}&channel=receipt");
        let w = connect(&r, t, &q("await-writer"), Some("stale"), None).await;
        r.until_gauge("httpipe_connect_waiting", 1).await;
        w.cancel();
        r.until_gauge("httpipe_connect_waiting", 0).await;
        // the next pair meets, and nobody gets the stale hello
        let mut rd = connect(&r, t, &q("await-reader"), Some("r"), None).await;
        assert!(
            rd.still_waiting(WAIT).await,
            "{t:?}: met a caller that left"
        );
        let mut w = connect(&r, t, &q("await-writer"), Some("fresh"), None).await;
        assert_eq!(
            peer_hello(&r, t, &mut rd, &path, "reader").await.as_deref(),
            Some("fresh")
        );
        assert_eq!(
            peer_hello(&r, t, &mut w, &path, "writer").await.as_deref(),
            Some("r")
        );
        // timeout and 408 as in §5
        let mut c = connect(
            &r,
            t,
            &format!("{}&timeout=0.2", q("await-reader")),
            None,
            None,
        )
        .await;
        let (status, _, body) = refused(&mut c, "timeout").await;
        assert_eq!((status, body.as_str()), (408, "[ERROR:CONNECT_TIMEOUT]\n"));
    }
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.shutdown().await;
}

/// §5.1 `linger`: a channel caller's last word outlives it — it hangs up, or its timeout
/// passes, and the next caller of the opposite role gets its hello at once, once; a bad value
/// is refused before it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lingering_last_word_outlives_its_caller() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let path = format!("/linger{}", t.is_h2());
        let q = |mode: &str, more: &str| format!("{path}?mode={mode}&channel=notice{more}");
        let w = connect(
            &r,
            t,
            &q("await-writer", "&linger=30"),
            Some("failed"),
            None,
        )
        .await;
        r.until_gauge("httpipe_connect_waiting", 1).await;
        w.cancel();
        r.until_gauge("httpipe_connect_waiting", 0).await;
        r.until_gauge("httpipe_connect_lingering", 1).await;
        let mut rd = connect(&r, t, &q("await-reader", ""), Some("r"), None).await;
        let hello = peer_hello(&r, t, &mut rd, &path, "after a hang-up").await;
        assert_eq!(hello.as_deref(), Some("failed"), "{t:?}");
        let mut again = connect(&r, t, &q("await-reader", "&timeout=0.2"), None, None).await;
        assert_eq!(refused(&mut again, "taken once").await.0, 408, "{t:?}");
        let late = "&timeout=0.1&linger=30";
        let mut w = connect(&r, t, &q("await-writer", late), Some("timed out"), None).await;
        assert_eq!(refused(&mut w, "its own timeout").await.0, 408, "{t:?}");
        let mut rd = connect(&r, t, &q("await-reader", ""), None, None).await;
        let hello = peer_hello(&r, t, &mut rd, &path, "after a timeout").await;
        assert_eq!(hello.as_deref(), Some("timed out"), "{t:?}");
        for bad in ["-1", "soon"] {
            let mut c = connect(
                &r,
                t,
                &q("await-writer", &format!("&linger={bad}")),
                None,
                None,
            )
            .await;
            let (status, code, _) = refused(&mut c, bad).await;
            assert_eq!(
                (status, code.as_deref()),
                (400, Some("invalid-parameter")),
                "{bad}"
            );
        }
    }
    r.until_gauge("httpipe_connect_waiting", 0).await;
    r.until_gauge("httpipe_connect_lingering", 0).await;
    r.shutdown().await;
}

const KEY: &str = "test-key-hello";

fn token(path: &str, mode: Mode) -> String {
    let now = httpipe_relay::auth::now();
    sign(
        KEY.as_bytes(),
        &Claims {
            path: path.into(),
            mode,
            recursive: false,
            expires: now + 600,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_tokens_are_checked_on_the_stream_path() {
    let r = relay_with(|c| c.auth_keys = vec![KEY.into()]).await;
    let read = token("/s", Mode::Read);
    let write = token("/s", Mode::Write);
    let other = token("/other", Mode::Write);
    for t in [T::H1, T::H2] {
        // the consumer's read token can't wait for a reader (the producer's side), nor the
        // producer's write token for a writer; a token for another path can't either
        for (mode, tok, want) in [
            ("await-reader", Some(read.as_str()), 403),
            ("await-writer", Some(write.as_str()), 403),
            ("await-reader", Some(other.as_str()), 403),
            ("await-reader", None, 401),
        ] {
            let q = format!("/s?mode={mode}&channel=receipt");
            let mut c = connect(&r, t, &q, Some("h"), tok).await;
            let (status, _, _) = refused(&mut c, &q).await;
            assert_eq!(status, want, "{t:?} {q}");
        }
        // the right tokens meet
        let mut rd = connect(
            &r,
            t,
            "/s?mode=await-reader&channel=receipt",
            Some("p"),
            Some(&write),
        )
        .await;
        assert!(rd.still_waiting(WAIT).await);
        let mut w = connect(
            &r,
            t,
            "/s?mode=await-writer&channel=receipt",
            Some("c"),
            Some(&read),
        )
        .await;
        assert_eq!(
            peer_hello(&r, t, &mut rd, "/s", "producer")
                .await
                .as_deref(),
            Some("c")
        );
        assert_eq!(
            peer_hello(&r, t, &mut w, "/s", "consumer").await.as_deref(),
            Some("p")
        );
    }
    r.shutdown().await;
}
