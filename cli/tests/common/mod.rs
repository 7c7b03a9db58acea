//! Test harness for the `httpipe` CLI end-to-end tests: a real `httpipe-relay` process
//! per test (killed on drop), real `httpipe` processes with a timeout on every wait, and
//! small helpers for files, shell scripts and error-message checks.
//!
//! The relay binary: `$HTTPIPE_TEST_RELAY` if set; else the first up-to-date
//! `httpipe-relay` in the test's own target dir, `$CARGO_TARGET_DIR` or the workspace's
//! `target/` (release before debug); else `cargo build -p httpipe-relay` once.

#![allow(dead_code)] // each test crate uses a different part of this module

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How long any one child may take unless a test says otherwise.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// The `httpipe` binary under test (built by cargo for this package's integration tests).
pub fn httpipe_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_httpipe"))
}

/// The workspace root (the cli crate's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

/// Drops every `HTTPIPE_*` / `ZEBRASTREAM*` variable of the test's own environment so a
/// developer's settings (or a relay's `HTTPIPE_HTTP_PORT`) can't leak into a child.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("HTTPIPE_") || k.starts_with("ZEBRASTREAM") {
            cmd.env_remove(&k);
        }
    }
    cmd
}

/// `httpipe ARGS...` with a clean environment and `RUST_BACKTRACE=1` (so a panic would
/// show a backtrace, which the error checks reject).
pub fn httpipe<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(httpipe_bin());
    clean_env(&mut cmd);
    cmd.env("RUST_BACKTRACE", "1").args(args);
    cmd
}

/// A single-quoted shell word.
pub fn sh_quote(s: impl AsRef<OsStr>) -> String {
    let s = s.as_ref().to_string_lossy();
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Writes `body` as `dir/name` (a `sh` script) and returns its path.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("set -e\n{body}\n")).expect("write script");
    p
}

/// Deterministic pseudo-random bytes (xorshift64*), different for each `seed`.
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A stream path no other test (or earlier run against a long-lived relay) uses.
pub fn unique_path(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "/e2e/{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A local port with nothing listening on it (bound, then released).
pub fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// First `sha256sum` word of a file, by the system's `sha256sum`.
pub fn sha256_file(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(out.status.success(), "sha256sum {} failed", path.display());
    first_word(&String::from_utf8_lossy(&out.stdout))
}

pub fn first_word(s: &str) -> String {
    s.split_whitespace().next().unwrap_or("").to_string()
}

pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Asserts two byte strings are equal without printing megabytes.
pub fn assert_same_bytes(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let first_diff = got.iter().zip(want).position(|(a, b)| a != b);
        panic!(
            "{what}: got {} bytes, want {} bytes; first difference at {:?}",
            got.len(),
            want.len(),
            first_diff
        );
    }
}

// ---------------------------------------------------------------------------------------
// Child processes

/// Where a child's stdin comes from.
pub enum In<'a> {
    Null,
    File(&'a Path),
    /// A pipe the test writes with [`Proc::feed`]; it stays open (a quiet input) until the
    /// child is reaped.
    Pipe,
}

/// Where a child's stdout goes (stderr is always captured).
pub enum Out<'a> {
    Capture,
    File(&'a Path),
    Null,
}

struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    done: Arc<AtomicBool>,
    _thread: JoinHandle<()>,
}

impl Capture {
    fn start(mut r: impl Read + Send + 'static) -> Capture {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let (b, d) = (buf.clone(), done.clone());
        let thread = std::thread::spawn(move || {
            let mut chunk = [0u8; 64 * 1024];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => b.lock().expect("lock").extend_from_slice(&chunk[..n]),
                }
            }
            d.store(true, Ordering::SeqCst);
        });
        Capture {
            buf,
            done,
            _thread: thread,
        }
    }

    fn snapshot(&self) -> Vec<u8> {
        self.buf.lock().expect("lock").clone()
    }
}

