//! The I/O half of the core's stall watch in the fetch driver (`PROTOCOL.md` §12.4, decided
//! in [`crate::client::stall`]; the mirror of `native/stall.rs`): one timer set to the time
//! the core names, and the one stall call the core asks for. The driver asks the core when
//! the timer fires and hands it the call's answer; it decides nothing here.

use super::bindings::{now_ms, Delay};
use super::http::{exchange, JsHeaders};
use super::stop::Abort;
use crate::client::request::Request;

/// The watch's timer, one that lives across reads (a timer per read would be a
/// `setTimeout` and a `clearTimeout` per chunk).
#[derive(Default)]
pub struct StallTimer {
    timer: Option<Delay>,
    /// When the timer fires (ms).
    due_ms: f64,
}

impl StallTimer {
    /// Fires at `due_ms` at the latest (the timer already running is kept when it fires no
    /// later than that: the caller asks the core again when it fires).
    pub async fn until(&mut self, due_ms: f64) {
        if self.timer.is_none() || self.due_ms > due_ms {
            self.timer = Some(Delay::new((due_ms - now_ms()).max(0.0)));
            self.due_ms = due_ms;
        }
        if let Some(t) = self.timer.as_mut() {
            t.await;
        }
        self.timer = None;
    }
}

/// Makes the stall call the core asked for, stopped with `signal`: its status and headers,
/// `None` when it failed below HTTP (the core reads on).
pub async fn call(req: &Request, signal: Option<web_sys::AbortSignal>) -> Option<(u16, JsHeaders)> {
    let mut abort = Abort::new(signal).ok()?;
    let (status, headers, _) = exchange(req, &mut abort, None).await.ok()?;
    Some((status, headers))
}
