//! Refusals and ends reach curl on HTTP/2 too (issue #10 fault 5; curl 7.88 reports an
//! `RST_STREAM(NO_ERROR)` right behind an answer as "(92) Stream error in the HTTP/2 framing
//! layer" and drops the answer). Real curl, real relay.

mod common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use httpipe::protocol::control::RECEIVER_PREMATURE_DISCONNECT;
use tokio::process::Command;

/// A file of `mb` MiB, removed when dropped.
struct BigFile(std::path::PathBuf);

impl BigFile {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for BigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn big_file(mb: usize) -> BigFile {
    let name = format!("httpipe-curl-{}", hex::encode(random_bytes(8)));
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, vec![b'x'; mb << 20]).unwrap();
    BigFile(path)
}

fn curl(t: T, r: &Relay, file: &std::path::Path, path: &str) -> Command {
    let mut c = Command::new("curl");
    c.args(["-sS", "-w", "\nstatus=%{http_code}\n", "-T"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .args(t.curl_flags());
    c.arg(format!("{}{path}", r.base(t)));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_refusals_reach_curl_with_their_status() {
    let r = relay().await;
    let file = big_file(64);
    for t in [T::H2c, T::H2, T::H1] {
        for (path, status, body) in [
            ("/refused?n=0", 400, "[ERROR] Invalid \"n\" query parameter"),
            (
                "/help",
                400,
                "[ERROR] Cannot send to the reserved path '/help'.",
            ),
            (
                "/seg?part=1&upload=nope",
                404,
                "[ERROR] Unknown or expired upload id.",
            ),
        ] {
            let out = within(10.0, "curl", curl(t, &r, file.path(), path).output())
                .await
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stdout.contains(body) && stdout.contains(&format!("status={status}")),
                "{t:?} {path}: stdout {stdout:?}, stderr {stderr:?}"
            );
            assert!(out.status.success(), "{t:?} {path}: {stderr}");
        }
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_producer_hears_the_consumer_leave_and_exits() {
    let r = relay().await;
    let file = big_file(256);
    for t in [T::H2c, T::H2] {
        let mut consumer = r.get(t, "/leave").await;
        let producer = curl(t, &r, file.path(), "/leave")
            .args(["--limit-rate", "20M"])
            .spawn()
            .unwrap();
        let resp = within(5.0, "consumer head", consumer.response()).await;
        let mut body = resp.into_body();
        within(5.0, "some bytes", body.frame()).await;
        drop(body);
        consumer.cancel();
        let left = Instant::now();
        let out = within(10.0, "curl exits", producer.wait_with_output())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(RECEIVER_PREMATURE_DISCONNECT),
            "{t:?}: {stdout:?} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            left.elapsed() < Duration::from_secs(3),
            "{t:?}: curl took {:?} to exit",
            left.elapsed()
        );
        // a failed transfer is a failure for curl too
        assert!(!out.status.success());
    }
    r.shutdown().await;
}
