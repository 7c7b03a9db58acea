//! Ctrl-C, SIGTERM and SIGHUP. An interrupted transfer is dropped: its last words (a failure
//! notice, a withdrawal, a `cancelled` receipt, a consumer's word that it left: PROTOCOL.md
//! §12.2–§12.5) tell a peer that is listening at once instead of leaving it to wait out its
//! resume time (one still reading what was sent before learns it only then), and the message
//! says how far the transfer got ([`Stage`]): a sender interrupted while it waits only for the
//! receipt did not abort its stream, and a receipt that arrives meanwhile is its verdict.

use std::future::Future;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::watch;

use crate::exit::{CliError, Exit, Role};

/// How long an interrupted process gives its last words before it exits.
const LAST_WORDS: Duration = Duration::from_secs(2);
/// How long an interrupted sender whose source ended waits for a receipt on its way.
const RECEIPT_GRACE: Duration = Duration::from_secs(4);
/// How long interrupted work has to stop the command it runs (SIGTERM, 1 s, SIGKILL).
const COMMAND_STOP: Duration = Duration::from_millis(1500);

/// How far this process's transfer got: what an interrupt stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// Before the stream started (the rendezvous, a short code's exchange): no data moved.
    Meeting = 0,
    /// Data is moving: an interrupt aborts the stream.
    Streaming = 1,
    /// (producer) The source ended: what is left is the upload's end and the receiver's
    /// receipt (§12.2).
    Sent = 2,
    /// (consumer) The whole stream is in and the receipt was given: the sender has its
    /// verdict; what is left is this side's own work (a consumer command).
    Confirmed = 3,
}

static STAGE: AtomicU8 = AtomicU8::new(Stage::Meeting as u8);

/// The transfer reached `stage` (one transfer at a time per process; `--serve` starts each
/// round at [`Stage::Meeting`]).
pub fn enter(stage: Stage) {
    STAGE.store(stage as u8, Ordering::Relaxed);
}

fn current() -> Stage {
    match STAGE.load(Ordering::Relaxed) {
        0 => Stage::Meeting,
        1 => Stage::Streaming,
        2 => Stage::Sent,
        _ => Stage::Confirmed,
    }
}

/// Runs `work` until it ends or the process is told to stop (SIGINT, SIGTERM, SIGHUP).
/// Interrupted, `work` goes on for its [`grace`] (a receipt on its way makes a true
/// "delivered"; a command is stopped before its stdin ends), is then dropped, its last words
/// get up to [`LAST_WORDS`], and the error says what the interrupt stopped.
pub async fn or_interrupted<T>(
    role: Role,
    work: impl Future<Output = Result<T, CliError>>,
) -> Result<T, CliError> {
    match until_interrupted(role, work).await {
        Ok(r) => r,
        Err(stopped) => Err(stopped.error),
    }
}

/// An interrupt stopped a transfer (or the wait for one).
pub struct Interrupted {
    /// What it stopped, as [`or_interrupted`] reports it.
    pub error: CliError,
    /// No data had moved yet (`--serve` waiting for its next peer stops quietly).
    pub idle: bool,
}

/// [`or_interrupted`], telling an interrupt (`Err`) from `work`'s own end (`Ok`). Work that
/// fails once a signal was caught failed of it (a terminal's Ctrl-C reaches the command and
/// the feeding pipeline too, which may stop first): the error is the interrupt's.
pub async fn until_interrupted<T>(
    role: Role,
    work: impl Future<Output = Result<T, CliError>>,
) -> Result<Result<T, CliError>, Interrupted> {
    let mut work = Box::pin(work);
    let ended = tokio::select! {
        r = &mut work => Some(r),
        _ = signal() => None,
    };
    let r = match ended {
        Some(r) => r,
        // what the work may still settle itself: a receipt on its way, a command it stops
        // before its stdin ends (PROTOCOL.md §11.5)
        None => match tokio::time::timeout(grace(), &mut work).await {
            Ok(r) => r,
            Err(_) => Err(stopped()),
        },
    };
    drop(work);
    let stage = current();
    match (r, caught()) {
        (Err(_), Some(signal)) => {
            settle_last_words().await;
            Err(Interrupted {
                error: interrupted(signal, stage, role),
                idle: stage == Stage::Meeting,
            })
        }
        (r, _) => Ok(r),
    }
}

/// How long interrupted work may go on: a sender whose source ended, for its receipt; work
/// running a command, to stop it (SIGTERM, up to 1 s, SIGKILL); anything else not at all.
fn grace() -> Duration {
    if current() == Stage::Sent {
        RECEIPT_GRACE
    } else if COMMANDS.load(Ordering::Relaxed) > 0 {
        COMMAND_STOP
    } else {
        Duration::ZERO
    }
}

/// The error of work that stopped itself on an interrupt; [`until_interrupted`] reports the
/// interrupt instead.
pub fn stopped() -> CliError {
    CliError::generic("interrupted", "")
}