/// A running child. Killed (SIGKILL) if dropped before it was waited for.
pub struct Proc {
    pub name: String,
    child: Child,
    started: Instant,
    stdout: Option<Capture>,
    stderr: Capture,
    reaped: Option<ExitStatus>,
}

/// A finished child.
#[derive(Debug)]
pub struct Done {
    pub name: String,
    pub status: ExitStatus,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Proc {
    /// Writes `data` to the child's stdin ([`In::Pipe`]), leaving it open.
    pub fn feed(&mut self, data: &[u8]) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("spawned with In::Pipe");
        stdin
            .write_all(data)
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("{}: writing its stdin: {e}", self.name));
    }

    pub fn spawn(name: &str, cmd: &mut Command, stdin: In<'_>, stdout: Out<'_>) -> Proc {
        match stdin {
            In::Null => cmd.stdin(Stdio::null()),
            In::File(p) => cmd.stdin(Stdio::from(
                std::fs::File::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display())),
            )),
            In::Pipe => cmd.stdin(Stdio::piped()),
        };
        let capture_out = matches!(stdout, Out::Capture);
        match stdout {
            Out::Capture => cmd.stdout(Stdio::piped()),
            Out::Null => cmd.stdout(Stdio::null()),
            Out::File(p) => cmd.stdout(Stdio::from(
                std::fs::File::create(p).unwrap_or_else(|e| panic!("create {}: {e}", p.display())),
            )),
        };
        cmd.stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: can't spawn {cmd:?}: {e}"));
        let stdout = capture_out.then(|| Capture::start(child.stdout.take().expect("stdout")));
        let stderr = Capture::start(child.stderr.take().expect("stderr"));
        Proc {
            name: name.to_string(),
            child,
            started: Instant::now(),
            stdout,
            stderr,
            reaped: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Still running (not exited)?
    pub fn is_running(&mut self) -> bool {
        if self.reaped.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(s)) => {
                self.reaped = Some(s);
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Captured stdout so far (with [`Out::Capture`]).
    pub fn stdout_now(&self) -> Vec<u8> {
        self.stdout
            .as_ref()
            .map(Capture::snapshot)
            .unwrap_or_default()
    }

    pub fn stderr_now(&self) -> String {
        String::from_utf8_lossy(&self.stderr.snapshot()).into_owned()
    }

    /// Waits until stderr contains `needle`; returns stderr so far. Panics on timeout or
    /// if the child exits first.
    pub fn wait_for_stderr(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.stderr_now();
            if s.contains(needle) {
                return s;
            }
            if !self.is_running() {
                std::thread::sleep(Duration::from_millis(100));
                let s = self.stderr_now();
                if s.contains(needle) {
                    return s;
                }
                panic!(
                    "{}: exited ({:?}) before printing {needle:?}; stderr:\n{s}",
                    self.name, self.reaped
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{}: no {needle:?} on stderr within {timeout:?}; stderr:\n{s}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a signal to the child (not its children).
    #[cfg(unix)]
    pub fn signal(&self, sig: i32) {
        if self.reaped.is_none() {
            // SAFETY: kill(2) on the pid of our own unreaped child.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, sig);
            }
        }
    }

    /// Waits up to `timeout` for the exit; on timeout kills the child and panics with
    /// what it printed, so a hang fails the test instead of blocking CI.
    pub fn wait(&mut self, timeout: Duration) -> Done {
        self.wait_hint(timeout, "")
    }

    /// [`wait`](Proc::wait), with `hint` (what a hang here means) in the timeout message.
    pub fn wait_hint(&mut self, timeout: Duration, hint: &str) -> Done {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.reaped {
                break s;
            }
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    self.reaped = Some(s);
                    break s;
                }
                Ok(None) => {}
                Err(e) => panic!("{}: wait failed: {e}", self.name),
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let s = self.child.wait().ok();
                self.reaped = s;
                std::thread::sleep(Duration::from_millis(100));
                panic!(
                    "{}: still running after {timeout:?} (killed){}{hint}; stderr:\n{}",
                    self.name,
                    if hint.is_empty() { "" } else { ": " },
                    self.stderr_now()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let elapsed = self.started.elapsed();
        // The pipes close when the child (and any grandchild holding them) is gone; don't
        // wait forever for a grandchild that kept one open.
        let pipes_deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < pipes_deadline
            && !(self.stderr.done.load(Ordering::SeqCst)
                && self
                    .stdout
                    .as_ref()
                    .is_none_or(|c| c.done.load(Ordering::SeqCst)))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        Done {
            name: self.name.clone(),
            status,
            code: status.code(),
            stdout: self
                .stdout
                .as_ref()
                .map(Capture::snapshot)
                .unwrap_or_default(),
            stderr: self.stderr_now(),
            elapsed,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a command to the end (stdin null, stdout captured) with a timeout.
pub fn run(name: &str, cmd: &mut Command, timeout: Duration) -> Done {
    Proc::spawn(name, cmd, In::Null, Out::Capture).wait(timeout)
}

impl Done {
    /// Asserts the exit code; the message shows stderr.
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(want),
            "{}: exit {:?} ({}), want {want}; stderr:\n{}",
            self.name,
            self.code,
            self.status,
            self.stderr
        );
        self
    }

    /// Asserts a clean failure: exit `want`, a short message on stderr (at most 3 lines,
    /// no panic, no backtrace) that contains every `needle` (case-insensitive).
    pub fn clean_error(&self, want: i32, needles: &[&str]) -> &Self {
        self.code(want);
        let err = self.stderr.trim_end();
        assert!(
            !err.is_empty(),
            "{}: exit {want} but nothing on stderr",
            self.name
        );
        for bad in [
            "panicked",
            "RUST_BACKTRACE",
            "stack backtrace",
            "internal error",
        ] {
            assert!(
                !err.contains(bad),
                "{}: stderr has {bad:?}:\n{err}",
                self.name
            );
        }
        let lines = err.lines().count();
        assert!(
            lines <= 3,
            "{}: {lines} lines on stderr (at most 3):\n{err}",
            self.name
        );
        let lower = err.to_lowercase();
        for n in needles {
            assert!(
                lower.contains(&n.to_lowercase()),
                "{}: stderr doesn't mention {n:?}:\n{err}",
                self.name
            );
        }
        self
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

// ---------------------------------------------------------------------------------------
// The relay

/// Newest modification time of the relay crate's sources (to spot a stale binary).
fn newest_source_mtime(dir: &Path) -> Option<SystemTime> {
    let mut newest: Option<SystemTime> = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(md) = e.metadata() else { continue };
            if md.is_dir() {
                stack.push(p);
            } else if let Ok(m) = md.modified() {
                newest = Some(newest.map_or(m, |n| n.max(m)));
            }
        }
    }
    newest
}

fn find_or_build_relay() -> PathBuf {
    if let Some(p) = std::env::var_os("HTTPIPE_TEST_RELAY") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "HTTPIPE_TEST_RELAY={} is not a file",
            p.display()
        );
        return p;
    }
    let exe = httpipe_bin();
    // <target>/<profile>/httpipe
    let target_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("httpipe binary is in <target>/<profile>/")
        .to_path_buf();
    let ws = workspace_root();
    let mut dirs = vec![target_dir.clone()];
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        let d = PathBuf::from(d);
        dirs.push(if d.is_absolute() { d } else { ws.join(d) });
    }
    dirs.push(ws.join("target"));
    let sources = newest_source_mtime(&ws.join("relay"));
    let mut stale = Vec::new();
    for d in &dirs {
        for profile in ["release", "debug"] {
            let p = d.join(profile).join("httpipe-relay");
            let Ok(md) = std::fs::metadata(&p) else {
                continue;
            };
            let fresh = match (md.modified().ok(), sources) {
                (Some(bin), Some(src)) => bin >= src,
                _ => true,
            };
            if fresh {
                return p;
            }
            stale.push(p);
        }
    }
    for p in &stale {
        eprintln!(
            "note: {} is older than relay/ sources; not using it",
            p.display()
        );
    }
    build_relay(&target_dir)
}

/// `cargo build -p httpipe-relay --target-dir TARGET_DIR`; returns the debug binary.
pub fn build_relay(target_dir: &Path) -> PathBuf {
    eprintln!(
        "note: building httpipe-relay (cargo build -p httpipe-relay --target-dir {})",
        target_dir.display()
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-p", "httpipe-relay", "--target-dir"])
        .arg(target_dir)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .status()
        .expect("run cargo build -p httpipe-relay");
    assert!(status.success(), "cargo build -p httpipe-relay failed");
    let p = target_dir.join("debug").join("httpipe-relay");
    assert!(p.is_file(), "{} missing after the build", p.display());
    p
}

/// The relay binary (found or built once per test process).
pub fn relay_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(find_or_build_relay).clone()
}

/// A running `httpipe-relay --http-port 0 --no-tls`, killed when dropped.
pub struct Relay {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    key_file: Option<PathBuf>,
}

impl Relay {
    /// Open mode (no tokens).
    pub fn start() -> Relay {
        Self::launch(false)
    }

    /// Auth mode: `--auth-key-file` with a fresh key.
    pub fn start_auth() -> Relay {
        Self::launch(true)
    }

    fn launch(auth: bool) -> Relay {
        let bin = relay_bin();
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cmd = Command::new(&bin);
        clean_env(&mut cmd);
        cmd.args(["--http-port", "0", "--no-tls", "--host", "127.0.0.1"])
            .env("RUST_LOG", "info") // transfer start/end lines, quoted in failure messages
            .current_dir(dir.path());
        let key_file = auth.then(|| {
            let k = dir.path().join("relay.key");
            let key: String = pseudo_random(32, unique_seed())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            std::fs::write(&k, format!("{key}\n")).expect("write key");
            cmd.arg("--auth-key-file").arg(&k);
            k
        });
        let log = std::fs::File::create(dir.path().join("relay.log")).expect("log file");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("listening http://") {
                    let _ = tx.send(rest.to_string());
                }
            }
            // keep draining until the relay exits
        });
        let addr = match rx.recv_timeout(Duration::from_secs(15)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = std::fs::read_to_string(dir.path().join("relay.log")).unwrap_or_default();
                panic!(
                    "{} printed no `listening http://` line; log:\n{log}",
                    bin.display()
                );
            }
        };
        let port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("can't parse the port of {addr:?}"));
        Relay {
            child,
            port,
            dir,
            key_file,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The Connect API base for `-U`: `http://127.0.0.1:PORT/connect/v0/`
    pub fn connect_url(&self) -> String {
        format!("{}/connect/v0/", self.base())
    }

    /// A token from `httpipe-relay token` (auth mode only); `mode` is `read` or `write`.
    pub fn token(&self, path: &str, mode: &str, recursive: bool) -> String {
        let key = self.key_file.as_ref().expect("token() needs start_auth()");
        let mut cmd = Command::new(relay_bin());
        clean_env(&mut cmd);
        cmd.args(["token", "--path", path, "--mode", mode, "--ttl", "1h"])
            .arg("--auth-key-file")
            .arg(key);
        if recursive {
            cmd.arg("--recursive");
        }
        let d = run("httpipe-relay token", &mut cmd, Duration::from_secs(15));
        d.code(0);
        let t = d.stdout_str().trim().to_string();
        assert!(t.starts_with("hp1."), "unexpected token {t:?}");
        t
    }

    /// Sends `sig` to the relay (`SIGSTOP` freezes it, `SIGCONT` thaws it).
    #[cfg(unix)]
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of our own child, reaped only on drop.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// The relay's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("relay.log")).unwrap_or_default()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unique_seed() -> u64 {
    static N: AtomicU64 = AtomicU64::new(1);
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32) ^ N.fetch_add(1, Ordering::Relaxed)
}

/// Waits `d` (used to let the first party of a pair start waiting).
pub fn pause(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}
