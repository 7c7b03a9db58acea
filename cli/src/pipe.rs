//! Moving bytes between local ends (stdin, stdout, files, a command) and a stream, with
//! shared fate for commands. No network here: the stream ends are the [`Sink`] and
//! [`Source`] traits, which `transfer.rs` implements over the SDK (and the tests fake).

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use httpipe::client::Error as NetError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use crate::exit::{from_net, CliError, Exit, Role};
use crate::interrupt;
use crate::progress::Progress;

/// ZebraStream's read size (and one age-rt record's maximum plaintext).
pub const CHUNK: usize = 64 * 1024;

/// The most one read of the input may return: large reads keep a fast pipe fast (each read
/// of tokio's stdin is a round trip to its blocking thread).
pub const READ_MAX: usize = 1024 * 1024;

/// The producer's end of a stream.
pub(crate) trait Sink {
    async fn write(&mut self, data: &[u8]) -> Result<(), NetError>;

    /// [`Sink::write`] of a buffer the sink may keep (no copy where it can).
    async fn write_owned(&mut self, data: Vec<u8>) -> Result<(), NetError> {
        self.write(&data).await
    }

    /// Resolves (with its error) once the stream failed: watched while the input is quiet, so
    /// a producer command that writes rarely (`tail -f`) learns at once that the transfer is
    /// over, not at its next output.
    async fn failed(&mut self) -> NetError {
        std::future::pending().await
    }
}

/// The consumer's end of a stream: `None` is the clean end.
pub(crate) trait Source {
    type Chunk: AsRef<[u8]>;
    async fn next_chunk(&mut self) -> Result<Option<Self::Chunk>, NetError>;

    /// The whole stream was handed to a consumer command (its stdin closed after the clean
    /// end): the producer may be told so now (its receipt, PROTOCOL.md §12.2), without
    /// waiting for the command to finish its work.
    async fn handed_over(&mut self) {}
}

/// Copies `input` into `sink`. `whole_blocks`: wait for at least 64 KiB (or EOF) before each
/// write, like ZebraStream's buffered stdin; else pass on whatever one read returns (`-u`).
/// A write carries at most [`READ_MAX`] bytes.
pub(crate) async fn copy_to_sink<R: AsyncRead + Unpin, S: Sink>(
    mut input: R,
    sink: &mut S,
    whole_blocks: bool,
    progress: &Progress,
    input_name: &str,
) -> Result<u64, CliError> {
    let mut buf = vec![0u8; READ_MAX];
    let mut total = 0u64;
    loop {
        let read = async {
            if whole_blocks {
                fill(&mut input, &mut buf).await
            } else {
                input.read(&mut buf).await
            }
        };
        let n = tokio::select! {
            n = read => n,
            e = sink.failed() => return Err(from_net(&e, Role::Producer)),
        }
        .map_err(|e| {
            CliError::generic(
                format!("reading {input_name} failed: {e}"),
                "check the input",
            )
        })?;
        if n == 0 {
            return Ok(total);
        }
        sink.write(&buf[..n])
            .await
            .map_err(|e| from_net(&e, Role::Producer))?;
        total += n as u64;
        progress.inc(n as u64);
    }
}

/// Gives a pipe `fd` a [`READ_MAX`] buffer (Linux; elsewhere, or for anything but a pipe,
/// nothing happens): with the default 64 KiB a fast writer and this reader take turns on
/// every 64 KiB.
#[cfg(unix)]
pub(crate) fn enlarge_pipe(fd: std::os::fd::RawFd) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: fstat fills a zeroed plain-data struct for an fd we were given; fcntl with
        // F_SETPIPE_SZ only resizes a pipe's kernel buffer (it fails harmlessly otherwise).
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO {
                libc::fcntl(fd, libc::F_SETPIPE_SZ, READ_MAX as libc::c_int);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Reads until at least [`CHUNK`] bytes (or EOF) are in `buf`.
async fn fill<R: AsyncRead + Unpin>(input: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < CHUNK.min(buf.len()) {
        let m = input.read(&mut buf[n..]).await?;
        if m == 0 {
            break;
        }
        n += m;
    }
    Ok(n)
}

/// How a copy into a local output ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Copied {
    /// The stream ended cleanly; all bytes written.
    Complete(u64),
    /// The output went away first (broken pipe, e.g. `| head`): the rest was not read.
    OutputClosed(u64),
}

