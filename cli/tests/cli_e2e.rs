//! End-to-end tests of the `httpipe` CLI: real `httpipe` processes against a real
//! `httpipe-relay` (one per test, on a free port), asserting exit codes (PROTOCOL.md §11.4)
//! and bytes. Every child has a timeout, so a hang fails instead of blocking CI.
//!
//! Run: `cargo test -p httpipe-cli --test cli_e2e` (the relay binary is found or built by
//! `common::relay_bin`).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const MIB: usize = 1024 * 1024;

fn write_cmd(relay: &Relay, path: &str) -> Command {
    httpipe(["write", "-s", path, "-U", &relay.connect_url()])
}

fn read_cmd(relay: &Relay, path: &str) -> Command {
    httpipe(["read", "-s", path, "-U", &relay.connect_url()])
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// `sh SCRIPT` as the argv after `--`.
fn sh_args(script: &Path) -> [String; 3] {
    ["--".into(), "sh".into(), script.display().to_string()]
}

// ---------------------------------------------------------------------------------------
// 1. stdin → stdout, both arrival orders, plain and with HTTPIPE_PASSPHRASE

#[test]
fn stdin_to_stdout_both_orders_plain_and_passphrase() {
    let relay = Relay::start();
    let dir = tempdir();
    let input = dir.path().join("in");
    let data = pseudo_random(3 * MIB, 1);
    std::fs::write(&input, &data).expect("write input");

    struct Pair {
        name: String,
        out: std::path::PathBuf,
        first: Proc,
        second: Option<Proc>,
        producer_first: bool,
    }
    let mut pairs = Vec::new();
    for producer_first in [true, false] {
        for pass in [None, Some("correct horse battery staple")] {
            let name = format!(
                "{} first, {}",
                if producer_first {
                    "producer"
                } else {
                    "consumer"
                },
                if pass.is_some() {
                    "passphrase"
                } else {
                    "plain"
                }
            );
            let path = unique_path("order");
            let out = dir.path().join(format!("out-{}", pairs.len()));
            let mut w = write_cmd(&relay, &path);
            let mut r = read_cmd(&relay, &path);
            if let Some(p) = pass {
                w.env("HTTPIPE_PASSPHRASE", p);
                r.env("HTTPIPE_PASSPHRASE", p);
            }
            let (first, second) = if producer_first {
                (
                    Proc::spawn(
                        &format!("write ({name})"),
                        &mut w,
                        In::File(&input),
                        Out::Null,
                    ),
                    (r, "read"),
                )
            } else {
                (
                    Proc::spawn(&format!("read ({name})"), &mut r, In::Null, Out::File(&out)),
                    (w, "write"),
                )
            };
            pairs.push((
                Pair {
                    name,
                    out,
                    first,
                    second: None,
                    producer_first,
                },
                second,
            ));
        }
    }
    // The first side of each pair must be waiting for its peer, not done or failed.
    pause(500);
    let mut started = Vec::new();
    for (mut p, (mut cmd, what)) in pairs {
        assert!(
            p.first.is_running(),
            "{}: the first side exited before its peer came; stderr:\n{}",
            p.name,
            p.first.stderr_now()
        );
        let label = format!("{what} ({})", p.name);
        p.second = Some(if p.producer_first {
            Proc::spawn(&label, &mut cmd, In::Null, Out::File(&p.out))
        } else {
            Proc::spawn(&label, &mut cmd, In::File(&input), Out::Null)
        });
        started.push(p);
    }
    for mut p in started {
        p.first.wait(CHILD_TIMEOUT).code(0);
        p.second
            .as_mut()
            .expect("second")
            .wait(CHILD_TIMEOUT)
            .code(0);
        assert_same_bytes(&read(&p.out), &data, &p.name);
    }
}

// ---------------------------------------------------------------------------------------
// 2. `-- command` on both sides, 50 MiB

#[test]
fn commands_on_both_sides_50_mib() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let sent = d.join("sent");
    let sum = d.join("received.sha256");
    let producer = script(
        d,
        "producer.sh",
        &format!("head -c 52428800 /dev/urandom | tee {}", sh_quote(&sent)),
    );
    let consumer = script(d, "consumer.sh", &format!("sha256sum > {}", sh_quote(&sum)));
    let path = unique_path("cmds");
    let mut w = Proc::spawn(
        "write -- producer.sh",
        write_cmd(&relay, &path).args(sh_args(&producer)),
        In::Null,
        Out::Null,
    );
    let mut r = Proc::spawn(
        "read -- consumer.sh",
        read_cmd(&relay, &path).args(sh_args(&consumer)),
        In::Null,
        Out::Null,
    );
    w.wait(CHILD_TIMEOUT).code(0);
    r.wait(CHILD_TIMEOUT).code(0);
    assert_eq!(
        std::fs::metadata(&sent).expect("sent").len(),
        52_428_800,
        "the producer command's output"
    );
    assert_eq!(
        first_word(&String::from_utf8_lossy(&read(&sum))),
        sha256_file(&sent),
        "sha256 of what the consumer command got vs what the producer command printed"
    );
}

/// A relay frozen for 20 s mid-transfer (SIGSTOP, then SIGCONT: a VM paused, a process
/// stopped) thaws with a queue of both sides' stall and resume calls, most of them given up
/// by their clients; meetings paired from those must not end the transfer. Regression (a new
/// user's trial, B2): the reader failed "the resumed stream does not start at byte N", the
/// writer "Another sender has been connected" (exit 1 both); now both resume, exact
/// (PROTOCOL.md §12.3).
#[cfg(unix)]
#[test]
fn a_relay_frozen_mid_transfer_resumes_both_sides_exactly() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let (sent, received) = (d.join("sent"), d.join("received"));
    // 64 MiB at ~16 MiB/s: the freeze comes about half-way
    let producer = script(
        d,
        "producer.sh",
        &format!(
            "for i in $(seq 64); do head -c 1048576 /dev/urandom; sleep 0.05; done | tee {}",
            sh_quote(&sent)
        ),
    );
    let path = unique_path("frozen-relay");
    let pass = ("HTTPIPE_PASSPHRASE", "frozen relay test passphrase");
    let mut w = Proc::spawn(
        "write -- producer.sh",
        write_cmd(&relay, &path)
            .args(sh_args(&producer))
            .env(pass.0, pass.1),
        In::Null,
        Out::Null,
    );
    let mut r = Proc::spawn(
        "read > received",
        read_cmd(&relay, &path).env(pass.0, pass.1),
        In::Null,
        Out::File(&received),
    );
    // mid-transfer: once the reader has written 8 MiB
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&received).map_or(0, |m| m.len()) < 8 << 20 {
        assert!(Instant::now() < deadline, "the transfer did not start");
        pause(20);
    }
    relay.signal(libc::SIGSTOP);
    pause(20_000);
    relay.signal(libc::SIGCONT);
    let wd = w.wait(CHILD_TIMEOUT);
    let rd = r.wait(CHILD_TIMEOUT);
    for done in [&wd, &rd] {
        assert_eq!(
            done.code,
            Some(0),
            "{}: {}\nrelay log:\n{}",
            done.name,
            done.stderr,
            relay.log()
        );
    }
    assert_eq!(std::fs::metadata(&sent).expect("sent").len(), 64 << 20);
    assert_eq!(
        sha256_file(&received),
        sha256_file(&sent),
        "what the reader wrote"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Producer command fails → producer 6, consumer 5 (never a clean end)

#[test]
fn producer_command_failure_is_6_and_consumer_sees_truncation() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let fail_after_1mib = script(d, "producer.sh", "head -c 1048576 /dev/urandom\nexit 1");
    let marker = d.join("marker");
    let consumer = script(
        d,
        "consumer.sh",
        &format!(
            "cat > {}\necho done > {}",
            sh_quote(d.join("consumer-out")),
            sh_quote(&marker)
        ),
    );

    // A: 1 MiB, then exit 1; the consumer runs a command (which must not see a clean EOF).
    let pa = unique_path("pfail-a");
    let mut wa = Proc::spawn(
        "write -- producer.sh (A)",
        write_cmd(&relay, &pa).args(sh_args(&fail_after_1mib)),
        In::Null,
        Out::Null,
    );
    let mut ra = Proc::spawn(
        "read -- consumer.sh (A)",
        read_cmd(&relay, &pa).args(sh_args(&consumer)),
        In::Null,
        Out::Null,
    );
    // B: the same with the consumer writing to stdout.
    let pb = unique_path("pfail-b");
    let out_b = d.join("out-b");
    let mut wb = Proc::spawn(
        "write -- producer.sh (B)",
        write_cmd(&relay, &pb).args(sh_args(&fail_after_1mib)),
        In::Null,
        Out::Null,
    );
    let mut rb = Proc::spawn(
        "read (B)",
        &mut read_cmd(&relay, &pb),
        In::Null,
        Out::File(&out_b),
    );
    for w in [&mut wa, &mut wb] {
        w.wait(CHILD_TIMEOUT)
            .clean_error(6, &["producer command", "exited with status 1"]);
    }
    for r in [&mut ra, &mut rb] {
        r.wait(CHILD_TIMEOUT).clean_error(5, &["producer"]);
    }
    // The consumer command was stopped before it could see a clean end of its input.
    pause(500);
    assert!(
        !marker.exists(),
        "the consumer command saw a clean EOF of a cut-short stream"
    );
    assert!(
        std::fs::metadata(&out_b).map(|m| m.len()).unwrap_or(0) <= MIB as u64,
        "(B) got more than the producer sent"
    );
}