/// A command runs ([`command_running`]): an interrupt lets its work stop it.
static COMMANDS: AtomicUsize = AtomicUsize::new(0);

/// Held while a command runs whose work stops it on an interrupt itself, stdin still open
/// (so it never reads a clean end of a cut stream): the work is given [`COMMAND_STOP`]
/// instead of being dropped at once.
pub struct CommandRunning(());

pub fn command_running() -> CommandRunning {
    COMMANDS.fetch_add(1, Ordering::Relaxed);
    CommandRunning(())
}

impl Drop for CommandRunning {
    fn drop(&mut self) {
        COMMANDS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The transfer this process was running is dropped: its last words get a moment before exit.
pub async fn settle_last_words() {
    httpipe::native::settle_last_words(LAST_WORDS).await;
}

/// What an interrupt at `stage` stopped.
fn interrupted(signal: &str, stage: Stage, role: Role) -> CliError {
    let (what, fix) = match (stage, role) {
        (Stage::Meeting, Role::Producer) => ("before the stream started", "nothing was sent"),
        (Stage::Meeting, Role::Consumer) => ("before the stream started", "nothing was received"),
        (Stage::Streaming, _) => ("", "the stream was aborted"),
        (Stage::Sent, _) => (
            "before the receiver confirmed the stream",
            "the whole input was read, but delivery is unconfirmed; ask the receiving side",
        ),
        (Stage::Confirmed, _) => (
            "after the whole stream was received and confirmed",
            "the sender saw it delivered; only this side's own work was stopped",
        ),
    };
    let what = match what {
        "" => format!("interrupted by {signal}"),
        w => format!("interrupted by {signal} {w}"),
    };
    CliError::new(Exit::Generic, what, fix)
}

/// Resolves at SIGINT, SIGTERM or SIGHUP (Ctrl-C elsewhere) with the signal's name: at once
/// when one came already. The listener, installed at the first call, stays: a signal that
/// arrives while nothing waits for it (`--serve` pausing after a failed round) is not lost,
/// and [`caught`] knows of it at once. A second signal exits at once (status 128 + its number),
/// without last words: the user insisted.
pub async fn signal() -> &'static str {
    static LATCH: OnceLock<watch::Receiver<Option<&'static str>>> = OnceLock::new();
    let mut latch = LATCH
        .get_or_init(|| {
            catch_synchronously();
            let (tx, rx) = watch::channel(None);
            tokio::spawn(async move {
                let _ = tx.send(Some(next_signal().await));
            });
            rx
        })
        .clone();
    let name = latch.wait_for(Option::is_some).await.map(|name| *name);
    match name {
        Ok(name) => name.unwrap_or("SIGINT"),
        // the listener is gone (the runtime is shutting down): no signal will come
        Err(_) => std::future::pending().await,
    }
}

/// The first signal caught (its number), set in the signal handler itself.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// The signal this process caught, if any: known the moment it arrived, before the work it
/// stops can see its effects (a feeder that died of the same Ctrl-C, a killed command).
pub fn caught() -> Option<&'static str> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        n => Some(signal_name(n)),
    }
}

fn signal_name(n: i32) -> &'static str {
    #[cfg(unix)]
    match n {
        libc::SIGTERM => return "SIGTERM",
        libc::SIGHUP => return "SIGHUP",
        _ => {}
    }
    let _ = n;
    "SIGINT"
}

#[cfg(unix)]
fn catch_synchronously() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let on_signal = move || {
            if CAUGHT
                .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                // SAFETY: _exit(2) is async-signal-safe.
                unsafe { libc::_exit(128 + sig) };
            }
        };
        // SAFETY: the action only does async-signal-safe things (an atomic, _exit).
        if unsafe { signal_hook_registry::register(sig, on_signal) }.is_err() {
            tracing::debug!("signal {sig}: no handler (only the async listener)");
        }
    }
}

#[cfg(not(unix))]
fn catch_synchronously() {}

async fn next_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        CAUGHT.store(2, Ordering::SeqCst);
        "Ctrl-C"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupt_says_what_it_stopped() {
        let say = |stage, role| interrupted("SIGINT", stage, role).to_string();
        assert_eq!(
            say(Stage::Meeting, Role::Producer),
            "httpipe: interrupted by SIGINT before the stream started; nothing was sent"
        );
        assert!(
            say(Stage::Streaming, Role::Consumer).ends_with("by SIGINT; the stream was aborted")
        );
        assert!(say(Stage::Sent, Role::Producer).contains("delivery is unconfirmed"));
        assert!(say(Stage::Confirmed, Role::Consumer).contains("the sender saw it delivered"));
    }

    #[tokio::test]
    async fn work_that_ends_is_its_own_verdict() {
        let r = or_interrupted(Role::Producer, async { Ok::<_, CliError>(7) }).await;
        assert_eq!(r, Ok(7));
    }
}
