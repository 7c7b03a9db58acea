//! The relay's own paths (PROTOCOL.md §2, §3.7, §9), `Expect: 100-continue` with the real curl,
//! and the real binary's start-up lines, SIGTERM and `token` subcommand.

mod common;
use common::*;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ops_endpoints() {
    let r = relay().await;
    for t in [T::H1, T::H2c, T::H2] {
        let mut c = r.get(t, "/version").await;
        assert_eq!(
            text(c.response().await).await,
            format!("httpipe-relay {}\n", env!("CARGO_PKG_VERSION"))
        );
        let mut c = r.get(t, "/healthz").await;
        assert_eq!(text(c.response().await).await, "ok\n");
        let mut c = r.get(t, "/favicon.ico").await;
        assert_eq!(c.response().await.status(), StatusCode::NO_CONTENT);
        let mut c = r.get(t, "/robots.txt").await;
        assert_eq!(c.response().await.status(), StatusCode::NOT_FOUND);
        let mut c = r.get(t, "/help").await;
        let help = text(c.response().await).await;
        let base = r.base(t);
        assert!(help.contains(&format!("curl -T - {base}/mypath")), "{help}");
    }
    let mut c = r.get(T::H1, "/metrics").await;
    let m = text(c.response().await).await;
    for name in [
        "httpipe_waiting_producers",
        "httpipe_bytes_relayed_total",
        "httpipe_transfers_failed_total{reason=\"producer_aborted\"}",
    ] {
        assert!(m.contains(name), "{name} missing:\n{m}");
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_preflight() {
    let r = relay().await;
    for t in [T::H1, T::H2] {
        let mut c = r
            .call(
                t,
                Method::OPTIONS,
                "/any/path",
                &[("access-control-request-method", "POST")],
                empty(),
            )
            .await;
        let resp = c.response().await;
        assert_eq!(resp.status(), StatusCode::OK);
        let h = resp.headers();
        assert_eq!(header(h, "access-control-allow-origin"), Some("*"));
        assert_eq!(
            header(h, "access-control-allow-methods"),
            Some("GET, HEAD, POST, PUT, OPTIONS")
        );
        assert_eq!(
            header(h, "access-control-allow-headers"),
            Some("Content-Type, Content-Disposition, X-Piping, Authorization, X-Httpipe-Upload")
        );
        assert_eq!(
            header(h, "access-control-expose-headers"),
            Some("Access-Control-Allow-Headers")
        );
        assert_eq!(header(h, "access-control-max-age"), Some("86400"));
        assert!(h.get("access-control-allow-private-network").is_none());
        let mut c = r
            .call(
                t,
                Method::OPTIONS,
                "/p",
                &[("access-control-request-private-network", "true")],
                empty(),
            )
            .await;
        let resp = c.response().await;
        assert_eq!(
            header(resp.headers(), "access-control-allow-private-network"),
            Some("true")
        );
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_files_and_mime_types() {
    let r = relay().await;
    let www = r.cert_dir.join("www");
    let pkg = r.cert_dir.join("pkg");
    std::fs::create_dir_all(www.join("sub")).unwrap();
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(www.join("index.html"), "<h1>demo</h1>").unwrap();
    std::fs::write(www.join("sub/app.js"), "export {}").unwrap();
    std::fs::write(www.join("style.css"), "p{}").unwrap();
    std::fs::write(pkg.join("httpipe_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(pkg.join("httpipe.js"), "export {}").unwrap();
    std::fs::write(r.cert_dir.join("secret.txt"), "secret").unwrap();
    let cases = [
        ("/", "text/html; charset=utf-8"),
        ("/assets/sub/app.js", "text/javascript; charset=utf-8"),
        ("/assets/style.css", "text/css; charset=utf-8"),
        ("/assets/pkg/httpipe_bg.wasm", "application/wasm"),
        ("/assets/pkg/httpipe.js", "text/javascript; charset=utf-8"),
    ];
    for t in [T::H1, T::H2] {
        for (path, mime) in cases {
            let mut c = r.get(t, path).await;
            let resp = c.response().await;
            assert_eq!(resp.status(), StatusCode::OK, "{path}");
            assert_eq!(header(resp.headers(), "content-type"), Some(mime), "{path}");
        }
        let mut c = r
            .call(t, Method::HEAD, "/assets/style.css", &[], empty())
            .await;
        let resp = c.response().await;
        assert_eq!(header(resp.headers(), "content-length"), Some("3"));
        for bad in [
            "/assets/../secret.txt",
            "/assets/%2e%2e/secret.txt",
            "/assets/sub/..%2f..%2fsecret.txt",
            "/assets/missing.js",
            "/assets/sub",
            "/assets/",
        ] {
            let mut c = r.get(t, bad).await;
            assert_eq!(c.response().await.status(), StatusCode::NOT_FOUND, "{bad}");
        }
    }
    r.shutdown().await;
}

/// curl sends `Expect: 100-continue` when uploading from a pipe and waits up to 1 s for an
/// answer before sending the body; the relay answers at once, so bytes flow immediately.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_expect_100_continue_does_not_stall() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("skipped: curl not installed");
        return;
    }
    let r = relay().await;
    for receiver_first in [true, false] {
        let path = format!("/expect-{receiver_first}");
        let url = format!("http://127.0.0.1:{}{path}", r.http.port());
        let mut c = None;
        if receiver_first {
            c = Some(r.get(T::H1, &path).await);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let started = Instant::now();
        let mut curl = Command::new("curl")
            .args(["-sS", "-T", "-", "-H", "Transfer-Encoding: chunked", &url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = curl.stdin.take().unwrap();
        stdin.write_all(b"hello from curl").unwrap();
        drop(stdin);
        let mut c = match c {
            Some(c) => c,
            None => r.get(T::H1, &path).await,
        };
        let got = text(c.response().await).await;
        let elapsed = started.elapsed();
        assert_eq!(got, "hello from curl");
        assert!(
            elapsed < Duration::from_millis(800),
            "curl upload stalled {elapsed:?} (Expect: 100-continue)"
        );
        let out = tokio::task::spawn_blocking(move || curl.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"));
    }
    r.shutdown().await;
}

/// The real binary: start-up lines on stdout (tests/js/lib/relay.mjs parses them), serving,
/// graceful exit on SIGTERM.
#[test]
fn binary_prints_listening_lines_and_stops_on_sigterm() {
    let child = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .args([
            "--host",
            "127.0.0.1",
            "--http-port",
            "0",
            "--https-port",
            "0",
            "--shutdown-grace",
            "1s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let http = lines.next().unwrap().unwrap();
    let https = lines.next().unwrap().unwrap();
    let fp = lines.next().unwrap().unwrap();
    assert!(http.starts_with("listening http://127.0.0.1:"), "{http}");
    assert!(https.starts_with("listening https://127.0.0.1:"), "{https}");
    assert!(
        fp.contains("SHA-256 fingerprint") && fp.matches(':').count() == 31,
        "{fp}"
    );
    let port: u16 = http.rsplit(':').next().unwrap().parse().unwrap();
    let out = Command::new("curl")
        .args(["-sS", &format!("http://127.0.0.1:{port}/healthz")])
        .output();
    if let Ok(out) = out {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    }
    child.sigterm_and_wait("SIGTERM");
}

/// The curl recipes printed by /help work as printed (a consumer and a producer, run by sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_recipes_work() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("skipped: curl not installed");
        return;
    }
    let r = relay().await;
    let mut c = r.get(T::H1, "/help").await;
    let help = text(c.response().await).await;
    let line = |prefix: &str| -> String {
        help.lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in {help}"))
            .to_string()
    };
    let send = line("echo 'hello, world' | curl -T - ");
    let recv = line("curl http");
    assert!(recv.ends_with("/mypath"), "{recv}");
    let consumer = tokio::process::Command::new("sh")
        .args(["-c", &recv])
        .output();
    let producer = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        tokio::process::Command::new("sh")
            .args(["-c", &send])
            .output()
            .await
    };
    let (c_out, p_out) = tokio::join!(consumer, producer);
    assert_eq!(
        String::from_utf8_lossy(&c_out.unwrap().stdout),
        "hello, world\n"
    );
    assert!(
        String::from_utf8_lossy(&p_out.unwrap().stdout).ends_with("[STATE:TRANSFER_SUCCESSFUL]\n")
    );
    r.shutdown().await;
}

/// Graceful shutdown (§9): no new connections, running transfers continue for the grace
/// period, then they are aborted (the consumer sees truncation, not a clean end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_then_abort() {
    use http_body_util::BodyExt;
    let mut r = relay_with(|c| c.shutdown_grace = Duration::from_millis(600)).await;
    let (tx, b) = channel_body();
    let mut p = r.post(T::H1, "/long", b).await;
    let mut c = r.get(T::H1, "/long").await;
    let mut body = c.response().await.into_body();
    let _log = p.response().await;
    tx.send("before").await;
    assert_eq!(
        &body.frame().await.unwrap().unwrap().into_data().unwrap()[..],
        b"before"
    );
    let running = r.running.take().unwrap();
    let stopped = tokio::spawn(running.shutdown());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        tokio::net::TcpStream::connect(r.http).await.is_err(),
        "still accepting after shutdown"
    );
    tx.send("during grace").await;
    assert_eq!(
        &body.frame().await.unwrap().unwrap().into_data().unwrap()[..],
        b"during grace"
    );
    let end = within(3.0, "aborted after the grace period", async {
        loop {
            match body.frame().await {
                Some(Ok(_)) => continue,
                other => break other,
            }
        }
    })
    .await;
    assert!(matches!(end, Some(Err(_))), "{end:?}");
    within(3.0, "shutdown finished", stopped).await.unwrap();
}

/// Issue #10 item 12: started from another directory without `--www`, the relay still finds
/// the demo (next to the binary or the project) instead of answering 404 at `/`.
#[test]
fn binary_finds_the_demo_from_any_directory() {
    let child = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .args(["--http-port", "0", "--no-tls", "--host", "127.0.0.1"])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let http = lines.next().unwrap().unwrap();
    let port: u16 = http.rsplit(':').next().unwrap().parse().unwrap();
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
}