/// A producer command that fails before printing anything, right after the rendezvous: the
/// consumer must see the stream cut (exit 5), not wait forever. Four pairs at once (the
/// race shows up more often under load).
///
/// Known open bug (issue #8 closing note): `Writer::abort` now makes the upload request and
/// fails its body, which fixed most runs, but when the abort is queued before hyper polls the
/// body for the first time hyper can fail the request before its head is written, and the
/// relay never sees the producer (seen once in a fresh-clone CI run under load). Run it with
/// `cargo test -p httpipe-cli --test cli_e2e -- --ignored`.
#[test]
#[ignore = "known race: an abort queued before the upload's head is written (see the doc comment)"]
fn producer_command_failing_before_any_output_still_cuts_the_stream() {
    let relay = Relay::start();
    let dir = tempdir();
    let fail_at_once = script(dir.path(), "producer0.sh", "exit 1");
    let mut c_pairs = Vec::new();
    for i in 0..4 {
        let pc = unique_path("pfail-c");
        let w = Proc::spawn(
            &format!("write -- sh -c 'exit 1' (C{i})"),
            write_cmd(&relay, &pc).args(sh_args(&fail_at_once)),
            In::Null,
            Out::Null,
        );
        let r = Proc::spawn(
            &format!("read (C{i})"),
            &mut read_cmd(&relay, &pc),
            In::Null,
            Out::Capture,
        );
        c_pairs.push((pc, w, r));
    }

    for (pc, mut w, mut r) in c_pairs {
        w.wait(CHILD_TIMEOUT)
            .clean_error(6, &["producer command", "exited with status 1"]);
        let t = Instant::now();
        while r.is_running() && t.elapsed() < Duration::from_secs(15) {
            pause(50);
        }
        if r.is_running() {
            let seen: Vec<String> = relay
                .log()
                .lines()
                .filter(|l| l.contains(pc.as_str()))
                .map(str::to_string)
                .collect();
            panic!(
                "{}: still waiting 15 s after the producer exited 6: the producer aborted after \
                 the rendezvous, before its upload reached the relay, so the consumer waits for a \
                 producer forever instead of seeing a cut stream. Relay log lines for {pc}: {seen:#?}",
                r.name
            );
        }
        let rd = r.wait(CHILD_TIMEOUT);
        rd.clean_error(5, &["producer"]);
        assert!(rd.stdout.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// 4. Consumer command fails → consumer 7, producer 5

#[test]
fn consumer_command_failure_is_7_and_producer_sees_disconnect() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let consumer = script(d, "consumer.sh", "head -c 100000 > /dev/null\nexit 1");
    let big = d.join("big");
    std::fs::write(&big, pseudo_random(32 * MIB, 4)).expect("write");

    // A: an endless producer command (`yes`), which must be stopped; B: stdin, 32 MiB.
    let (pa, pb) = (unique_path("cfail-a"), unique_path("cfail-b"));
    let mut wa = Proc::spawn(
        "write -- yes (A)",
        write_cmd(&relay, &pa).args(["--", "yes"]),
        In::Null,
        Out::Null,
    );
    let mut wb = Proc::spawn(
        "write < big (B)",
        &mut write_cmd(&relay, &pb),
        In::File(&big),
        Out::Null,
    );
    let mut ra = Proc::spawn(
        "read -- consumer.sh (A)",
        read_cmd(&relay, &pa).args(sh_args(&consumer)),
        In::Null,
        Out::Null,
    );
    let mut rb = Proc::spawn(
        "read -- consumer.sh (B)",
        read_cmd(&relay, &pb).args(sh_args(&consumer)),
        In::Null,
        Out::Null,
    );
    for r in [&mut ra, &mut rb] {
        r.wait(CHILD_TIMEOUT)
            .clean_error(7, &["consumer command", "exited with status 1"]);
    }
    for w in [&mut wa, &mut wb] {
        w.wait(CHILD_TIMEOUT).clean_error(5, &["consumer"]);
    }
}

// ---------------------------------------------------------------------------------------
// 5. --serve: a fresh export per pull; SIGTERM stops it promptly

#[cfg(unix)]
#[test]
fn serve_answers_three_pulls_with_fresh_exports_then_stops_on_sigterm() {
    let relay = Relay::start();
    let path = unique_path("serve");
    let mut server = Proc::spawn(
        "write --serve",
        write_cmd(&relay, &path).args(["--serve", "--", "sh", "-c", "date +%s%N; echo export"]),
        In::Null,
        Out::Null,
    );
    let mut stamps = Vec::new();
    for i in 0..3 {
        let d = run(
            &format!("read (pull {i})"),
            &mut read_cmd(&relay, &path),
            Duration::from_secs(30),
        );
        d.code(0);
        let text = d.stdout_str();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "pull {i}: {text:?}");
        assert_eq!(lines[1], "export", "pull {i}: {text:?}");
        assert!(
            lines[0].len() >= 19 && lines[0].bytes().all(|b| b.is_ascii_digit()),
            "pull {i}: {text:?}"
        );
        stamps.push(lines[0].to_string());
        assert!(
            server.is_running(),
            "the server exited after pull {i}; stderr:\n{}",
            server.stderr_now()
        );
    }
    let mut unique = stamps.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        3,
        "each pull ran the command again: {stamps:?}"
    );
    assert!(
        stamps.windows(2).all(|w| w[0] < w[1]),
        "in order: {stamps:?}"
    );

    pause(300); // the server is waiting for the next consumer
    let t = Instant::now();
    server.signal(libc::SIGTERM);
    let done = server.wait(Duration::from_secs(5));
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    done.code(0);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
}

/// `write -d 0 -- COMMAND` whose command gives `bytes` zero bytes, then nothing for 30 s.
#[cfg(unix)]
fn quiet_writer(relay: &Relay, path: &str, bytes: usize) -> Proc {
    let command = format!("head -c {bytes} /dev/zero; exec sleep 30");
    Proc::spawn(
        &format!("write -d 0 -- {bytes} bytes, then nothing"),
        write_cmd(relay, path).args(["-d", "0", "--", "sh", "-c", &command]),
        In::Null,
        Out::Null,
    )
}

/// Interrupted mid-stream, `read -- COMMAND` stops its command before the command's stdin
/// ends (as a cut stream does): a command that ignores SIGTERM and commits at a clean end of
/// input commits nothing. It used to close the command's stdin at once: a clean end.
#[cfg(unix)]
#[test]
fn an_interrupted_read_never_gives_its_command_a_clean_end() {
    let relay = Relay::start();
    let dir = tempdir();
    let marker = dir.path().join("committed");
    let path = unique_path("int-cmd");
    let w = quiet_writer(&relay, &path, 100000);
    let commit = format!(
        "trap '' TERM; n=$(wc -c); echo \"$n\" > '{}'",
        marker.display()
    );
    let mut r = Proc::spawn(
        "read -- (ignores SIGTERM, commits at the end of its input)",
        read_cmd(&relay, &path).args(["-l", "info", "--", "sh", "-c", &commit]),
        In::Null,
        Out::Null,
    );
    r.wait_for_stderr("producer connected", Duration::from_secs(20));
    pause(500);
    let t = Instant::now();
    r.signal(libc::SIGINT);
    let rd = r.wait(Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    rd.code(1);
    assert!(
        rd.stderr
            .contains("interrupted by SIGINT; the stream was aborted"),
        "{}",
        rd.stderr
    );
    // (its producer learns it when its resume time ends: see the next test)
    w.signal(libc::SIGKILL);
    pause(500);
    assert!(
        !marker.exists(),
        "the command committed {:?} bytes of a cut stream",
        std::fs::read_to_string(&marker)
    );
}

/// An interrupted sender's failure notice lingers on the channel (PROTOCOL.md §5.1): its
/// receiver, slower than the sender (its command reads only after 6 s), meets the cut after
/// the sender's process is gone and learns why at once. Regression: the notice left with the
/// process; the receiver saw only a break and waited out its 60-s resume time.
#[cfg(unix)]
#[test]
fn an_interrupted_senders_notice_reaches_a_slower_receiver() {
    let relay = Relay::start();
    let path = unique_path("int-slow");
    let mut w = quiet_writer(&relay, &path, 20_000_000);
    let slow = "sleep 6; exec cat > /dev/null";
    let mut r = Proc::spawn(
        "read -- (reads after 6 s)",
        read_cmd(&relay, &path).args(["-l", "info", "--", "sh", "-c", slow]),
        In::Null,
        Out::Null,
    );
    r.wait_for_stderr("producer connected", Duration::from_secs(20));
    pause(1000);
    let t = Instant::now();
    w.signal(libc::SIGINT);
    w.wait(Duration::from_secs(10))
        .clean_error(1, &["interrupted by SIGINT", "the stream was aborted"]);
    let rd = r.wait(Duration::from_secs(60));
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t.elapsed()
    );
    rd.clean_error(5, &["the sender failed with ABORTED"]);
}

