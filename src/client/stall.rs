//! When a connection that stops without closing counts as stalled (`PROTOCOL.md` §12.4), as
//! timers the core owns: a driver tells the producer how long its upload's body has waited
//! for the HTTP client (`Producer::poll_stall`) and
//! tells the consumer's resumer when its current read began waiting
//! (`Resumer::poll_stall`); each answers with a
//! [`StallStep`]: sleep until a time, or make the stall call now. The waits, the repeat
//! rules and the call are decided here once, for the wasm and the native drivers alike.

use super::request::Request;
use crate::protocol::hello::STALL_AFTER_S;

/// Milliseconds a side waits with bytes between it and its peer before it asks (§12.4).
pub(crate) const STALL_AFTER_MS: f64 = STALL_AFTER_S * 1000.0;
/// The shortest sleep a stall watch is given (a timer that fires within microseconds of its
/// deadline would spin on rounding).
pub(crate) const STALL_TICK_MS: f64 = 250.0;
/// Milliseconds before a producer's stall watch looks again when no call can be made now
/// (no streaming upload under way yet, or a call is out).
pub(crate) const STALL_RECHECK_MS: f64 = 1000.0;

/// What a driver's stall watch does next (§12.4).
#[derive(Debug)]
pub enum StallStep {
    /// No stall watch (the sides don't resume, or a resume is under way): sleep no timer for
    /// it until the next read or upload.
    Off,
    /// Ask again at this time (milliseconds on the driver's clock), or earlier when the body
    /// moves.
    WakeAt(f64),
    /// Make this call and hand its answer back; take nothing from the body (the producer's
    /// upload, the consumer's response) until then.
    Call(Request),
}

/// A body that has waited since `since_ms`: `None` once it waited long enough to ask, else
/// the time to look again.
pub(crate) fn not_yet(now_ms: f64, since_ms: f64) -> Option<f64> {
    let due = since_ms + STALL_AFTER_MS;
    (now_ms < due).then(|| due.max(now_ms + STALL_TICK_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_asked_about_after_stall_after_s() {
        assert_eq!(not_yet(0.0, 0.0), Some(STALL_AFTER_MS));
        assert_eq!(not_yet(9_000.0, 0.0), Some(STALL_AFTER_MS));
        assert_eq!(not_yet(10_000.0, 0.0), None);
        assert_eq!(not_yet(12_000.0, 1_000.0), None);
        // close to the deadline: a tick, never a timer of microseconds
        assert_eq!(not_yet(9_999.9, 0.0), Some(9_999.9 + STALL_TICK_MS));
    }
}
