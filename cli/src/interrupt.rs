//! Ctrl-C and SIGTERM. An interrupted transfer is dropped: its last words (a failure notice, a
//! withdrawal, a `cancelled` receipt, a consumer's word that it left: PROTOCOL.md §12.2–§12.5)
//! tell the peer at once instead of leaving it to wait out its resume time, and the message
//! says how far the transfer got ([`Stage`]): a sender interrupted while it waits only for the
//! receipt did not abort its stream, and a receipt that arrives meanwhile is its verdict.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::watch;

use crate::exit::{CliError, Exit, Role};

/// How long an interrupted process gives its last words (and a receipt on its way) before it
/// exits.
const LAST_WORDS: Duration = Duration::from_secs(2);

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

/// Runs `work` until it ends or the process is told to stop (SIGINT, SIGTERM). Interrupted:
/// a sender whose source ended gets up to [`LAST_WORDS`] for its receipt (one on its way
/// makes a true "delivered"); otherwise `work` is dropped, its last words get up to
/// [`LAST_WORDS`], and the error says what the interrupt stopped.
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

/// [`or_interrupted`], telling an interrupt (`Err`) from `work`'s own end (`Ok`).
pub async fn until_interrupted<T>(
    role: Role,
    work: impl Future<Output = Result<T, CliError>>,
) -> Result<Result<T, CliError>, Interrupted> {
    let mut work = Box::pin(work);
    let signal = tokio::select! {
        r = &mut work => return Ok(r),
        s = signal() => s,
    };
    let stage = current();
    if stage == Stage::Sent {
        if let Ok(r) = tokio::time::timeout(LAST_WORDS, &mut work).await {
            return Ok(r);
        }
    }
    drop(work);
    settle_last_words().await;
    Err(Interrupted {
        error: interrupted(signal, stage, role),
        idle: stage == Stage::Meeting,
    })
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

/// Resolves at SIGINT or SIGTERM (Ctrl-C elsewhere) with the signal's name: at once when one
/// came already. The listener, installed at the first call, stays: a signal that arrives while
/// nothing waits for it (`--serve` pausing after a failed round) is not lost.
pub async fn signal() -> &'static str {
    static CAUGHT: OnceLock<watch::Receiver<Option<&'static str>>> = OnceLock::new();
    let mut caught = CAUGHT
        .get_or_init(|| {
            let (tx, rx) = watch::channel(None);
            tokio::spawn(async move {
                let _ = tx.send(Some(next_signal().await));
            });
            rx
        })
        .clone();
    let name = caught.wait_for(Option::is_some).await.map(|name| *name);
    match name {
        Ok(name) => name.unwrap_or("SIGINT"),
        // the listener is gone (the runtime is shutting down): no signal will come
        Err(_) => std::future::pending().await,
    }
}

async fn next_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
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