/// A producer command that goes quiet (`tail -f` of a quiet log) learns that its transfer
/// failed when it fails — here, its consumer killed and not back within `--resume 2` — not at
/// its next output. Regression: it waited for that output (30 s here).
#[cfg(unix)]
#[test]
fn a_quiet_producer_command_learns_that_its_consumer_left() {
    let relay = Relay::start();
    let path = unique_path("quiet-left");
    let command = "head -c 100000 /dev/zero; exec sleep 30";
    let mut w = Proc::spawn(
        "write --resume 2 -- 100000 bytes, then nothing",
        write_cmd(&relay, &path).args(["-d", "0", "--resume", "2", "--", "sh", "-c", command]),
        In::Null,
        Out::Null,
    );
    let r = Proc::spawn("read", &mut read_cmd(&relay, &path), In::Null, Out::Capture);
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.stdout_now().len() < 100000 {
        assert!(
            Instant::now() < deadline,
            "{} bytes read",
            r.stdout_now().len()
        );
        pause(50);
    }
    let t = Instant::now();
    r.signal(libc::SIGKILL);
    let wd = w.wait(Duration::from_secs(25));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    wd.clean_error(5, &["consumer"]);
}

/// The same for a writer whose stdin goes quiet (`tail -f app.log | httpipe write`): it
/// learns that its transfer failed when it fails, not at its next input. Regression (a new
/// user's trial): it waited for that input, however long; its consumer killed and not back
/// within `--resume 2`, and one that cancelled (SIGTERM, which tells the producer), alike.
#[cfg(unix)]
#[test]
fn a_quiet_stdin_writer_learns_that_its_consumer_left() {
    let relay = Relay::start();
    for (signal, says) in [(libc::SIGKILL, "consumer"), (libc::SIGTERM, "cancelled")] {
        let path = unique_path("quiet-stdin");
        let mut w = Proc::spawn(
            "write -u --resume 2 < a pipe that goes quiet",
            write_cmd(&relay, &path).args(["-u", "-d", "0", "--resume", "2"]),
            In::Pipe,
            Out::Null,
        );
        w.feed(b"line 1\n");
        let r = Proc::spawn("read", &mut read_cmd(&relay, &path), In::Null, Out::Capture);
        let deadline = Instant::now() + Duration::from_secs(20);
        while r.stdout_now().len() < 7 {
            assert!(Instant::now() < deadline, "{:?} read", r.stdout_now());
            pause(50);
        }
        let t = Instant::now();
        r.signal(signal);
        let wd = w.wait(Duration::from_secs(25));
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{signal}: took {:?}",
            t.elapsed()
        );
        wd.clean_error(5, &[says]);
    }
}

/// `read | head`: a reader whose stdout closed before the stream's end exited 0, which
/// says the transfer completed (a new user's trial found it); now exit 1 and one line, and
/// its sender hears that the receiver left.
#[cfg(unix)]
#[test]
fn a_reader_whose_stdout_closes_early_does_not_report_success() {
    let relay = Relay::start();
    let path = unique_path("stdout-closed");
    let mut w = Proc::spawn(
        "write -- 20 MB",
        write_cmd(&relay, &path).args([
            "--resume",
            "2",
            "--",
            "head",
            "-c",
            "20000000",
            "/dev/zero",
        ]),
        In::Null,
        Out::Null,
    );
    let url = relay.connect_url();
    let read = ["read", "-s", &path, "-U", &url, "--resume", "2"];
    let rd = run(
        "read | head -c 10",
        Command::new("bash")
            .args([
                "-c",
                "set -o pipefail; \"$0\" \"$@\" | head -c 10 > /dev/null",
            ])
            .arg(httpipe_bin())
            .args(read),
        CHILD_TIMEOUT,
    );
    rd.clean_error(1, &["stdout was closed", "read -- head"]);
    w.wait(CHILD_TIMEOUT).clean_error(5, &["receiver"]);
}

/// A terminal's Ctrl-C reaches the consumer command too, which may die of it before this
/// process reacts: the interrupt is what is reported, not "fix the command" (exit 7).
#[cfg(unix)]
#[test]
fn a_group_interrupt_after_the_confirmation_is_reported_as_one() {
    use std::os::unix::process::CommandExt;
    let relay = Relay::start();
    let path = unique_path("int-group");
    let mut w = Proc::spawn(
        "write -- echo",
        write_cmd(&relay, &path).args(["--", "echo", "hello"]),
        In::Null,
        Out::Null,
    );
    let mut r = Proc::spawn(
        "read -- cat; sleep (own process group)",
        read_cmd(&relay, &path)
            .args(["--", "sh", "-c", "cat >/dev/null; sleep 5"])
            .process_group(0),
        In::Null,
        Out::Null,
    );
    w.wait(Duration::from_secs(20)).code(0);
    pause(300);
    let group = r.pid() as libc::pid_t;
    // SAFETY: kill(2) on the process group of our own unreaped child.
    unsafe {
        libc::kill(-group, libc::SIGINT);
    }
    let rd = r.wait(Duration::from_secs(10));
    rd.code(1);
    assert!(
        rd.stderr
            .contains("interrupted by SIGINT after the whole stream was received and confirmed"),
        "{}",
        rd.stderr
    );
}

/// SIGHUP (a terminal closed, an ssh session dropped) stops a transfer as SIGTERM does: the
/// partial file is removed. It used to leave FILE.httpipe-part (the next receive refused).
#[cfg(unix)]
#[test]
fn a_hangup_stops_receive_and_leaves_no_partial_file() {
    let relay = Relay::start();
    let dir = tempdir();
    let out = dir.path().join("out.bin");
    let part = dir.path().join("out.bin.httpipe-part");
    let path = unique_path("int-hup");
    let w = quiet_writer(&relay, &path, 1048576);
    let mut r = Proc::spawn(
        "receive -o out.bin",
        httpipe(["receive", "-s", &path, "-U", &relay.connect_url(), "-o"]).arg(&out),
        In::Null,
        Out::Null,
    );
    let t = Instant::now();
    while std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0) < (MIB / 2) as u64 {
        assert!(t.elapsed() < Duration::from_secs(20), "{}", r.stderr_now());
        pause(20);
    }
    r.signal(libc::SIGHUP);
    let rd = r.wait(Duration::from_secs(10));
    rd.code(1);
    assert!(
        rd.stderr
            .contains("interrupted by SIGHUP; the stream was aborted"),
        "{}",
        rd.stderr
    );
    assert!(!part.exists() && !out.exists(), "a partial file was left");
    w.signal(libc::SIGKILL);
}

/// `--serve` stopped while it waits for its next peer exits 0 (above); stopped mid-transfer,
/// it says what it stopped, as without `--serve`, and its consumer is told at once.
#[cfg(unix)]
#[test]
fn serve_stopped_mid_transfer_says_the_stream_was_aborted() {
    let relay = Relay::start();
    let path = unique_path("serve-cut");
    let mut server = Proc::spawn(
        "write --serve -d 0",
        write_cmd(&relay, &path).args([
            "--serve",
            "-d",
            "0",
            "--",
            "sh",
            "-c",
            "echo first; exec sleep 30",
        ]),
        In::Null,
        Out::Null,
    );
    let mut reader = Proc::spawn("read", &mut read_cmd(&relay, &path), In::Null, Out::Capture);
    let t = Instant::now();
    while reader.stdout_now() != b"first\n" {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no first line; {}",
            reader.stderr_now()
        );
        pause(20);
    }
    let t = Instant::now();
    server.signal(libc::SIGTERM);
    let done = server.wait(Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    done.clean_error(1, &["interrupted by SIGTERM", "the stream was aborted"]);
    let read = reader.wait(Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "the reader was told after {:?}",
        t.elapsed()
    );
    assert_ne!(read.code, Some(0), "{}", read.stderr);
}