/// Copies `source` to `out`, flushing after every chunk when `unbuffered` (`read -u`).
pub(crate) async fn copy_from_source<S: Source, W: AsyncWrite + Unpin>(
    source: &mut S,
    out: &mut W,
    unbuffered: bool,
    progress: &Progress,
    output_name: &str,
) -> Result<Copied, CliError> {
    let mut total = 0u64;
    let out_err = |e: std::io::Error| {
        CliError::generic(
            format!("writing {output_name} failed: {e}"),
            "check free space and permissions",
        )
    };
    loop {
        let chunk = source
            .next_chunk()
            .await
            .map_err(|e| from_net(&e, Role::Consumer))?;
        let Some(chunk) = chunk else {
            match out.flush().await {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.map_err(out_err)?,
            }
            return Ok(Copied::Complete(total));
        };
        let data = chunk.as_ref();
        let r = match out.write_all(data).await {
            Ok(()) if unbuffered => out.flush().await,
            r => r,
        };
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(Copied::OutputClosed(total))
            }
            Err(e) => return Err(out_err(e)),
        }
        total += data.len() as u64;
        progress.inc(data.len() as u64);
    }
}

/// A spawned producer/consumer command. Dropped while running, it gets SIGTERM.
pub(crate) struct Job {
    child: Child,
    display: String,
}

impl Job {
    fn spawn(argv: &[String], stdin: Stdio, stdout: Stdio) -> Result<Job, CliError> {
        let Some((prog, args)) = argv.split_first() else {
            return Err(CliError::usage("empty command", "give a command after --"));
        };
        let shown =
            shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "));
        tracing::debug!("starting command: {shown}");
        let child = Command::new(prog)
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                CliError::usage(
                    format!("can't start command `{shown}`: {e}"),
                    "check the command name and that it is on PATH",
                )
            })?;
        Ok(Job {
            child,
            display: shown,
        })
    }

    /// SIGTERM, up to 1 s to exit, then SIGKILL (ZebraStream's terminate/kill).
    pub(crate) async fn terminate(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        send_sigterm(&self.child);
        if tokio::time::timeout(Duration::from_secs(1), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }

    /// Waits for the command to exit; interrupted meanwhile, stops it first
    /// ([`Job::terminate`]) and fails with [`interrupt::stopped`].
    async fn exit(&mut self) -> Result<ExitStatus, CliError> {
        let waited = tokio::select! {
            s = self.child.wait() => Some(s),
            _ = interrupt::signal() => None,
        };
        let Some(status) = waited else {
            self.terminate().await;
            return Err(interrupt::stopped());
        };
        status.map_err(|e| {
            CliError::generic(format!("waiting for `{}` failed: {e}", self.display), "")
        })
    }

    /// The command's failure; `whole`: (consumer) it had been given the whole stream.
    fn failed(&self, status: ExitStatus, exit: Exit, role: &str, whole: bool) -> CliError {
        let how = match status.code() {
            Some(c) => format!("exited with status {c}"),
            None => format!("was killed ({status})"),
        };
        let fix = match (exit, whole) {
            (Exit::ProducerFailed, _) => {
                "the stream was aborted, so the consumer sees it cut short; fix the command"
            }
            // confirmed once in its stdin (PROTOCOL.md §11.5): nothing was dropped
            (_, true) => {
                "it was given the whole stream, which the sender saw delivered; fix the command"
            }
            _ => "the rest of the stream was dropped; fix the command",
        };
        CliError::new(
            exit,
            format!("{role} command `{}` {how}", self.display),
            fix,
        )
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            send_sigterm(&self.child);
        }
    }
}

