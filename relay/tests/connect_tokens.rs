//! Connect API (PROTOCOL.md §5) and access tokens (§6) against a real relay on 127.0.0.1.

mod common;
use common::*;

use std::time::Duration;

use http::{Method, StatusCode};
use httpipe::protocol::token::{sign, Claims, Mode};

async fn connect(r: &Relay, t: T, path_and_query: &str) -> Call {
    r.get(t, &format!("/connect/v0{path_and_query}")).await
}

async fn connect_pairs_both_orders_on(t: T) {
    let r = relay().await;
    let base = r.base(t);
    // producer first
    let mut w = connect(&r, t, "/c/one?mode=await-reader").await;
    assert!(w.still_waiting(Duration::from_millis(100)).await);
    let mut rd = connect(&r, t, "/c/one?mode=await-writer").await;
    for c in [&mut w, &mut rd] {
        let resp = within(2.0, "connect answered", c.response()).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(text(resp).await, format!("{base}/c/one\n"));
    }
    // consumer first
    let mut rd = connect(&r, t, "/c/two?mode=await-writer").await;
    assert!(rd.still_waiting(Duration::from_millis(100)).await);
    let mut w = connect(&r, t, "/c/two?mode=await-reader").await;
    assert_eq!(w.response().await.status(), StatusCode::OK);
    assert_eq!(rd.response().await.status(), StatusCode::OK);
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_pairs_both_orders() {
    for t in [T::H1, T::H2c, T::H1Tls, T::H2] {
        connect_pairs_both_orders_on(t).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_pairs_with_data_api_peers() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let d = |n: u32| format!("/d{}/{n}", t.is_h2());
        let cd = |n: u32, mode: &str| format!("/d{}/{n}?mode={mode}", t.is_h2());
        // a consumer already waiting on the Data API releases a producer's await-reader
        let mut c = r.get(t, &d(1)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut w = connect(&r, t, &cd(1, "await-reader")).await;
        assert_eq!(
            within(2.0, "await-reader", w.response()).await.status(),
            StatusCode::OK
        );
        let mut p = r.post(t, &d(1), full("via connect")).await;
        assert_eq!(text(c.response().await).await, "via connect");
        p.response().await;
        // a waiting Data API producer releases a consumer's await-writer
        let (_tx, b) = channel_body();
        let mut p = r.post(t, &d(2), b).await;
        let _log = p.response().await;
        let mut rd = connect(&r, t, &cd(2, "await-writer")).await;
        assert_eq!(
            within(2.0, "await-writer", rd.response()).await.status(),
            StatusCode::OK
        );
        // a Data API consumer arriving later releases a waiting await-reader
        let mut w = connect(&r, t, &cd(3, "await-reader")).await;
        assert!(w.still_waiting(Duration::from_millis(100)).await);
        let _c = r.get(t, &d(3)).await;
        assert_eq!(
            within(2.0, "await-reader released", w.response())
                .await
                .status(),
            StatusCode::OK
        );
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_redirect_and_bad_mode() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let mut c = connect(&r, t, "/e?mode=await-reader&timeout=0.2").await;
        let resp = within(2.0, "timeout", c.response()).await;
        assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(text(resp).await, "[ERROR:CONNECT_TIMEOUT]\n");

        let mut w = connect(&r, t, "/f?mode=await-reader").await;
        let mut rd = connect(&r, t, "/f?mode=await-writer&redirect=true").await;
        let resp = rd.response().await;
        assert_eq!(resp.status(), StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(
            header(resp.headers(), "location"),
            Some(format!("{}/f", r.base(t)).as_str())
        );
        w.response().await;

        let mut c = connect(&r, t, "/g?mode=sideways").await;
        assert_eq!(c.response().await.status(), StatusCode::BAD_REQUEST);
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_caller_that_leaves_is_forgotten() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let mut w = connect(&r, t, "/gone?mode=await-reader").await;
        assert!(w.still_waiting(Duration::from_millis(50)).await);
        w.cancel();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut rd = connect(&r, t, "/gone?mode=await-writer&timeout=0.3").await;
        assert_eq!(rd.response().await.status(), StatusCode::REQUEST_TIMEOUT);
    }
    r.shutdown().await;
}

const KEY: &str = "test-key-1";

fn token(path: &str, mode: Mode, recursive: bool, expires_in: i64) -> String {
    let now = httpipe_relay::auth::now() as i64;
    sign(
        KEY.as_bytes(),
        &Claims {
            path: path.into(),
            mode,
            recursive,
            expires: (now + expires_in) as u64,
        },
    )
}

async fn status(r: &Relay, t: T, method: Method, path: &str, tok: Option<&str>) -> u16 {
    let bearer = tok.map(|t| format!("Bearer {t}"));
    let hs: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    let body = if method == Method::GET {
        empty()
    } else {
        full("x")
    };
    let mut c = r.call(t, method.clone(), path, &hs, body).await;
    // a request that is allowed waits for its peer: a pending answer means "allowed"
    if c.still_waiting(Duration::from_millis(150)).await {
        c.cancel();
        return 0;
    }
    c.response().await.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_scope_mode_expiry_and_tampering() {
    let r = relay_with(|c| c.auth_keys = vec![KEY.into(), b"old-key".to_vec()]).await;
    for t in [T::H1, T::H2] {
        let read_a = token("/a", Mode::Read, true, 3600);
        let write_a = token("/a", Mode::Write, false, 3600);
        // the POSTs below use distinct paths: a POST that is allowed is answered 200 at once
        assert_eq!(status(&r, t, Method::GET, "/a", None).await, 401);
        assert_eq!(
            status(&r, t, Method::GET, "/a", Some(&read_a)).await,
            0,
            "read token reads"
        );
        assert_eq!(
            status(&r, t, Method::GET, "/a/b", Some(&read_a)).await,
            0,
            "recursive covers /a/b"
        );
        assert_eq!(
            status(&r, t, Method::GET, "/ab", Some(&read_a)).await,
            403,
            "/a doesn't cover /ab"
        );
        assert_eq!(
            status(&r, t, Method::POST, "/a", Some(&read_a)).await,
            403,
            "read token can't write"
        );
        assert_eq!(
            status(&r, t, Method::GET, "/a", Some(&write_a)).await,
            403,
            "write token can't read"
        );
        assert_eq!(
            status(&r, t, Method::POST, "/a", Some(&write_a)).await,
            200,
            "write token writes"
        );
        assert_eq!(
            status(&r, t, Method::POST, "/a/b", Some(&write_a)).await,
            403,
            "not recursive"
        );
        // a withdrawal (§3.10) is a producer's: write token only
        assert_eq!(status(&r, t, Method::DELETE, "/a", None).await, 401);
        assert_eq!(
            status(&r, t, Method::DELETE, "/a", Some(&read_a)).await,
            403,
            "read token can't withdraw"
        );
        assert_eq!(
            status(&r, t, Method::DELETE, "/a", Some(&write_a)).await,
            200,
            "write token withdraws"
        );
        let expired = token("/a", Mode::Read, false, -1);
        assert_eq!(status(&r, t, Method::GET, "/a", Some(&expired)).await, 401);
        let mut tampered = read_a.clone().into_bytes();
        let i = tampered.len() - 3;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(status(&r, t, Method::GET, "/a", Some(&tampered)).await, 401);
        for garbage in ["", "hp1", "hp1.x.y", "Bearer", "hp1.e30.e30.e30"] {
            assert_eq!(
                status(&r, t, Method::GET, "/a", Some(garbage)).await,
                401,
                "{garbage:?}"
            );
        }
        let other_key = sign(
            b"other",
            &Claims {
                path: "/a".into(),
                mode: Mode::Read,
                recursive: false,
                expires: u64::MAX,
            },
        );
        assert_eq!(
            status(&r, t, Method::GET, "/a", Some(&other_key)).await,
            401
        );
        let rotated = sign(
            b"old-key",
            &Claims {
                path: "/q".into(),
                mode: Mode::Read,
                recursive: false,
                expires: u64::MAX,
            },
        );
        assert_eq!(
            status(&r, t, Method::GET, "/q", Some(&rotated)).await,
            0,
            "second key accepted"
        );

        // query-parameter form, and a full transfer with tokens
        let w = token("/qp", Mode::Write, false, 60);
        let rd = token("/qp", Mode::Read, false, 60);
        let mut c = r.get(t, &format!("/qp?accesstoken={rd}")).await;
        let mut p = r
            .post(t, &format!("/qp?accesstoken={w}"), full("secret bytes"))
            .await;
        assert_eq!(text(c.response().await).await, "secret bytes");
        p.response().await;

        // Connect API: await-reader needs write, await-writer needs read
        assert_eq!(
            status(
                &r,
                t,
                Method::GET,
                "/connect/v0/a?mode=await-reader",
                Some(&read_a)
            )
            .await,
            403
        );
        assert_eq!(
            status(
                &r,
                t,
                Method::GET,
                "/connect/v0/a?mode=await-reader",
                Some(&write_a)
            )
            .await,
            0
        );
        assert_eq!(
            status(&r, t, Method::GET, "/connect/v0/a?mode=await-writer", None).await,
            401
        );
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_api_and_token_subcommand() {
    let r = relay_with(|c| c.auth_keys = vec![KEY.into()]).await;
    let t = T::H1;
    let ct = ("content-type", "application/x-www-form-urlencoded");
    let mut c = r
        .call(
            t,
            Method::POST,
            "/api/v0/accesstoken.create",
            &[ct],
            full("path=/m&access_mode=read&recursive=false"),
        )
        .await;
    assert_eq!(c.response().await.status(), StatusCode::UNAUTHORIZED);
    let admin = format!("Bearer {KEY}");
    let mut c = r
        .call(
            t,
            Method::POST,
            "/api/v0/accesstoken.create",
            &[ct, ("authorization", &admin)],
            full("path=/m&access_mode=read&recursive=true"),
        )
        .await;
    let resp = c.response().await;
    assert_eq!(resp.status(), StatusCode::OK);
    let json: serde_json::Value = serde_json::from_str(&text(resp).await).unwrap();
    assert_eq!(json["path"], "/m");
    assert!(json["token_id"].is_string());
    let tok = json["token"].as_str().unwrap().to_string();
    assert_eq!(status(&r, t, Method::GET, "/m/x", Some(&tok)).await, 0);
    assert_eq!(status(&r, t, Method::POST, "/m/x", Some(&tok)).await, 403);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .args(["token", "--path", "/cli", "--mode", "write", "--ttl", "10m"])
        .env("HTTPIPE_AUTH_KEY", KEY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli_tok = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(cli_tok.starts_with("hp1."));
    assert_eq!(
        status(&r, t, Method::POST, "/cli", Some(&cli_tok)).await,
        200
    );
    assert_eq!(
        status(&r, t, Method::GET, "/cli", Some(&cli_tok)).await,
        403
    );
    r.shutdown().await;
}

/// `httpipe-relay token` rejects what would mint an unusable token: a path without the
/// leading '/' and a non-positive ttl (non-zero exit, a clear message, nothing printed).
#[test]
fn token_cli_rejects_unusable_tokens() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
            .arg("token")
            .args(["--auth-key", "k0123456789abcdef", "--mode", "write"])
            .args(args)
            .env_remove("HTTPIPE_AUTH_KEY_FILE")
            .output()
            .expect("run httpipe-relay")
    };
    let ok = run(&["--path", "/team"]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("hp1."));
    let bad = run(&["--path", "team"]);
    assert!(!bad.status.success());
    assert!(bad.stdout.is_empty());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must be a path starting with '/'"));
    let bad = run(&["--path", "/team", "--ttl", "0s"]);
    assert!(!bad.status.success());
    assert!(bad.stdout.is_empty());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--ttl"));
}