// ---------------------------------------------------------------------------------------
// 6. Config files: -f, -n, CLI > env > file

#[test]
fn config_files_and_precedence() {
    let relay = Relay::start_auth();
    let dir = tempdir();
    let d = dir.path();
    let base = unique_path("cfg");
    let wt = relay.token(&base, "write", true);
    let rt = relay.token(&base, "read", true);
    let p = |s: &str| format!("{base}/{s}");
    let url = relay.connect_url();

    let supplier = format!(
        "mode: write\nstream_path: {}\nconnect_url: {url}\naccess_token: {wt}\n\
         passphrase: config pass phrase\nconnect_timeout: 20\n\
         command: \"sh -c 'printf from-supplier-config'\"\n",
        p("a")
    );
    let supplier_file = d.join("supplier.yaml");
    std::fs::write(&supplier_file, &supplier).expect("write");
    // The same file as a named config (-n supplier) under HTTPIPE_CONFIG_DIR.
    let conf_dir = d.join("conf");
    std::fs::create_dir_all(conf_dir.join("streams")).expect("mkdir");
    std::fs::write(conf_dir.join("streams/supplier.yaml"), &supplier).expect("write");

    let buyer = |stream: &str, out: &str| -> std::path::PathBuf {
        let sc = script(
            d,
            &format!("{out}.sh"),
            &format!("cat > {}", sh_quote(d.join(out))),
        );
        let f = d.join(format!("buyer-{out}.yaml"));
        std::fs::write(
            &f,
            format!(
                "mode: read\nstream_path: {stream}\nconnect_url: {url}\naccess_token: {rt}\n\
                 passphrase: config pass phrase\nconnect_timeout: 20\ncommand: sh {}\n",
                sc.display()
            ),
        )
        .expect("write");
        f
    };
    let buyer_a = buyer(&p("a"), "out-a");
    let buyer_b = buyer(&p("b"), "out-b");
    let buyer_c = buyer(&p("file-path-not-used"), "out-c");
    let f = |path: &Path| path.display().to_string();

    // A: everything from the files.
    let mut wa = Proc::spawn(
        "write -f supplier.yaml (A)",
        &mut httpipe(["write", "-f", &f(&supplier_file)]),
        In::Null,
        Out::Null,
    );
    // B: CLI -s and -- command win over the file (the buyer's file names P/b: if the writer
    // used the file's P/a instead, both sides would time out).
    let mut wb = Proc::spawn(
        "write -f supplier.yaml -s P/b -- printf from-cli (B)",
        &mut httpipe([
            "write",
            "-f",
            &f(&supplier_file),
            "-s",
            &p("b"),
            "--",
            "printf",
            "from-cli",
        ]),
        In::Null,
        Out::Null,
    );
    // C: env HTTPIPE_STREAM_PATH beats the (named) file and loses to the CLI.
    let mut wc_cmd = httpipe(["-n", "supplier", "write"]);
    wc_cmd
        .env("HTTPIPE_CONFIG_DIR", &conf_dir)
        .env("HTTPIPE_STREAM_PATH", p("c"));
    let mut wc = Proc::spawn(
        "write -n supplier, env path (C)",
        &mut wc_cmd,
        In::Null,
        Out::Null,
    );
    let mut rc_cmd = httpipe(["read", "-f", &f(&buyer_c), "-s", &p("c")]);
    rc_cmd.env("HTTPIPE_STREAM_PATH", p("env-path-not-used"));

    let mut ra = Proc::spawn(
        "read -f buyer.yaml (A)",
        &mut httpipe(["read", "-f", &f(&buyer_a)]),
        In::Null,
        Out::Null,
    );
    let mut rb = Proc::spawn(
        "read -f buyer-b.yaml (B)",
        &mut httpipe(["read", "-f", &f(&buyer_b)]),
        In::Null,
        Out::Null,
    );
    let mut rc = Proc::spawn(
        "read -f buyer.yaml -s P/c, env path (C)",
        &mut rc_cmd,
        In::Null,
        Out::Null,
    );
    // D: the file's token and passphrase really are used: the raw stream (curl with a read
    // token) is ciphertext.
    let mut wd = Proc::spawn(
        "write -f supplier.yaml -s P/d (D)",
        &mut httpipe(["write", "-f", &f(&supplier_file), "-s", &p("d")]),
        In::Null,
        Out::Null,
    );
    let mut curl_cmd = Command::new("curl");
    curl_cmd
        .args(["-sS", "--fail", "-H"])
        .arg(format!("Authorization: Bearer {rt}"))
        .arg(format!("{}{}", relay.base(), p("d")));
    let mut curl = Proc::spawn("curl (D)", &mut curl_cmd, In::Null, Out::Capture);

    for (w, r, out, want) in [
        (&mut wa, &mut ra, "out-a", &b"from-supplier-config"[..]),
        (&mut wb, &mut rb, "out-b", &b"from-cli"[..]),
        (&mut wc, &mut rc, "out-c", &b"from-supplier-config"[..]),
    ] {
        w.wait(CHILD_TIMEOUT).code(0);
        r.wait(CHILD_TIMEOUT).code(0);
        assert_same_bytes(&read(&d.join(out)), want, out);
    }
    wd.wait(CHILD_TIMEOUT).code(0);
    let raw = curl.wait(CHILD_TIMEOUT);
    raw.code(0);
    assert!(
        raw.stdout.len() > "from-supplier-config".len()
            && !String::from_utf8_lossy(&raw.stdout).contains("from-supplier-config"),
        "the relay saw plaintext: {:?}",
        raw.stdout_str()
    );
}

/// docs/cli.md's recipe with the files in `examples/cli/` (connect URL and path overridden
/// on the command line, which wins over the files).
#[test]
fn readme_supplier_and_buyer_examples() {
    let relay = Relay::start();
    let ex = workspace_root().join("examples/cli");
    let dir = tempdir();
    let path = unique_path("inventory");
    let url = relay.connect_url();
    let f = |n: &str| ex.join(n).display().to_string();
    let mut w = Proc::spawn(
        "write -f examples/cli/supplier.yaml -- export_inventory.sh",
        &mut httpipe([
            "write",
            "-f",
            &f("supplier.yaml"),
            "-U",
            &url,
            "-s",
            &path,
            "--",
            "sh",
            &f("export_inventory.sh"),
        ]),
        In::Null,
        Out::Null,
    );
    let mut rcmd = httpipe([
        "read",
        "-f",
        &f("buyer.yaml"),
        "-U",
        &url,
        "-s",
        &path,
        "--",
        "sh",
        &f("import_inventory.sh"),
    ]);
    rcmd.current_dir(dir.path());
    let mut r = Proc::spawn(
        "read -f examples/cli/buyer.yaml -- import_inventory.sh",
        &mut rcmd,
        In::Null,
        Out::Null,
    );
    w.wait(CHILD_TIMEOUT).code(0);
    let rd = r.wait(CHILD_TIMEOUT);
    rd.code(0);
    assert!(rd.stderr.contains("imported 1000 rows"), "{}", rd.stderr);
    let csv = String::from_utf8_lossy(&read(&dir.path().join("inventory.csv"))).into_owned();
    assert_eq!(csv.lines().count(), 1001, "{csv:.200}");
    assert!(
        csv.starts_with("sku,warehouse,quantity,updated\nSKU-1,ams-1,7,"),
        "{csv:.200}"
    );
}

// ---------------------------------------------------------------------------------------
// Live streams (-u, -d) and `receive -o`

