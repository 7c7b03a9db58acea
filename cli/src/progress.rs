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