#[cfg(unix)]
fn send_sigterm(child: &Child) {
    if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
        // SAFETY: kill(2) with a pid we spawned and have not reaped (id() is Some).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

#[cfg(not(unix))]
fn send_sigterm(child: &Child) {
    let _ = child; // no SIGTERM off Unix: terminate() falls back to kill after the wait
}

/// `write -- COMMAND`: runs the command with its stdout going to `sink`. Ok only if the
/// command exited 0 and everything reached the sink; the caller then finishes the stream,
/// and on any error aborts it. On a stream error the command is terminated.
pub(crate) async fn run_producer<S: Sink>(
    argv: &[String],
    sink: &mut S,
    progress: &Progress,
) -> Result<u64, CliError> {
    let mut job = Job::spawn(argv, Stdio::inherit(), Stdio::piped())?;
    let Some(stdout) = job.child.stdout.take() else {
        return Err(CliError::generic(
            "command has no stdout pipe",
            "report this bug",
        ));
    };
    #[cfg(unix)]
    enlarge_pipe(std::os::fd::AsRawFd::as_raw_fd(&stdout));
    let _running = interrupt::command_running();
    let copied = tokio::select! {
        c = copy_to_sink(stdout, sink, false, progress, "the command's output") => c,
        _ = interrupt::signal() => Err(interrupt::stopped()),
    };
    match copied {
        Err(e) => {
            job.terminate().await;
            Err(e)
        }
        Ok(n) => {
            let status = job.exit().await?;
            if status.success() {
                Ok(n)
            } else {
                Err(job.failed(status, Exit::ProducerFailed, "producer", false))
            }
        }
    }
}

/// `read -- COMMAND`: feeds `source` into the command's stdin. A stream error terminates
/// the command **before** its stdin is closed, so it never mistakes a cut-short stream for
/// a complete one. The command closing its stdin early and exiting 0 is fine (like `head`).
pub(crate) async fn run_consumer<S: Source>(
    argv: &[String],
    source: &mut S,
    progress: &Progress,
) -> Result<u64, CliError> {
    let mut job = Job::spawn(argv, Stdio::piped(), Stdio::inherit())?;
    let Some(stdin) = job.child.stdin.take() else {
        return Err(CliError::generic(
            "command has no stdin pipe",
            "report this bug",
        ));
    };
    #[cfg(unix)]
    enlarge_pipe(std::os::fd::AsRawFd::as_raw_fd(&stdin));
    let _running = interrupt::command_running();
    let (fed, total) = feed_consumer(&mut job, stdin, source, progress).await?;
    let whole = fed == ConsumerFed::Whole;
    if whole {
        source.handed_over().await;
    }
    let status = match fed {
        ConsumerFed::Exited(Some(s)) => s,
        _ => job.exit().await?,
    };
    if status.success() {
        Ok(total)
    } else {
        Err(job.failed(status, Exit::ConsumerFailed, "consumer", whole))
    }
}

/// How feeding a consumer command's stdin stopped, short of an error.
#[derive(Debug, PartialEq, Eq)]
enum ConsumerFed {
    /// The stream's clean end: the command was given the whole stream.
    Whole,
    /// The command exited first (`None`: waiting for it failed; [`Job::exit`] waits again).
    Exited(Option<ExitStatus>),
    /// The command closed its stdin early (like `head`).
    StdinClosed,
}

/// Feeds `source` into the consumer command's `stdin` until the stream's clean end, the
/// command's exit or its closing stdin; returns how it stopped and the bytes fed. On an
/// error the command is terminated before its stdin is closed; stdin is closed either way.
async fn feed_consumer<S: Source>(
    job: &mut Job,
    mut stdin: ChildStdin,
    source: &mut S,
    progress: &Progress,
) -> Result<(ConsumerFed, u64), CliError> {
    let mut total = 0u64;
    loop {
        let next = tokio::select! {
            c = source.next_chunk() => Some(c),
            s = job.child.wait() => return Ok((ConsumerFed::Exited(s.ok()), total)),
            _ = interrupt::signal() => None,
        };
        // interrupted: the command stops before its stdin ends (never a clean end)
        let Some(next) = next else {
            job.terminate().await;
            drop(stdin);
            return Err(interrupt::stopped());
        };
        let chunk = match next {
            Err(e) => {
                job.terminate().await;
                drop(stdin);
                return Err(from_net(&e, Role::Consumer));
            }
            Ok(None) => return Ok((ConsumerFed::Whole, total)),
            Ok(Some(chunk)) => chunk,
        };
        let data = chunk.as_ref();
        if let Some(stopped) = write_consumer_chunk(job, &mut stdin, data).await? {
            return Ok((stopped, total));
        }
        total += data.len() as u64;
        progress.inc(data.len() as u64);
    }
}

/// Writes one chunk into the consumer command's `stdin`: `None` once written, else how
/// feeding stopped. On an interrupt or a write error the command is terminated (its stdin
/// still open: the caller closes it after).
async fn write_consumer_chunk(
    job: &mut Job,
    stdin: &mut ChildStdin,
    data: &[u8],
) -> Result<Option<ConsumerFed>, CliError> {
    let wrote = tokio::select! {
        w = stdin.write_all(data) => Some(w),
        s = job.child.wait() => return Ok(Some(ConsumerFed::Exited(s.ok()))),
        _ = interrupt::signal() => None,
    };
    let Some(wrote) = wrote else {
        job.terminate().await;
        return Err(interrupt::stopped());
    };
    match wrote {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Some(ConsumerFed::StdinClosed)),
        Err(e) => {
            job.terminate().await;
            Err(CliError::generic(
                format!("feeding `{}` failed: {e}", job.display),
                "check the command",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use httpipe::client::ErrorCode;

    #[derive(Default)]
    struct VecSink {
        data: Vec<u8>,
        writes: usize,
        fail_after: Option<usize>,
        /// The stream fails this long after the sink is first watched, writes or not.
        fails_in: Option<Duration>,
    }

    impl Sink for VecSink {
        async fn write(&mut self, data: &[u8]) -> Result<(), NetError> {
            if self.fail_after.is_some_and(|n| self.writes >= n) {
                return Err(NetError::new(ErrorCode::PeerDisconnected, "consumer left"));
            }
            self.writes += 1;
            self.data.extend_from_slice(data);
            Ok(())
        }

        async fn failed(&mut self) -> NetError {
            match self.fails_in {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
            NetError::new(ErrorCode::PeerDisconnected, "consumer left")
        }
    }

    struct VecSource {
        chunks: std::collections::VecDeque<Vec<u8>>,
        end: Option<ErrorCode>,
    }

    impl VecSource {
        fn new(chunks: &[&[u8]], end: Option<ErrorCode>) -> Self {
            VecSource {
                chunks: chunks.iter().map(|c| c.to_vec()).collect(),
                end,
            }
        }
    }

    impl Source for VecSource {
        type Chunk = Vec<u8>;
        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, NetError> {
            if let Some(c) = self.chunks.pop_front() {
                return Ok(Some(c));
            }
            match self.end {
                None => Ok(None),
                Some(code) => Err(NetError::new(code, "cut short")),
            }
        }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[tokio::test]
    async fn blocks_vs_unbuffered_reads() {
        use tokio::io::AsyncReadExt;
        let data = vec![7u8; CHUNK + 10];
        // Two reads: 1000 bytes, then the rest. Whole blocks wait for 64 KiB: one write;
        // unbuffered (-u) passes each read on: two writes.
        for (whole, writes) in [(true, 1), (false, 2)] {
            let input = (&data[..1000]).chain(&data[1000..]);
            let mut s = VecSink::default();
            let n = copy_to_sink(input, &mut s, whole, &Progress::hidden(), "x")
                .await
                .expect("copy");
            assert_eq!(n, data.len() as u64);
            assert_eq!(s.writes, writes, "whole blocks: {whole}");
            assert_eq!(s.data, data);
        }
    }

    #[tokio::test]
    async fn producer_ok_and_failure() {
        let mut s = VecSink::default();
        let n = run_producer(&sh("printf hello"), &mut s, &Progress::hidden())
            .await
            .expect("ok");
        assert_eq!((n, s.data.as_slice()), (5, &b"hello"[..]));

        let mut s = VecSink::default();
        let e = run_producer(&sh("printf part; exit 3"), &mut s, &Progress::hidden())
            .await
            .expect_err("fail");
        assert_eq!(e.exit, Exit::ProducerFailed);
        assert!(e.what.contains("exited with status 3"), "{}", e.what);
    }

    /// A stream that fails stops the command: at its next write, or at once while the command
    /// is quiet (regression: a quiet command, `tail -f` of a quiet log, learned it only at its
    /// next output, here 30 s later).
    #[tokio::test]
    async fn producer_stream_failure_terminates_the_command() {
        let at_write = VecSink {
            fail_after: Some(0),
            ..VecSink::default()
        };
        let while_quiet = VecSink {
            fails_in: Some(Duration::from_millis(300)),
            ..VecSink::default()
        };
        for (mut s, written) in [(at_write, &b""[..]), (while_quiet, &b"x\n"[..])] {
            let started = std::time::Instant::now();
            let e = run_producer(&sh("echo x; exec sleep 30"), &mut s, &Progress::hidden())
                .await
                .expect_err("fail");
            assert_eq!(e.exit, Exit::PeerDisconnected);
            assert!(started.elapsed() < Duration::from_secs(5));
            assert_eq!(s.data, written);
        }
    }

    #[tokio::test]
    async fn consumer_ok_failure_and_truncation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        let script = format!("cat > '{}'", out.display());
        let mut src = VecSource::new(&[b"ab", b"cd"], None);
        let n = run_consumer(&sh(&script), &mut src, &Progress::hidden())
            .await
            .expect("ok");
        assert_eq!(n, 4);
        assert_eq!(std::fs::read(&out).expect("read"), b"abcd");

        let mut src = VecSource::new(&[b"ab"], None);
        let e = run_consumer(&sh("cat >/dev/null; exit 4"), &mut src, &Progress::hidden())
            .await
            .expect_err("fail");
        assert_eq!(e.exit, Exit::ConsumerFailed);
        // it had the whole stream: nothing was dropped (it said so before)
        let said = e.to_string();
        assert!(said.contains("given the whole stream"), "{said}");
        assert!(!said.contains("dropped"), "{said}");

        // Truncated stream: the command is terminated, so it can't report success for
        // what it got (here it would write "complete" after EOF on stdin).
        let marker = dir.path().join("complete");
        let script = format!("cat >/dev/null && touch '{}'", marker.display());
        let mut src = VecSource::new(&[b"ab"], Some(ErrorCode::Truncated));
        let e = run_consumer(&sh(&script), &mut src, &Progress::hidden())
            .await
            .expect_err("trunc");
        assert_eq!(e.exit, Exit::PeerDisconnected);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!marker.exists(), "the consumer command saw a clean EOF");
    }

    #[tokio::test]
    async fn consumer_that_stops_reading_early_is_ok() {
        let big = vec![0u8; CHUNK];
        let chunks: Vec<&[u8]> = (0..64).map(|_| &big[..]).collect();
        let mut src = VecSource::new(&chunks, None);
        let n = run_consumer(&sh("head -c 10 >/dev/null"), &mut src, &Progress::hidden())
            .await
            .expect("ok");
        assert!(n < (64 * CHUNK) as u64);
    }

    #[tokio::test]
    async fn copy_from_source_reports_truncation() {
        let mut src = VecSource::new(&[b"ab"], Some(ErrorCode::Truncated));
        let mut out = Vec::new();
        let e = copy_from_source(&mut src, &mut out, false, &Progress::hidden(), "stdout")
            .await
            .expect_err("t");
        assert_eq!(e.exit, Exit::PeerDisconnected);
        let mut src = VecSource::new(&[b"ab", b"c"], None);
        let mut out = Vec::new();
        let r = copy_from_source(&mut src, &mut out, true, &Progress::hidden(), "stdout")
            .await
            .expect("ok");
        assert_eq!(r, Copied::Complete(3));
        assert_eq!(out, b"abc");
    }

    #[tokio::test]
    async fn missing_command_is_a_usage_error() {
        let mut s = VecSink::default();
        let e = run_producer(&["/no/such/cmd".into()], &mut s, &Progress::hidden())
            .await
            .expect_err("e");
        assert_eq!(e.exit, Exit::Usage);
    }
}