/// `-d 0` / `-d 1` (with `-u` for stdin): a line reaches the consumer while the producer is
/// still running, plain and age-rt. The producer prints its second line only once the test
/// saw the first one at the consumer (it waits for a "go" file), so no timing is assumed.
#[test]
fn live_lines_arrive_before_the_producer_ends() {
    let relay = Relay::start();
    let dir = tempdir();
    let url = relay.connect_url();
    let bin = sh_quote(httpipe_bin());
    let mut cases = Vec::new();
    for (name, pass, stdin_pipe, d) in [
        ("-d 0, command", None, false, "0"),
        ("-d 1, command", None, false, "1"),
        ("-u -d 0, stdin, age-rt", Some("live pass"), true, "0"),
        ("-u -d 1, stdin", None, true, "1"),
    ] {
        let path = unique_path("live");
        let go = dir.path().join(format!("go-{}", cases.len()));
        let body = format!(
            "echo first; while [ ! -e {} ]; do sleep 0.05; done; echo second",
            sh_quote(&go)
        );
        let mut w = if stdin_pipe {
            let mut c = Command::new("sh");
            clean_env(&mut c);
            c.arg("-c").arg(format!(
                "({body}) | {bin} write -u -d {d} -s {} -U {}",
                sh_quote(&path),
                sh_quote(&url)
            ));
            c
        } else {
            let mut c = write_cmd(&relay, &path);
            c.args(["-d", d, "--", "sh", "-c", &body]);
            c
        };
        let mut r = read_cmd(&relay, &path);
        r.arg("-u");
        if let Some(p) = pass {
            w.env("HTTPIPE_PASSPHRASE", p);
            r.env("HTTPIPE_PASSPHRASE", p);
        }
        let w = Proc::spawn(&format!("write ({name})"), &mut w, In::Null, Out::Null);
        let r = Proc::spawn(&format!("read -u ({name})"), &mut r, In::Null, Out::Capture);
        cases.push((name, w, r, go));
    }
    let t = Instant::now();
    let mut pending: Vec<usize> = (0..cases.len()).collect();
    while !pending.is_empty() {
        pending.retain(|&i| {
            let (name, w, r, go) = &mut cases[i];
            let out = r.stdout_now();
            if out != b"first\n" {
                assert!(
                    out.is_empty()
                        && t.elapsed() < Duration::from_secs(30)
                        && r.is_running()
                        && w.is_running(),
                    "{name}: no first line alone; reader stdout {:?}, reader stderr {:?}, \
                     writer stderr {:?}",
                    String::from_utf8_lossy(&out),
                    r.stderr_now(),
                    w.stderr_now()
                );
                return true;
            }
            std::fs::write(go, b"").expect("go file");
            false
        });
        pause(20);
    }
    for (name, mut w, mut r, _) in cases {
        w.wait(CHILD_TIMEOUT).code(0);
        let rd = r.wait(CHILD_TIMEOUT);
        rd.code(0);
        assert_eq!(rd.stdout_str(), "first\nsecond\n", "{name}");
    }
}

/// `receive -o FILE`: the file appears only after a complete transfer; a cut one leaves
/// neither FILE nor FILE.httpipe-part; an existing FILE is never overwritten, and a part file
/// a killed receive left is refused before the rendezvous.
#[cfg(unix)]
#[test]
fn receive_saves_only_complete_transfers() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let url = relay.connect_url();

    // Complete.
    let input = d.join("in");
    let data = pseudo_random(2 * MIB, 11);
    std::fs::write(&input, &data).expect("write");
    let path = unique_path("recv-ok");
    let out = d.join("complete.bin");
    let mut w = Proc::spawn(
        "write < in",
        &mut write_cmd(&relay, &path),
        In::File(&input),
        Out::Null,
    );
    let rd = run(
        "receive -o complete.bin",
        httpipe(["receive", "-s", &path, "-U", &url, "-o"]).arg(&out),
        CHILD_TIMEOUT,
    );
    rd.code(0);
    w.wait(CHILD_TIMEOUT).code(0);
    assert_same_bytes(&read(&out), &data, "receive -o");

    // Existing file: refused before anything is received.
    run(
        "receive -o existing",
        httpipe(["receive", "-s", &path, "-U", &url, "-t", "2", "-o"]).arg(&out),
        Duration::from_secs(20),
    )
    .clean_error(1, &["already exists"]);
    assert_same_bytes(&read(&out), &data, "the existing file");

    // A part file that a killed receive left: refused before the rendezvous (it was refused
    // only after the sender had been met, failing it too), and left as it is.
    let left = d.join("left.bin");
    let left_part = d.join("left.bin.httpipe-part");
    std::fs::write(&left_part, b"half").expect("write the part file");
    let t = Instant::now();
    run(
        "receive -o left.bin",
        httpipe(["receive", "-s", &path, "-U", &url, "-t", "5", "-o"]).arg(&left),
        Duration::from_secs(20),
    )
    .clean_error(1, &["left from an earlier receive", "delete it"]);
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "it waited for a sender"
    );
    assert_eq!(read(&left_part), b"half", "the part file");

    // Cut: the producer is killed mid-stream.
    let path = unique_path("recv-cut");
    let cut = d.join("cut.bin");
    let part = d.join("cut.bin.httpipe-part");
    let mut w = Proc::spawn(
        "write -- 1 MiB then sleep",
        write_cmd(&relay, &path).args(["--", "sh", "-c", "head -c 1048576 /dev/urandom; sleep 10"]),
        In::Null,
        Out::Null,
    );
    // (a receiver waits for its sender to resume for `--resume` seconds: 3, not the 60 of
    // the default, the verdict is the same)
    let mut r = Proc::spawn(
        "receive -o cut.bin",
        httpipe(["receive", "-s", &path, "-U", &url, "--resume", "3", "-o"]).arg(&cut),
        In::Null,
        Out::Null,
    );
    let t = Instant::now();
    // (the receiver buffers up to 64 KiB, so wait for half of what was sent)
    while std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0) < (MIB / 2) as u64 {
        assert!(
            t.elapsed() < Duration::from_secs(20) && r.is_running(),
            "no 512 KiB in {}; stderr {}",
            part.display(),
            r.stderr_now()
        );
        pause(20);
    }
    assert!(!cut.exists(), "the file appeared before the end");
    w.signal(libc::SIGKILL);
    w.wait(CHILD_TIMEOUT);
    r.wait(CHILD_TIMEOUT).clean_error(5, &["incomplete"]);
    assert!(!cut.exists(), "a cut transfer was saved");
    assert!(!part.exists(), "the partial file was left behind");
}

// ---------------------------------------------------------------------------------------
// 7 + 8. Every exit code, and clean one-line errors for bad input

#[test]
fn exit_0_help_version_and_no_subcommand() {
    for args in [&["--help"][..], &["--version"], &[], &["write", "--help"]] {
        let d = run(
            &format!("httpipe {args:?}"),
            &mut httpipe(args),
            Duration::from_secs(10),
        );
        d.code(0);
        assert!(!d.stdout.is_empty(), "{args:?} printed nothing");
    }
}

#[test]
fn exit_1_relay_down() {
    let port = dead_port();
    let url = format!("http://127.0.0.1:{port}/connect/v0/");
    let where_ = format!("127.0.0.1:{port}");
    for mode in ["write", "read"] {
        run(
            &format!("{mode} against a closed port"),
            &mut httpipe([mode, "-s", "/down", "-U", &url]),
            Duration::from_secs(20),
        )
        .clean_error(1, &[&where_, "relay url"]);
    }
}

#[test]
fn exit_1_wrong_passphrase_writes_nothing() {
    let relay = Relay::start();
    let dir = tempdir();
    let input = dir.path().join("in");
    std::fs::write(&input, pseudo_random(256 * 1024, 7)).expect("write");
    let path = unique_path("wrongkey");
    let mut w = write_cmd(&relay, &path);
    w.env("HTTPIPE_PASSPHRASE", "the right one");
    let mut w = Proc::spawn(
        "write (right passphrase)",
        &mut w,
        In::File(&input),
        Out::Null,
    );
    let mut r = read_cmd(&relay, &path);
    r.env("HTTPIPE_PASSPHRASE", "the wrong one");
    let d =
        Proc::spawn("read (wrong passphrase)", &mut r, In::Null, Out::Capture).wait(CHILD_TIMEOUT);
    d.clean_error(1, &["passphrase"]);
    assert!(d.stdout.is_empty(), "{} bytes on stdout", d.stdout.len());
    // The producer either finished (everything was handed over) or saw the consumer leave.
    let wd = w.wait(CHILD_TIMEOUT);
    assert!(
        matches!(wd.code, Some(0 | 5)),
        "producer exit {:?}: {}",
        wd.code,
        wd.stderr
    );
}

#[test]
fn exit_1_unreadable_identity_file_and_2_for_a_bad_one() {
    let relay = Relay::start();
    let dir = tempdir();
    let path = unique_path("idfile");
    run(
        "read -i /nonexistent",
        read_cmd(&relay, &path).args(["-t", "3", "-i", "/nonexistent/key.txt"]),
        Duration::from_secs(20),
    )
    .clean_error(1, &["/nonexistent/key.txt", "identity"]);
    let bad = dir.path().join("bad-key.txt");
    std::fs::write(&bad, "# a comment\nnot-a-key\n").expect("write");
    run(
        "read -i bad-key.txt",
        read_cmd(&relay, &path).args(["-t", "3", "-i"]).arg(&bad),
        Duration::from_secs(20),
    )
    .clean_error(2, &["bad-key.txt", "line 2"]);
}

