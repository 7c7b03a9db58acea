//! Interop with the real ZebraStream Python client (`zebrastream-io` 0.5.4, PROTOCOL.md §5):
//! its producer and consumer go through our Connect API and Data API unchanged.
//! Needs the project's virtualenv (`scripts/setup.sh full` creates `.venv`); fails without it
//! (skipped with a printed reason only with HTTPIPE_ALLOW_MISSING_TOOLS=1).

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use http_body_util::BodyExt;
use tokio::process::Command;

fn python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let py = root.join(".venv/bin/python");
    if !py.exists() {
        missing_tool(
            "zebrastream interop",
            &format!("{} is missing", py.display()),
        );
        return None;
    }
    let ok = std::process::Command::new(&py)
        .args(["-c", "import zebrastream.io"])
        .status();
    if !ok.is_ok_and(|s| s.success()) {
        missing_tool(
            "zebrastream interop",
            &format!("zebrastream-io is not installed in {}", py.display()),
        );
        return None;
    }
    Some(py)
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/zebrastream_interop.py")
}

fn run(py: &PathBuf, args: &[&str]) -> tokio::process::Child {
    Command::new(py)
        .arg(script())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn output(child: tokio::process::Child, what: &str) -> String {
    let out = within(120.0, what, child.wait_with_output()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().next().unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zebrastream_client_both_orders_10_mib() {
    let Some(py) = python() else { return };
    let r = relay().await;
    let api = format!("http://127.0.0.1:{}/connect/v0/", r.http.port());
    let size = (10 * 1024 * 1024).to_string();
    for producer_first in [true, false] {
        let path = format!("/zebra/{producer_first}");
        let (p, c) = if producer_first {
            let p = run(&py, &["produce", &api, &path, &size, "42"]);
            tokio::time::sleep(Duration::from_millis(300)).await;
            (p, run(&py, &["consume", &api, &path]))
        } else {
            let c = run(&py, &["consume", &api, &path]);
            tokio::time::sleep(Duration::from_millis(300)).await;
            (run(&py, &["produce", &api, &path, &size, "42"]), c)
        };
        let sent = output(p, "python producer").await;
        let got = output(c, "python consumer").await;
        assert!(
            sent.starts_with("sha256 ") && sent.ends_with(" 10485760"),
            "{sent}"
        );
        assert_eq!(
            sent, got,
            "checksums differ (producer_first={producer_first})"
        );
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zebrastream_producer_sees_peer_disconnect() {
    let Some(py) = python() else { return };
    let r = relay().await;
    let api = format!("http://127.0.0.1:{}/connect/v0/", r.http.port());
    // our consumer waits on the Data API (the Python producer's await-reader returns at once)
    let mut c = r.get(T::H1, "/zebra/gone").await;
    let p = run(&py, &["produce-until-error", &api, "/zebra/gone"]);
    let mut body = within(30.0, "consumer starts", c.response())
        .await
        .into_body();
    let mut n = 0;
    while n < 200_000 {
        n += body
            .frame()
            .await
            .unwrap()
            .unwrap()
            .into_data()
            .map(|d| d.len())
            .unwrap_or(0);
    }
    drop(body);
    c.cancel();
    let line = output(p, "python producer").await;
    assert!(
        line.starts_with("error") && line.contains("PeerDisconnectedError"),
        "{line}"
    );
    r.shutdown().await;
}
