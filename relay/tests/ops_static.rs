//! The relay's own paths (PROTOCOL.md §2, §3.7, §9), `Expect: 100-continue` with the real curl,
//! the `/help` recipes (open and auth mode) run as printed, and the real binary's start-up
//! lines and errors (a port in use), log colours, SIGTERM and `token` subcommand.

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
            Some("GET, HEAD, POST, PUT, DELETE, OPTIONS")
        );
        assert_eq!(
            header(h, "access-control-allow-headers"),
            Some(
                "Content-Type, Content-Disposition, X-Piping, Authorization, X-Httpipe-Upload, \
                 X-Httpipe-Hello, X-Httpipe-Channel-Key"
            )
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
    if !have_curl() {
        return missing_tool(
            "curl_expect_100_continue_does_not_stall",
            "curl is not installed",
        );
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
    if !have_curl() {
        return missing_tool("help_recipes_work", "curl is not installed");
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

/// Auth mode: /help's recipes carry the tokens they need and mint them with the relay's key
/// file as it was given; run as printed (by sh, the real curl, the real `httpipe-relay token`),
/// the plain pair and the Connect pair transfer, and the HTTP mint answers a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_recipes_work_in_auth_mode() {
    if !have_curl() {
        return missing_tool("help_recipes_work_in_auth_mode", "curl is not installed");
    }
    let dir = temp_dir("help-auth");
    std::fs::write(
        dir.join("relay.key"),
        "c2VjcmV0LWtleS1mb3ItdGhlLWhlbHAtdGVzdA==\n",
    )
    .unwrap();
    let r = relay_with(|c| {
        c.auth_keys = vec![b"c2VjcmV0LWtleS1mb3ItdGhlLWhlbHAtdGVzdA==".to_vec()];
        c.auth_key_file = Some("relay.key".into());
    })
    .await;
    let mut c = r.get(T::H1, "/help").await;
    let help = text(c.response().await).await;
    let line = |prefix: &str| -> String {
        help.lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in {help}"))
            .to_string()
    };
    let write_token = line("WRITE_TOKEN=$(httpipe-relay token --auth-key-file relay.key ");
    let read_token = line("READ_TOKEN=$(httpipe-relay token --auth-key-file relay.key ");
    let code_token = line("CODE_TOKEN=$(httpipe-relay token --auth-key-file relay.key ");
    let mint = line("curl -H \"Authorization: Bearer $(head -1 relay.key)\"");
    let send = line("echo 'hello, world' | curl -T - -H \"Authorization: Bearer $WRITE_TOKEN\" ");
    let recv = line("curl -H \"Authorization: Bearer $READ_TOKEN\" http");
    assert!(recv.ends_with("/mypath"), "{recv}");
    let connect_producer =
        line("curl -T myfile -H \"Authorization: Bearer $WRITE_TOKEN\" \"$(curl");
    let connect_consumer = line("curl -L -H \"Authorization: Bearer $READ_TOKEN\" ");
    let strip = |l: &str| l.split("   # ").next().unwrap().to_string();
    std::fs::write(dir.join("myfile"), "via connect\n").unwrap();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!(
        "set -e\n{write_token}\n{read_token}\n\
         {recv} > plain.out &\nsleep 0.2\n{send} > plain.log\nwait\n\
         {consumer} > connect.out &\n{producer} > connect.log\nwait\n\
         {mint} > mint.json\n{code_token}\necho \"$CODE_TOKEN\" > code.token\n",
        consumer = strip(&connect_consumer),
        producer = strip(&connect_producer),
    );
    let out = within(
        30.0,
        "the auth-mode /help recipes",
        tokio::process::Command::new("sh")
            .args(["-c", &script])
            .current_dir(&dir)
            .env("PATH", path)
            .output(),
    )
    .await
    .unwrap();
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read("plain.out"), "hello, world\n");
    assert!(
        read("plain.log").ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"),
        "{}",
        read("plain.log")
    );
    assert_eq!(read("connect.out"), "via connect\n");
    // the code token opens the code namespace (§6)
    let key = b"c2VjcmV0LWtleS1mb3ItdGhlLWhlbHAtdGVzdA==";
    let claims = httpipe::protocol::token::verify(&[key], &read("code.token"), 1).unwrap();
    assert_eq!(claims.mode, httpipe::protocol::token::Mode::Code);
    assert!(claims.grants(httpipe::protocol::token::Mode::Write, "/code/v1/7/a"));
    assert!(
        read("connect.log").ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"),
        "{}",
        read("connect.log")
    );
    assert!(
        read("mint.json").contains("\"token\":\"hp1."),
        "{}",
        read("mint.json")
    );
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Open mode: the Connect pair of /help transfers as printed (the producer's half puts the
/// data URL the Connect API answers into `curl -T`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_connect_recipe_transfers() {
    if !have_curl() {
        return missing_tool("help_connect_recipe_transfers", "curl is not installed");
    }
    let dir = temp_dir("help-connect");
    std::fs::write(dir.join("myfile"), "via connect\n").unwrap();
    let r = relay().await;
    let mut c = r.get(T::H1, "/help").await;
    let help = text(c.response().await).await;
    let find = |prefix: &str| -> String {
        let l = help
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in {help}"));
        l.split("   # ").next().unwrap().to_string()
    };
    let producer = find("curl -T myfile \"$(curl -sSf '");
    let consumer = find("curl -L '");
    let script = format!("set -e\n{producer} > log &\n{consumer}\nwait\ncat log\n");
    let out = within(
        30.0,
        "the Connect recipe",
        tokio::process::Command::new("sh")
            .args(["-c", &script])
            .current_dir(&dir)
            .output(),
    )
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("via connect\n"), "{stdout}");
    assert!(
        stdout.ends_with("[STATE:TRANSFER_SUCCESSFUL]\n"),
        "{stdout}"
    );
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts the binary with `args` (stdout and stderr piped) and returns it with its first
/// stdout line.
fn spawn_relay(args: &[&str]) -> (KillOnDrop, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"))
        .args(args)
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    (child, first)
}

/// A second relay on a port in use fails at once with one line naming the port and the flag
/// that changes it (not just "Address already in use (os error 98)"); both ports.
#[test]
fn port_in_use_names_the_port_and_the_flag() {
    let (_first, http) = spawn_relay(&[
        "--host",
        "127.0.0.1",
        "--http-port",
        "0",
        "--https-port",
        "0",
    ]);
    let port = http.rsplit(':').next().unwrap().to_string();
    for (flag, env, args) in [
        (
            "--http-port",
            "HTTPIPE_HTTP_PORT",
            vec!["--http-port", port.as_str(), "--no-tls"],
        ),
        (
            "--https-port",
            "HTTPIPE_HTTPS_PORT",
            vec!["--http-port", "0", "--https-port", port.as_str()],
        ),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_httpipe-relay"));
        cmd.args(["--host", "127.0.0.1"]).args(&args);
        let out = within_blocking(10, flag, cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {stderr}");
        let msg = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(
            msg.contains(&format!("port {port} is already in use")),
            "{msg}"
        );
        assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
        assert!(
            msg.contains(&format!("{flag} PORT")) && msg.contains(env),
            "{msg}"
        );
        assert!(msg.contains(&format!("npm start -- {flag} PORT")), "{msg}");
        assert!(
            out.stdout.is_empty(),
            "no listening line: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

fn within_blocking(secs: u64, what: &str, mut cmd: Command) -> std::process::Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what}: still running after {secs}s (it should have failed at once)")
        }
    }
}

/// Log lines written to a pipe (not a terminal) carry no ANSI colour codes, text format.
#[test]
fn logs_to_a_pipe_have_no_colours() {
    let (mut child, http) = spawn_relay(&["--host", "127.0.0.1", "--http-port", "0", "--no-tls"]);
    let port: u16 = http.rsplit(':').next().unwrap().parse().unwrap();
    // one transfer: its start and end lines come after "relay started"
    let consumer = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "GET /colours HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut body = String::new();
        let _ = std::io::Read::read_to_string(&mut s, &mut body);
        body
    });
    std::thread::sleep(Duration::from_millis(200));
    {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "POST /colours HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        )
        .unwrap();
        let mut log = String::new();
        let _ = std::io::Read::read_to_string(&mut s, &mut log);
        assert!(log.contains("[STATE:TRANSFER_SUCCESSFUL]"), "{log}");
    }
    assert!(consumer.join().unwrap().ends_with("hi"));
    child.sigterm_and_wait("SIGTERM");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("relay started"), "{stderr}");
    assert!(
        stderr.lines().count() >= 3,
        "a transfer's lines too: {stderr}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "ANSI escape codes in piped logs: {stderr:?}"
    );
}
