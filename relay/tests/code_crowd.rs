//! The crowd (PROTOCOL.md §9 "Per-address limits", §14.5) against a real relay on 127.0.0.1:
//! idle requests from one address, and from several (127.0.0.2, 127.0.0.3, ...: Linux routes
//! all of 127.0.0.0/8 to the loopback), over one HTTP/2 connection each, as the cheapest
//! attacker would send them. Issue #26: 999 idle POSTs from one address blocked every short
//! code, 999 idle GETs took every sender's first message. The tests print what a crowd needs.

mod common;
use common::*;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use httpipe::protocol::paths::{code_pipe_path, CODE_CHANNEL_MAX};
use httpipe::protocol::token::{sign, Claims, Mode};
use httpipe_relay::crowd::{DEFAULT_CODE_LOOKUPS_PER_MINUTE, DEFAULT_MAX_CODE_REQUESTS};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpSocket;

/// One HTTP/2 (h2c) connection from source address `from`: any number of requests on it.
struct H2 {
    sender: SendRequest<TestBody>,
    base: String,
}

impl H2 {
    async fn from(relay: &Relay, from: &str) -> H2 {
        let from: IpAddr = from.parse().unwrap();
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        let tcp = socket.connect(relay.http).await.unwrap();
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        H2 {
            sender,
            base: relay.base(T::H2c),
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: TestBody,
    ) -> Response<Incoming> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut sender = self.sender.clone();
        sender.ready().await.unwrap();
        sender.send_request(req.body(body).unwrap()).await.unwrap()
    }

    /// `POST path` with a complete body (a sender's `A`).
    async fn post(&self, path: &str) -> Response<Incoming> {
        let a = Bytes::from_static(&[0u8; 33]);
        self.send(Method::POST, path, &[], full(a)).await
    }
}

fn refusal(r: &Response<Incoming>) -> &str {
    header(r.headers(), "x-httpipe-error").unwrap_or("")
}