#[test]
fn exit_2_usage_errors() {
    let dir = tempdir();
    let d = dir.path();
    let url = format!("http://127.0.0.1:{}/connect/v0/", dead_port());
    let t = Duration::from_secs(10);

    run("unknown flag", &mut httpipe(["write", "--bogus"]), t).clean_error(2, &["--bogus"]);
    run("unknown subcommand", &mut httpipe(["frobnicate"]), t).clean_error(2, &["frobnicate"]);
    // the missing argument is named (its name was on a line of its own, and was lost), and a
    // stream path or a wait the core would refuse is a usage error too, not exit 1 later
    run("send without files", &mut httpipe(["send"]), t).clean_error(2, &["<FILE>"]);
    for (name, args) in [
        ("dot segments", ["-s", "/a/../x", "--resume", "5"]),
        ("the root", ["-s", "/", "--resume", "5"]),
        (
            "a wait past 23 days",
            ["-s", "/x", "--resume", "99999999999"],
        ),
    ] {
        let mut cmd = httpipe(["write", "-U", &url]);
        run(name, cmd.args(args), t).clean_error(2, &["give"]);
    }
    run(
        "write-only option on read",
        &mut httpipe(["read", "-c", "text/plain", "-s", "/x"]),
        t,
    )
    .clean_error(2, &["-c"]);

    let unknown = d.join("unknown-key.yaml");
    std::fs::write(
        &unknown,
        format!("mode: write\nstreampath: /x\nconnect_url: {url}\n"),
    )
    .expect("write");
    run(
        "config with an unknown key",
        &mut httpipe(["write", "-f", &unknown.display().to_string()]),
        t,
    )
    .clean_error(2, &["streampath", "unknown-key.yaml"]);

    // a config file that is not UTF-8 text, or missing, is a usage error too
    let binary = d.join("binary.yaml");
    std::fs::write(&binary, b"\xff\xfe").expect("write");
    run(
        "config that is not text",
        &mut httpipe(["write", "-f", &binary.display().to_string()]),
        t,
    )
    .clean_error(2, &["binary.yaml", "UTF-8"]);
    let missing = d.join("missing.yaml").display().to_string();
    run("missing config", &mut httpipe(["write", "-f", &missing]), t)
        .clean_error(2, &["missing.yaml"]);

    let read_cfg = d.join("read-mode.yaml");
    std::fs::write(
        &read_cfg,
        format!("mode: read\nstream_path: /x\nconnect_url: {url}\n"),
    )
    .expect("write");
    run(
        "config mode: read used with write",
        &mut httpipe(["write", "-f", &read_cfg.display().to_string()]),
        t,
    )
    .clean_error(2, &["mode", "read", "write"]);

    let no_mode = d.join("no-mode.yaml");
    std::fs::write(&no_mode, format!("stream_path: /x\nconnect_url: {url}\n")).expect("write");
    run(
        "config without mode",
        &mut httpipe(["read", "-f", &no_mode.display().to_string()]),
        t,
    )
    .clean_error(2, &["mode: read"]);

    let bad_yaml = d.join("bad.yaml");
    std::fs::write(&bad_yaml, "mode: [write\n").expect("write");
    run(
        "config that is not YAML",
        &mut httpipe(["write", "-f", &bad_yaml.display().to_string()]),
        t,
    )
    .clean_error(2, &["bad.yaml", "yaml"]);

    run("no stream path", &mut httpipe(["read", "-U", &url]), t)
        .clean_error(2, &["stream path", "-s"]);
    run(
        "connect URL without a scheme",
        &mut httpipe(["read", "-s", "/x", "-U", "relay.example"]),
        t,
    )
    .clean_error(2, &["relay.example"]);
    run(
        "bad encryption mode",
        &mut httpipe([
            "write",
            "-s",
            "/x",
            "-U",
            &url,
            "-p",
            "pw",
            "--encryption-mode",
            "rot13",
        ]),
        t,
    )
    .clean_error(2, &["rot13", "encryption-mode"]);
    run(
        "--serve without a command",
        &mut httpipe(["write", "--serve", "-s", "/x", "-U", &url]),
        t,
    )
    .clean_error(2, &["--serve", "command"]);
    let mut bad_env = httpipe(["read", "-s", "/x", "-U", &url]);
    bad_env.env("HTTPIPE_CONNECT_TIMEOUT", "soon");
    run("bad HTTPIPE_CONNECT_TIMEOUT", &mut bad_env, t)
        .clean_error(2, &["HTTPIPE_CONNECT_TIMEOUT"]);
    // A missing -f file is a usage error (2, like a missing -n config; zebrastream says 1),
    // with the path in the message.
    run(
        "missing config file",
        &mut httpipe(["write", "-f", "/nonexistent/supplier.yaml"]),
        t,
    )
    .clean_error(2, &["/nonexistent/supplier.yaml", "-f/--config-file"]);
}

#[test]
fn exit_2_a_file_for_a_command_says_send_or_redirect_at_once() {
    // Checked before any connection: no peer needed, no relay asked for.
    let dir = tempdir();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello").expect("write");
    let f = file.display().to_string();
    let t = Duration::from_secs(10);
    run("write FILE", &mut httpipe(["write", &f]), t).clean_error(
        2,
        &["is a file, not a command", &format!("httpipe send {f}")],
    );
    run("read FILE", &mut httpipe(["read", &f]), t)
        .clean_error(2, &["is a file", &format!("> {f}")]);
    let url = format!("http://127.0.0.1:{}", dead_port());
    run(
        "write -- unknown command",
        &mut httpipe(["write", "--relay", &url, "-s", "/x", "--", "no-such-cmd-x9"]),
        t,
    )
    .clean_error(2, &["no-such-cmd-x9", "PATH", "httpipe send"]);
}

#[test]
fn exit_2_without_a_relay_and_nothing_leaves() {
    // No default relay (no silent ZebraStream): every transfer subcommand says how to name one.
    let dir = tempdir();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello").expect("write");
    let file = file.display().to_string();
    let t = Duration::from_secs(10);
    let advice = [
        "no relay",
        "--relay",
        "-U/--connect-url",
        "HTTPIPE_RELAY",
        "relay:",
    ];
    for args in [
        &["write", "-s", "/x"][..],
        &["read", "-s", "/x"],
        &["send", &file],
        &["send", "-s", "/x", &file],
        &["receive", "7-guitarist-revenge"],
    ] {
        let d = run(&format!("httpipe {args:?}"), &mut httpipe(args), t);
        d.clean_error(2, &advice);
        assert!(
            d.stdout.is_empty(),
            "{args:?}: printed {:?}",
            d.stdout_str()
        );
        // `send` printed no code (nothing to paste: no relay was used).
        assert!(
            !d.stderr.contains("httpipe receive"),
            "{args:?}: {}",
            d.stderr
        );
    }
    // A relay from the environment or the config file is enough (it gets as far as the
    // closed port: exit 1 naming it, not 2).
    let port = dead_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut env = httpipe(["read", "-s", "/x"]);
    env.env("HTTPIPE_RELAY", &url);
    run("HTTPIPE_RELAY", &mut env, Duration::from_secs(20))
        .clean_error(1, &[&format!("127.0.0.1:{port}")]);
    let cfg = dir.path().join("relay.yaml");
    std::fs::write(&cfg, format!("mode: read\nstream_path: /x\nrelay: {url}\n")).expect("write");
    run(
        "relay: in the config file",
        &mut httpipe(["read", "-f", &cfg.display().to_string()]),
        Duration::from_secs(20),
    )
    .clean_error(1, &[&format!("127.0.0.1:{port}")]);
}

