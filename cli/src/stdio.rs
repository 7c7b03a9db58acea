//! Standard input and output at pipe speed: threads of their own read fd 0 and write fd 1,
//! and the blocks go between them and the network without a copy. tokio's `stdin()` and
//! `stdout()` copy every block through their own buffer and the blocking pool (one round
//! trip per read), and std's `Stdout` under them is line-buffered: it scans every byte for a
//! newline (`memrchr` was 9 % of `httpipe read`'s CPU on a 1 GiB transfer).

use std::io::Write;
#[cfg(unix)]
use std::mem::ManuallyDrop;

use tokio::sync::{mpsc, oneshot};

use crate::exit::{from_net, CliError, Role};
use crate::pipe::{Copied, Sink, Source, CHUNK, READ_MAX};
use crate::progress::Progress;

/// Chunks queued for the writing thread (write-behind: the network goes on meanwhile).
const QUEUE: usize = 4;

/// What the writing thread did: bytes written, and how it stopped.
type Outcome = (u64, std::io::Result<()>);

/// fd 1 as a file, never closed by us (elsewhere than unix, std's stdout).
#[cfg(unix)]
fn stdout_fd() -> ManuallyDrop<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: fd 1 is open for the process's life; `ManuallyDrop` never closes it.
    ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) })
}

#[cfg(not(unix))]
fn stdout_fd() -> std::io::Stdout {
    std::io::stdout()
}

/// Standard output closed before the stream's end (`read | head`): the rest was not read
/// and the sender is told the receiver cancelled, so this is no exit 0 (which says the
/// transfer completed); `read -- COMMAND` is the way to keep only part of a stream.
pub(crate) fn output_closed(written: u64) -> CliError {
    CliError::generic(
        format!(
            "stdout was closed after {written} bytes, before the stream's end: the rest was not read (the sender was told)"
        ),
        "to keep only the start of a stream, run the reader as `httpipe read -- head -c N`",
    )
}

/// Copies `source` to standard output (each chunk is written as soon as the thread gets it,
/// so `read -u` needs nothing more). Like [`crate::pipe::copy_from_source`]: a closed output
/// (broken pipe) ends the copy with [`Copied::OutputClosed`] and what was written; a failed
/// source is reported after the chunks before it were written.
pub(crate) async fn copy_to_stdout<S>(
    source: &mut S,
    progress: &Progress,
) -> Result<Copied, CliError>
where
    S: Source,
    S::Chunk: Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<S::Chunk>(QUEUE);
    let (done_tx, done) = oneshot::channel::<Outcome>();
    let spawned = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            let mut out = stdout_fd();
            let mut written = 0u64;
            let mut result = Ok(());
            while let Some(chunk) = rx.blocking_recv() {
                let data = chunk.as_ref();
                if let Err(e) = out.write_all(data) {
                    result = Err(e);
                    break;
                }
                written += data.len() as u64;
            }
            let _ = done_tx.send((written, result));
        });
    if let Err(e) = spawned {
        return Err(CliError::generic(
            format!("can't start the thread writing stdout: {e}"),
            "check the system's limits",
        ));
    }
    let failed = loop {
        let chunk = match source.next_chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        let n = chunk.as_ref().len() as u64;
        if tx.send(chunk).await.is_err() {
            break None; // the thread stopped: its outcome says why
        }
        progress.inc(n);
    };
    drop(tx);
    let (written, result) = done.await.unwrap_or((0, Ok(())));
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Copied::OutputClosed(written)),
        Err(e) => Err(CliError::generic(
            format!("writing stdout failed: {e}"),
            "check free space and permissions",
        )),
        Ok(()) => match failed {
            Some(e) => Err(from_net(&e, Role::Consumer)),
            None => Ok(Copied::Complete(written)),
        },
    }
}

/// Standard input read by a thread of its own, one block ahead of the network, into buffers
/// handed on without a copy (tokio's `stdin()` reads only when asked, through its blocking
/// pool, and copies out of its own buffer). Blocks as [`crate::pipe::copy_to_sink`]: with
/// `whole_blocks`, at least [`CHUNK`] bytes (or EOF) each; else whatever one read returns;
/// at most [`READ_MAX`].
#[cfg(unix)]
pub(crate) async fn copy_stdin_to_sink<S: Sink>(
    sink: &mut S,
    whole_blocks: bool,
    progress: &Progress,
) -> Result<u64, CliError> {
    let (tx, mut rx) = mpsc::channel::<std::io::Result<Vec<u8>>>(2);
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || loop {
            let mut buf = Vec::with_capacity(READ_MAX);
            let read = read_block(&mut buf, whole_blocks);
            let end = !matches!(read, Ok(n) if n > 0);
            if tx.blocking_send(read.map(|_| buf)).is_err() || end {
                return;
            }
        });
    if let Err(e) = spawned {
        return Err(CliError::generic(
            format!("can't start the thread reading stdin: {e}"),
            "check the system's limits",
        ));
    }
    let mut total = 0u64;
    loop {
        // a quiet input (`tail -f | httpipe write`) must not hide the transfer's end: its
        // failure (the receiver left, a break not resumed) is taken at once, as `copy_to_sink`
        // does for a producer command
        let next = tokio::select! {
            b = rx.recv() => b,
            e = sink.failed() => return Err(from_net(&e, Role::Producer)),
        };
        let Some(block) = next else { break };
        let block = block.map_err(|e| {
            CliError::generic(format!("reading stdin failed: {e}"), "check the input")
        })?;
        if block.is_empty() {
            return Ok(total);
        }
        let n = block.len() as u64;
        sink.write_owned(block)
            .await
            .map_err(|e| from_net(&e, Role::Producer))?;
        total += n;
        progress.inc(n);
    }
    Err(CliError::generic(
        "reading stdin failed: its thread stopped",
        "check the input",
    ))
}

/// Reads fd 0 into `buf`'s spare capacity: one read, or with `whole_blocks` until at least
/// [`CHUNK`] bytes or EOF. Returns the bytes read (0: EOF).
#[cfg(unix)]
fn read_block(buf: &mut Vec<u8>, whole_blocks: bool) -> std::io::Result<usize> {
    loop {
        let spare = buf.capacity() - buf.len();
        // SAFETY: read(2) writes at most `spare` bytes into the vector's spare capacity;
        // `set_len` then covers only the bytes it wrote.
        let n = unsafe {
            libc::read(
                0,
                buf.as_mut_ptr().add(buf.len()).cast::<libc::c_void>(),
                spare,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = n as usize;
        // SAFETY: see above.
        unsafe { buf.set_len(buf.len() + n) };
        if n == 0 || !whole_blocks || buf.len() >= CHUNK || buf.len() == buf.capacity() {
            return Ok(buf.len());
        }
    }
}