/// Sends `POST /code/v1/N/a` for every N in `channels` at once from `h2`; the held ones (200,
/// kept open) and how many each refusal code refused.
async fn hold_channels(
    h2: &H2,
    channels: impl Iterator<Item = u16>,
) -> (
    Vec<Response<Incoming>>,
    std::collections::BTreeMap<String, usize>,
) {
    let posts = channels.map(|n| {
        let path = code_pipe_path(n, 'a');
        async move { h2.post(&path).await }
    });
    let mut held = Vec::new();
    let mut refused = std::collections::BTreeMap::new();
    for r in futures_util::future::join_all(posts).await {
        if r.status() == StatusCode::OK {
            held.push(r);
        } else {
            *refused.entry(refusal(&r).to_string()).or_insert(0) += 1;
        }
    }
    (held, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_can_no_longer_block_the_codes() {
    // before (no per-address limit, the old space 1–999): one connection blocks every channel
    let open = relay_with(|c| c.crowd.max_code_requests = 0).await;
    let h2 = H2::from(&open, "127.0.0.2").await;
    let (held, _) = hold_channels(&h2, 1..=999).await;
    println!(
        "before: one address, one HTTP/2 connection, {} idle POSTs held {} of the old 999 channels",
        999,
        held.len()
    );
    assert_eq!(held.len(), 999);
    drop((held, h2));
    open.shutdown().await;

    // after: the same flood holds 16 channels; a sender from elsewhere still holds one
    let r = relay().await;
    let attacker = H2::from(&r, "127.0.0.2").await;
    let (held, refused) = hold_channels(&attacker, 1..=CODE_CHANNEL_MAX).await;
    let max = DEFAULT_MAX_CODE_REQUESTS;
    println!(
        "after: one address, {CODE_CHANNEL_MAX} idle POSTs: {} held, refused {refused:?}",
        held.len()
    );
    assert_eq!(held.len(), max);
    assert_eq!(
        refused.get("too-many-code-requests"),
        Some(&(CODE_CHANNEL_MAX as usize - max))
    );
    // the refusal says what happened, and when to come back; /metrics counts it
    let mut m = r.get(T::H1, "/metrics").await;
    let metrics = text(m.response().await).await;
    let want = format!(
        "httpipe_refused_total{{code=\"too-many-code-requests\"}} {}",
        9999 - max
    );
    assert!(metrics.contains(&want), "{metrics}");
    let more = attacker.post(&code_pipe_path(9999, 'b')).await;
    assert_eq!(more.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(more.headers(), "retry-after"), Some("1"));
    let why = text(more).await;
    assert!(why.contains("from your address"), "{why}");
    // idle GETs on every first pipe take nothing: no sender there, no wait (§14.5 rule 2)
    let gets = (1..=20).map(|n| {
        let (attacker, path) = (&attacker, code_pipe_path(CODE_CHANNEL_MAX - n, 'a'));
        async move { attacker.send(Method::GET, &path, &[], empty()).await }
    });
    let gets = futures_util::future::join_all(gets).await;
    assert!(
        gets.iter().all(|g| g.status() != StatusCode::OK),
        "a GET on pipe a waited"
    );

    // a sender from another address holds a free channel; a receiver from a third gets its A
    let sender = H2::from(&r, "127.0.0.3").await;
    let (mine, _) = hold_channels(&sender, std::iter::once(5000)).await;
    assert_eq!(mine.len(), 1, "the sender's channel");
    let receiver = H2::from(&r, "127.0.0.4").await;
    let w = receiver
        .send(
            Method::GET,
            "/connect/v0/code/v1/5000/a?mode=await-writer&timeout=2",
            &[],
            empty(),
        )
        .await;
    assert_eq!(w.status(), StatusCode::OK);
    let a = receiver
        .send(Method::GET, &code_pipe_path(5000, 'a'), &[], empty())
        .await;
    assert_eq!(a.status(), StatusCode::OK);
    assert_eq!(read_all(a).await.unwrap().len(), 33);
    // the attacker's hung-up requests give their places back: it can hold 16 again
    drop((held, attacker));
    r.until_gauge("httpipe_waiting_producers", 0).await;
    let attacker = H2::from(&r, "127.0.0.2").await;
    let mut again = Vec::new();
    for _ in 0..50 {
        let want = max - again.len();
        let (h, _) = hold_channels(
            &attacker,
            (6001..).take(want).map(|n| n + again.len() as u16),
        )
        .await;
        again.extend(h);
        if again.len() == max {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(again.len(), max, "places given back");
    drop((again, mine));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_crowd_of_addresses_needs() {
    let r = relay().await;
    let max = DEFAULT_MAX_CODE_REQUESTS;
    // the sender's first tier, 1–99, takes ceil(99 / 16) = 7 addresses
    let mut held = Vec::new();
    let mut conns = Vec::new();
    let mut channels = 1..=99u16;
    for i in 0..7 {
        let h2 = H2::from(&r, &format!("127.0.1.{}", i + 1)).await;
        let take: Vec<u16> = channels.by_ref().take(max).collect();
        let (h, refused) = hold_channels(&h2, take.into_iter()).await;
        assert!(refused.is_empty(), "{refused:?}");
        held.extend(h);
        conns.push(h2);
    }
    assert_eq!(held.len(), 99);
    let addresses = |channels: usize| channels.div_ceil(max);
    println!(
        "a crowd needs, at {max} open code requests per address: {} addresses for 1-99 \
         (measured: 7 held all 99), {} for 1-999, {} for 1-{CODE_CHANNEL_MAX}",
        addresses(99),
        addresses(999),
        addresses(CODE_CHANNEL_MAX as usize)
    );
    // a sender's busy loop fails only after 20 busy picks: 3 in 1-99, 3 in 1-999, 14 in all
    for f in [0.5f64, 0.9] {
        let n = (f * f64::from(CODE_CHANNEL_MAX)).ceil() as usize;
        println!(
            "holding {:.0}% of the channels ({} addresses) fails a sender with p = {:.2e}",
            f * 100.0,
            addresses(n),
            f.powi(14)
        );
    }
    drop((held, conns));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_per_address_are_rationed() {
    let r = relay().await;
    let prober = H2::from(&r, "127.0.0.5").await;
    let per_minute = DEFAULT_CODE_LOOKUPS_PER_MINUTE;
    // a probe of channel after channel, as fast as answers come (no sender: 408 / 404)
    let mut answers = std::collections::BTreeMap::new();
    for n in 1..=per_minute as u16 + 10 {
        let path = match n % 2 {
            0 => format!("/connect/v0/code/v1/{n}/a?mode=await-writer&timeout=0"),
            _ => code_pipe_path(n, 'a'),
        };
        let a = prober.send(Method::GET, &path, &[], empty()).await;
        let key = format!("{} {}", a.status().as_u16(), refusal(&a));
        *answers.entry(key).or_insert(0usize) += 1;
    }
    println!(
        "{} lookups from one address in a row: {answers:?}",
        per_minute + 10
    );
    // the bucket refills one a second: a slow run may let one or two more through
    let refused = answers
        .get("429 too-many-code-lookups")
        .copied()
        .unwrap_or(0);
    assert!((8..=10).contains(&refused), "{answers:?}");
    let no_sender = answers.get("404 no-sender").copied().unwrap_or(0);
    let timed_out = answers.get("408 ").copied().unwrap_or(0);
    assert_eq!(no_sender + timed_out + refused, per_minute as usize + 10);
    // another address is not rationed by this one's lookups
    let other = H2::from(&r, "127.0.0.6").await;
    let a = other
        .send(Method::GET, &code_pipe_path(1, 'a'), &[], empty())
        .await;
    assert_eq!((a.status().as_u16(), refusal(&a)), (404, "no-sender"));
    let mut retry_after = None;
    for _ in 0..3 {
        let again = prober
            .send(Method::GET, &code_pipe_path(1, 'a'), &[], empty())
            .await;
        if refusal(&again) == "too-many-code-lookups" {
            retry_after = header(again.headers(), "retry-after").map(str::to_string);
        }
    }
    assert_eq!(retry_after.as_deref(), Some("1"));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_peers_per_address() {
    let r = relay_with(|c| c.crowd.max_waiting = 4).await;
    let crowd = H2::from(&r, "127.0.0.7").await;
    // two waiting consumers, a waiting producer, a waiting Connect caller: 4 places
    let mut waiting = Vec::new();
    for path in ["/w/1", "/w/2"] {
        let c = crowd.sender.clone();
        let uri = format!("{}{path}", crowd.base);
        waiting.push(tokio::spawn(async move {
            let mut c = c;
            c.ready().await.unwrap();
            let req = Request::get(uri).body(empty()).unwrap();
            c.send_request(req).await
        }));
    }
    let producer = crowd.post("/w/3").await;
    assert_eq!(producer.status(), StatusCode::OK);
    let c = crowd.sender.clone();
    let uri = format!("{}/connect/v0/w/4?mode=await-reader", crowd.base);
    waiting.push(tokio::spawn(async move {
        let mut c = c;
        c.ready().await.unwrap();
        c.send_request(Request::get(uri).body(empty()).unwrap())
            .await
    }));
    r.until_gauge("httpipe_connect_waiting", 1).await;
    r.until_gauge("httpipe_waiting_consumers", 2).await;
    // a fifth: refused at once, with the limit
    for (m, path) in [(Method::GET, "/w/5"), (Method::POST, "/w/6")] {
        let more = crowd.send(m, path, &[], full("x")).await;
        assert_eq!(
            (more.status().as_u16(), refusal(&more)),
            (429, "too-many-waiting")
        );
        assert!(text(more).await.contains("(at most 4)"));
    }
    // another address waits as usual
    let other = H2::from(&r, "127.0.0.8").await;
    let c = other.send(Method::GET, "/w/3", &[], empty()).await;
    // ... and matched the crowd's producer: its place is free again
    assert_eq!(read_all(c).await.unwrap().len(), 33);
    let again = crowd.post("/w/7").await;
    assert_eq!(again.status(), StatusCode::OK);
    drop((again, waiting));
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_forwarded_address_counts() {
    for trust in [false, true] {
        let r = relay_with(|c| {
            c.trust_proxy = trust;
            c.crowd.max_code_requests = 1;
        })
        .await;
        let proxy = H2::from(&r, "127.0.0.9").await;
        // a sender's POST on `channel`'s pipe a, from the client the proxy names
        let post_for = |channel: u16, xff: &'static str| {
            let proxy = &proxy;
            async move {
                let path = code_pipe_path(channel, 'a');
                let headers = [("x-forwarded-for", xff)];
                proxy
                    .send(Method::POST, &path, &headers, full(vec![0u8; 33]))
                    .await
            }
        };
        let one = post_for(1, "203.0.113.1").await;
        assert_eq!(one.status(), StatusCode::OK);
        let two = post_for(2, "198.51.100.7, 203.0.113.2").await;
        // trusted: two clients; not trusted: one (the proxy), whatever the header says
        let want = if trust { 200 } else { 429 };
        assert_eq!(two.status().as_u16(), want, "trust_proxy {trust}");
        drop((one, two));
        r.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_token_opens_the_code_namespace_and_nothing_else() {
    const KEY: &[u8] = b"code-token-test-key";
    let r = relay_with(|c| c.auth_keys = vec![KEY.to_vec()]).await;
    let code = sign(
        KEY,
        &Claims {
            path: "/code/v1".into(),
            mode: Mode::Code,
            recursive: true,
            expires: u64::MAX / 2,
        },
    );
    let bearer = format!("Bearer {code}");
    let auth = [("authorization", bearer.as_str())];
    let h2 = H2::from(&r, "127.0.0.10").await;
    // lookups without a token are refused for it, and take none of the address's lookups
    for n in 1..=DEFAULT_CODE_LOOKUPS_PER_MINUTE as u16 + 5 {
        let no = h2
            .send(Method::GET, &code_pipe_path(n, 'a'), &[], empty())
            .await;
        assert_eq!(no.status(), StatusCode::UNAUTHORIZED);
    }
    // the exchange's requests: a sender's POST, a receiver's Connect call and GET
    let a = h2
        .send(
            Method::POST,
            &code_pipe_path(42, 'a'),
            &auth,
            full(vec![7u8; 33]),
        )
        .await;
    assert_eq!(a.status(), StatusCode::OK);
    let w = h2
        .send(
            Method::GET,
            "/connect/v0/code/v1/42/a?mode=await-writer&timeout=2",
            &auth,
            empty(),
        )
        .await;
    assert_eq!(w.status(), StatusCode::OK);
    let got = h2
        .send(Method::GET, &code_pipe_path(42, 'a'), &auth, empty())
        .await;
    assert_eq!(read_all(got).await.unwrap(), vec![7u8; 33]);
    // the data path of §14.3: read and write
    let x = "/code/v1/x/0123456789abcdef0123456789abcdef";
    let up = h2.send(Method::POST, x, &auth, full("data")).await;
    assert_eq!(up.status(), StatusCode::OK);
    let down = h2.send(Method::GET, x, &auth, empty()).await;
    assert_eq!(text(down).await, "data");
    // nothing else: another path, either side, and the namespace root
    for (m, path) in [
        (Method::POST, "/s/secret"),
        (Method::GET, "/s/secret"),
        (
            Method::GET,
            "/connect/v0/s/secret?mode=await-writer&timeout=0",
        ),
        (Method::POST, "/code/v1"),
        (Method::POST, "/code/v10/1/a"),
    ] {
        let resp = h2.send(m.clone(), path, &auth, full("x")).await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{m} {path}");
    }
    // minted over HTTP with the admin key: no path needed, another is refused
    let admin = format!("Bearer {}", String::from_utf8_lossy(KEY));
    let form = [
        ("authorization", admin.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let made = h2
        .send(
            Method::POST,
            "/api/v0/accesstoken.create",
            &form,
            full("access_mode=code"),
        )
        .await;
    assert_eq!(made.status(), StatusCode::OK);
    assert!(text(made).await.contains(r#""path":"/code/v1""#));
    let refused = h2
        .send(
            Method::POST,
            "/api/v0/accesstoken.create",
            &form,
            full("access_mode=code&path=/s"),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(text(refused).await.contains("/code/v1"));
    drop(a);
    r.shutdown().await;
}