#[test]
fn exit_3_auth() {
    let relay = Relay::start_auth();
    let path = unique_path("auth");
    let rt = relay.token(&path, "read", false);
    let wt = relay.token(&path, "write", false);
    let t = Duration::from_secs(20);
    let with_token = |mut c: Command, tok: &str| {
        c.env("HTTPIPE_ACCESS_TOKEN", tok);
        c
    };
    let timeout = ["-t", "5"];

    let mut c = write_cmd(&relay, &path);
    run("write, no token", c.args(timeout), t).clean_error(3, &["access token"]);
    let mut c = read_cmd(&relay, &path);
    run("read, no token", c.args(timeout), t).clean_error(3, &["access token"]);
    let mut c = with_token(write_cmd(&relay, &path), &rt);
    run("write with a read token", c.args(timeout), t).clean_error(3, &["write"]);
    let mut c = with_token(read_cmd(&relay, &path), &wt);
    run("read with a write token", c.args(timeout), t).clean_error(3, &["read"]);
    let mut c = with_token(read_cmd(&relay, &path), "hp1.garbage.token");
    run("read with a garbage token", c.args(timeout), t).clean_error(3, &["token"]);
    let other = unique_path("auth-other");
    let mut c = with_token(write_cmd(&relay, &other), &wt);
    run("write token for another path", c.args(timeout), t).clean_error(3, &["token"]);
    // -a works too (with the command-line warning as an extra stderr line).
    let d = run(
        "read -a garbage",
        read_cmd(&relay, &path).args(["-a", "garbage", "-t", "5"]),
        t,
    );
    d.clean_error(3, &["token"]);
}

#[test]
fn exit_4_connect_timeout() {
    let relay = Relay::start();
    for mode in ["write", "read"] {
        let path = unique_path("timeout");
        let t = Instant::now();
        let d = run(
            &format!("{mode} -t 1, no peer"),
            &mut httpipe([mode, "-s", &path, "-U", &relay.connect_url(), "-t", "1"]),
            Duration::from_secs(20),
        );
        d.clean_error(4, &["connect-timeout"]);
        assert!(
            t.elapsed() < Duration::from_secs(8),
            "{mode}: {:?}",
            t.elapsed()
        );
    }
}

// ---------------------------------------------------------------------------------------
// 9. keygen + age recipients; send → the printed receive command

#[test]
fn keygen_then_age_recipient_round_trip() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let key = d.join("key.txt");
    let kd = run(
        "keygen -o key.txt",
        httpipe(["keygen", "-o"]).arg(&key),
        Duration::from_secs(10),
    );
    kd.code(0);
    let text = String::from_utf8_lossy(&read(&key)).into_owned();
    let public = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .expect("a '# public key:' line")
        .to_string();
    assert!(public.starts_with("age1"), "{public}");
    assert!(
        text.lines().any(|l| l.starts_with("AGE-SECRET-KEY-1")),
        "{text}"
    );
    assert!(kd.stderr.contains(&public), "keygen stderr: {}", kd.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "key file mode {mode:o}");
    }
    run(
        "keygen -o existing",
        httpipe(["keygen", "-o"]).arg(&key),
        Duration::from_secs(10),
    )
    .clean_error(1, &["key.txt", "never overwritten"]);
    let other_key = d.join("other.txt");
    run(
        "keygen (other)",
        httpipe(["keygen", "-o"]).arg(&other_key),
        Duration::from_secs(10),
    )
    .code(0);

    let input = d.join("in");
    let data = pseudo_random(3 * MIB, 9);
    std::fs::write(&input, &data).expect("write");
    let key_s = key.display().to_string();
    let other_s = other_key.display().to_string();
    // age v1 and age-rt (the default) to the recipient; the wrong identity fails cleanly.
    let cases: [(&str, &[&str], &str); 3] = [
        ("age", &["--encryption-mode", "age"], key_s.as_str()),
        ("age-rt", &[], key_s.as_str()),
        (
            "wrong identity",
            &["--encryption-mode", "age"],
            other_s.as_str(),
        ),
    ];
    let cases =
        cases.map(|(name, extra, id)| (name, [&["-r", public.as_str()], extra].concat(), id));
    write_and_read_cases(&relay, d, &input, &data, &cases, "wrong identity");
}

/// Runs `write EXTRA` → `read -i ID` for each case at once, on a path each, with `input`'s
/// bytes; the case named `failing` must fail cleanly in `read` (no plaintext written).
fn write_and_read_cases(
    relay: &Relay,
    d: &Path,
    input: &Path,
    data: &[u8],
    cases: &[(&str, Vec<&str>, &str)],
    failing: &str,
) {
    let mut running = Vec::new();
    for (name, extra, id) in cases {
        let path = unique_path("keys");
        let out = d.join(format!(
            "keys-out-{}-{}",
            running.len(),
            name.replace(' ', "-")
        ));
        let w = Proc::spawn(
            &format!("write ({name})"),
            write_cmd(relay, &path).args(extra),
            In::File(input),
            Out::Null,
        );
        let r = Proc::spawn(
            &format!("read -i ({name})"),
            read_cmd(relay, &path).args(["-i", id]),
            In::Null,
            Out::File(&out),
        );
        running.push((*name, w, r, out));
    }
    for (name, mut w, mut r, out) in running {
        if name == failing {
            r.wait(CHILD_TIMEOUT).clean_error(1, &["identity"]);
            assert_eq!(read(&out).len(), 0, "plaintext written with the wrong key");
            let wd = w.wait(CHILD_TIMEOUT);
            assert!(matches!(wd.code, Some(0 | 5)), "{name}: {wd:?}");
        } else {
            w.wait(CHILD_TIMEOUT).code(0);
            r.wait(CHILD_TIMEOUT).code(0);
            assert_same_bytes(&read(&out), data, name);
        }
    }
}

/// The same with a hybrid post-quantum key (PROTOCOL.md §7.1): `keygen -pq` (age-keygen's
/// spelling), `-r age1pq1...` and `-R FILE`, age v1 and age-rt through the relay; an X25519
/// identity can't open it; mixing it with an X25519 recipient is a usage error.
#[test]
fn keygen_pq_then_post_quantum_round_trip() {
    let relay = Relay::start();
    let dir = tempdir();
    let d = dir.path();
    let key = d.join("pq.txt");
    let kd = run(
        "keygen -pq -o pq.txt",
        httpipe(["keygen", "-pq", "-o"]).arg(&key),
        Duration::from_secs(10),
    );
    kd.code(0);
    let text = String::from_utf8_lossy(&read(&key)).into_owned();
    let public = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .expect("a '# public key:' line")
        .to_string();
    assert!(
        public.starts_with("age1pq1") && public.len() == 1959,
        "{public}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("AGE-SECRET-KEY-PQ-1")),
        "{text}"
    );
    assert!(kd.stderr.contains(&public), "keygen stderr: {}", kd.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "key file mode {mode:o}");
    }
    // --pq to stdout: the key file text itself.
    let out = run(
        "keygen --pq",
        &mut httpipe(["keygen", "--pq"]),
        Duration::from_secs(10),
    );
    out.code(0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("# public key: age1pq1") && stdout.contains("AGE-SECRET-KEY-PQ-1"),
        "{stdout}"
    );
    let x25519_key = d.join("x.txt");
    run(
        "keygen (X25519)",
        httpipe(["keygen", "-o"]).arg(&x25519_key),
        Duration::from_secs(10),
    )
    .code(0);
    let x25519_public = String::from_utf8_lossy(&read(&x25519_key))
        .lines()
        .find_map(|l| l.strip_prefix("# public key: ").map(str::to_string))
        .expect("public key");
    let recipients_file = d.join("recipients.txt");
    std::fs::write(&recipients_file, format!("# team\n{public}\n")).expect("write");

    let input = d.join("in");
    let data = pseudo_random(2 * MIB + 5, 11);
    std::fs::write(&input, &data).expect("write");
    let key_s = key.display().to_string();
    let rfile_s = recipients_file.display().to_string();
    let x_s = x25519_key.display().to_string();
    let cases: [(&str, Vec<&str>, &str); 3] = [
        (
            "age -r",
            vec!["-r", &public, "--encryption-mode", "age"],
            key_s.as_str(),
        ),
        ("age-rt -R", vec!["-R", &rfile_s], key_s.as_str()),
        ("X25519 identity", vec!["-r", &public], x_s.as_str()),
    ];
    write_and_read_cases(&relay, d, &input, &data, &cases, "X25519 identity");
    let path = unique_path("pq-mixed");
    run(
        "write -r age1pq1... -r age1...",
        write_cmd(&relay, &path).args(["-r", &public, "-r", &x25519_public]),
        Duration::from_secs(10),
    )
    .clean_error(2, &["mixed"]);
}

#[test]
fn send_prints_a_receive_command_that_works() {
    // without -s or a key: a short code (PROTOCOL.md §14); with -s: the path and a passphrase
    send_and_run_the_printed_command(false);
    send_and_run_the_printed_command(true);
}

