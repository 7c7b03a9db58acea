//! The progress bar on stderr: bytes, rate, and ETA when the size is known. Drawn only
//! when stderr is a terminal; otherwise every call is a no-op.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress(Option<ProgressBar>);

impl Progress {
    pub fn hidden() -> Self {
        Progress(None)
    }

    /// A bar if `wanted` and stderr is a terminal.
    pub fn new(wanted: bool, total: Option<u64>, label: &str) -> Self {
        if !wanted || !std::io::stderr().is_terminal() {
            return Self::hidden();
        }
        let bar = match total {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let template = if total.is_some() {
            "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}"
        } else {
            "{msg} {spinner} {binary_bytes} {binary_bytes_per_sec} {elapsed}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    pub fn set_message(&self, msg: &str) {
        if let Some(b) = &self.0 {
            b.set_message(msg.to_string());
        }
    }

    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            if !b.is_finished() {
                b.abandon();
            }
        }
    }
}

/// The lines a break prints (PROTOCOL.md §12.3), told only when true: "connection lost;
/// reconnecting…" once a break lasted [`QUIET`] (a break that fails sooner ends in its one
/// error line alone) or when it was resumed, and "reconnected (resumed N×)" only when a
/// resume happened — never "resumed 0×" for a break that failed.
pub struct ResumeLines {
    state: std::sync::Arc<std::sync::Mutex<ResumeState>>,
    quiet: Duration,
    out: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
}

/// How long a break stays quiet before "reconnecting…" is told.
pub const QUIET: Duration = Duration::from_secs(2);

#[derive(Default)]
struct ResumeState {
    /// Counts breaks and their ends, so a stale timer tells nothing.
    epoch: u64,
    /// "reconnecting…" was told for the current break.
    told: bool,
    /// Resumes before the current break.
    resumed: u32,
}

const LOST: &str = "httpipe: connection lost; reconnecting…";

impl ResumeLines {
    /// Lines to stderr after [`QUIET`].
    pub fn stderr() -> Self {
        Self::new(QUIET, std::sync::Arc::new(|l: &str| eprintln!("{l}")))
    }

    pub fn new(quiet: Duration, out: std::sync::Arc<dyn Fn(&str) + Send + Sync>) -> Self {
        ResumeLines {
            state: Default::default(),
            quiet,
            out,
        }
    }

    /// A break started (`reconnecting`) or ended, with the resumes so far.
    pub fn on_resume(&self, reconnecting: bool, resumed: u32) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        s.epoch += 1;
        if reconnecting {
            s.told = false;
            // The resumes before this break (a `--serve` round starts again at 0).
            s.resumed = resumed;
            let (epoch, state, out, quiet) =
                (s.epoch, self.state.clone(), self.out.clone(), self.quiet);
            std::thread::spawn(move || {
                std::thread::sleep(quiet);
                if let Ok(mut s) = state.lock() {
                    if s.epoch == epoch && !s.told {
                        s.told = true;
                        out(LOST);
                    }
                }
            });
            return;
        }
        if resumed > s.resumed {
            if !s.told {
                (self.out)(LOST);
            }
            s.resumed = resumed;
            (self.out)(&format!("httpipe: reconnected (resumed {resumed}×)"));
        }
        s.told = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn lines(quiet_ms: u64) -> (ResumeLines, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let out = Arc::new(move |l: &str| s.lock().expect("lock").push(l.to_string()));
        (ResumeLines::new(Duration::from_millis(quiet_ms), out), seen)
    }

    #[test]
    fn a_break_that_fails_at_once_tells_nothing() {
        let (r, seen) = lines(200);
        r.on_resume(true, 0);
        r.on_resume(false, 0); // the break ended without a resume: the error line follows
        std::thread::sleep(Duration::from_millis(400));
        assert!(seen.lock().expect("lock").is_empty(), "{seen:?}");
    }

    #[test]
    fn a_resume_is_told_with_its_break_and_a_long_break_at_once() {
        let (r, seen) = lines(100);
        r.on_resume(true, 0);
        r.on_resume(false, 1);
        assert_eq!(
            *seen.lock().expect("lock"),
            [LOST, "httpipe: reconnected (resumed 1×)"]
        );
        // A long break: "reconnecting…" after the quiet time, once; a failed end adds nothing.
        r.on_resume(true, 1);
        std::thread::sleep(Duration::from_millis(300));
        r.on_resume(false, 1);
        assert_eq!(seen.lock().expect("lock").len(), 3);
        assert_eq!(seen.lock().expect("lock")[2], LOST);
        // The next resume is told as 2×.
        r.on_resume(true, 1);
        r.on_resume(false, 2);
        assert_eq!(
            seen.lock().expect("lock")[3..],
            [LOST, "httpipe: reconnected (resumed 2×)"]
        );
        // The next transfer (a `--serve` round) counts from 0 again.
        r.on_resume(true, 0);
        r.on_resume(false, 1);
        assert_eq!(
            seen.lock().expect("lock")[5..],
            [LOST, "httpipe: reconnected (resumed 1×)"]
        );
    }
}