fn send_and_run_the_printed_command(with_path: bool) {
    let relay = Relay::start();
    let dir = tempdir();
    let send_dir = dir.path().join("send");
    let recv_dir = dir.path().join("recv");
    std::fs::create_dir_all(&send_dir).expect("mkdir");
    std::fs::create_dir_all(&recv_dir).expect("mkdir");
    let data = pseudo_random(3 * MIB + 17, 10);
    std::fs::write(send_dir.join("report.bin"), &data).expect("write");

    let path = format!("/s/printed-{}", std::process::id());
    let mut cmd = if with_path {
        httpipe([
            "send",
            "-U",
            &relay.connect_url(),
            "-s",
            &path,
            "report.bin",
        ])
    } else {
        httpipe(["send", "-U", &relay.connect_url(), "report.bin"])
    };
    cmd.current_dir(&send_dir);
    let mut sender = Proc::spawn("send report.bin", &mut cmd, In::Null, Out::Null);
    let err = sender.wait_for_stderr("httpipe receive", Duration::from_secs(20));
    let hint = err
        .lines()
        .skip_while(|l| !l.contains("On the other side, run:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no receive command in:\n{err}"))
        .trim()
        .to_string();
    assert!(hint.contains("httpipe receive"), "{hint}");
    if with_path {
        assert!(
            hint.contains("HTTPIPE_PASSPHRASE=") && hint.contains(&path),
            "a generated passphrase and the path: {hint}"
        );
    } else {
        let code = hint.rsplit(' ').next().unwrap_or_default();
        let parts: Vec<&str> = code.split('-').collect();
        assert!(
            parts.len() == 3 && parts[0].parse::<u16>().is_ok() && !hint.contains("PASSPHRASE"),
            "a short code N-WORD-WORD: {hint}"
        );
        assert!(err.contains(&format!("Code: {code}")), "{err}");
    }

    // Run it as printed, through sh, with our binary first on PATH.
    let bin_dir = httpipe_bin().parent().expect("bin dir").to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut sh = Command::new("sh");
    clean_env(&mut sh);
    sh.arg("-c")
        .arg(&hint)
        .env("PATH", path)
        .env("RUST_BACKTRACE", "1")
        .current_dir(&recv_dir);
    let stdout = dir.path().join("receive-stdout");
    let rd = Proc::spawn(
        "the printed receive command",
        &mut sh,
        In::Null,
        Out::File(&stdout),
    )
    .wait(CHILD_TIMEOUT);
    rd.code(0);
    sender.wait(CHILD_TIMEOUT).code(0);
    // Encrypted streams carry no file name (PROTOCOL.md §11.1), so the receiver saves to
    // ./report.bin only if the name arrived; otherwise it writes to stdout.
    let saved = recv_dir.join("report.bin");
    let got = if saved.exists() {
        read(&saved)
    } else {
        read(&stdout)
    };
    assert_same_bytes(&got, &data, "received via the printed command");
    let leftovers: Vec<_> = std::fs::read_dir(&recv_dir)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".httpipe-part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A short code's sender with its printed code (PROTOCOL.md §14).
fn send_by_code(relay: &Relay, dir: &Path, data: &[u8]) -> (Proc, String) {
    send_by_code_with(relay, dir, data, None)
}

/// As [`send_by_code`], with `token` in `HTTPIPE_ACCESS_TOKEN`.
fn send_by_code_with(
    relay: &Relay,
    dir: &Path,
    data: &[u8],
    token: Option<&str>,
) -> (Proc, String) {
    std::fs::write(dir.join("code.bin"), data).expect("write");
    let mut cmd = httpipe(["send", "--relay", &relay.base(), "code.bin"]);
    cmd.current_dir(dir);
    if let Some(t) = token {
        cmd.env("HTTPIPE_ACCESS_TOKEN", t);
    }
    let mut sender = Proc::spawn("send by code", &mut cmd, In::Null, Out::Null);
    let err = sender.wait_for_stderr("Code: ", Duration::from_secs(20));
    let code = err
        .lines()
        .find_map(|l| l.strip_prefix("Code: "))
        .unwrap_or_else(|| panic!("no code in:\n{err}"))
        .trim()
        .to_string();
    (sender, code)
}

/// Issue #26: short codes on a relay in auth mode. A code token (PROTOCOL.md §6) runs the
/// exchange on both sides; a write token is told to get one; no token is exit 3.
#[test]
fn codes_on_a_relay_in_auth_mode_with_a_code_token() {
    let relay = Relay::start_auth();
    let dir = tempdir();
    let code_token = relay.token("/code/v1", "code", true);
    let write = relay.token("/s", "write", true);
    let t = Duration::from_secs(20);
    std::fs::write(dir.path().join("code.bin"), b"x").expect("write");
    let mut c = httpipe(["send", "--relay", &relay.base(), "code.bin"]);
    c.current_dir(dir.path())
        .env("HTTPIPE_ACCESS_TOKEN", &write);
    run("send by code with a write token", &mut c, t).clean_error(3, &["--mode code"]);

    let data = pseudo_random(300 * 1024 + 7, 33);
    let (mut sender, code) = send_by_code_with(&relay, dir.path(), &data, Some(&code_token));
    let mut c = httpipe(["receive", "--relay", &relay.base(), "-o", "-", &code]);
    run("receive by code without a token", &mut c, t).clean_error(3, &["access token"]);
    let recv_dir = dir.path().join("recv");
    std::fs::create_dir_all(&recv_dir).expect("mkdir");
    let mut cmd = httpipe(["receive", "--relay", &relay.base(), &code]);
    cmd.current_dir(&recv_dir)
        .env("HTTPIPE_ACCESS_TOKEN", &code_token);
    Proc::spawn(
        "receive by code with a code token",
        &mut cmd,
        In::Null,
        Out::Null,
    )
    .wait(CHILD_TIMEOUT)
    .code(0);
    let sent = sender.wait(CHILD_TIMEOUT);
    sent.code(0);
    assert!(
        sent.stderr.contains("with a code token for this relay"),
        "{}",
        sent.stderr
    );
    assert_same_bytes(&read(&recv_dir.join("code.bin")), &data, "received by code");
}

#[test]
fn receive_by_code_saves_the_sent_file_under_its_name() {
    let relay = Relay::start();
    let dir = tempdir();
    let data = pseudo_random(2 * MIB + 5, 31);
    let (mut sender, code) = send_by_code(&relay, dir.path(), &data);
    let recv_dir = dir.path().join("recv");
    std::fs::create_dir_all(&recv_dir).expect("mkdir");
    // the code as a person types it: upper case, spaces
    let typed = code.replace('-', " ").to_uppercase();
    let mut cmd = httpipe(["receive", "--relay", &relay.base(), &typed]);
    cmd.current_dir(&recv_dir);
    Proc::spawn("receive by code", &mut cmd, In::Null, Out::Null)
        .wait(CHILD_TIMEOUT)
        .code(0);
    sender.wait(CHILD_TIMEOUT).code(0);
    assert_same_bytes(&read(&recv_dir.join("code.bin")), &data, "received by code");
    // a code works once
    let mut again = httpipe(["receive", "--relay", &relay.base(), "-o", "-", &code]);
    let d = Proc::spawn("the used code again", &mut again, In::Null, Out::Null).wait(CHILD_TIMEOUT);
    d.code(1);
    assert!(d.stderr.contains("no sender is waiting"), "{}", d.stderr);
}

#[test]
fn a_wrong_code_fails_both_sides_before_any_data() {
    let relay = Relay::start();
    let dir = tempdir();
    let (mut sender, code) = send_by_code(&relay, dir.path(), b"secret report");
    // the same channel, other words: what a mistyped (or guessed) code is
    let channel = code.split('-').next().unwrap_or_default();
    let wrong = if code.ends_with("-adroitness-absurd") {
        format!("{channel}-adviser-absurd")
    } else {
        format!("{channel}-adroitness-absurd")
    };
    let out = dir.path().join("wrong.bin");
    let mut cmd = httpipe(["receive", "--relay", &relay.base(), "-o"]);
    cmd.arg(&out).arg(&wrong);
    let r =
        Proc::spawn("receive with a wrong code", &mut cmd, In::Null, Out::Null).wait(CHILD_TIMEOUT);
    r.code(1);
    assert!(r.stderr.contains("wrong code"), "receiver: {}", r.stderr);
    let s = sender.wait(CHILD_TIMEOUT);
    s.code(1);
    assert!(s.stderr.contains("wrong code"), "sender: {}", s.stderr);
    assert!(!out.exists(), "nothing is saved");
    // malformed: refused before any request
    let mut cmd = httpipe(["receive", "--relay", &relay.base(), "7-notaword-revenge"]);
    let m = Proc::spawn("a malformed code", &mut cmd, In::Null, Out::Null)
        .wait(Duration::from_secs(10));
    m.code(1);
    assert!(m.stderr.contains("wrong code"), "{}", m.stderr);
}
