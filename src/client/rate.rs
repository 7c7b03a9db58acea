//! Progress reporting: bytes so far and a smoothed rate, emitted at most every
//! [`PROGRESS_INTERVAL_MS`] (and always at the end).

/// Minimum time between two progress callbacks, in milliseconds.
pub const PROGRESS_INTERVAL_MS: f64 = 100.0;
/// The rate is measured over roughly this window, in milliseconds.
const WINDOW_MS: f64 = 2000.0;

/// One progress report: bytes so far, the total if known, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Bytes so far (plaintext when encrypting).
    pub bytes: u64,
    /// The total, when known.
    pub total: Option<u64>,
    /// The recent rate.
    pub bytes_per_second: f64,
    /// Breaks resumed after so far (PROTOCOL.md §12.3).
    pub resumed: u32,
    /// A break happened and the two sides are meeting again.
    pub reconnecting: bool,
}

/// Counts bytes against a clock given by the caller (milliseconds).
#[derive(Debug)]
pub struct RateMeter {
    total: Option<u64>,
    bytes: u64,
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    start_ms: f64,
    last_emit_ms: f64,
    /// (time, bytes) at the start of the current and the previous window.
    window: [(f64, u64); 2],
    resumed: u32,
    reconnecting: bool,
}

impl RateMeter {
    pub fn new(now_ms: f64, total: Option<u64>) -> Self {
        RateMeter {
            total,
            bytes: 0,
            start_ms: now_ms,
            last_emit_ms: f64::NEG_INFINITY,
            window: [(now_ms, 0), (now_ms, 0)],
            resumed: 0,
            reconnecting: false,
        }
    }

    /// The resume state the next reports carry (§12.3).
    pub fn set_resume(&mut self, reconnecting: bool, resumed: u32) {
        self.reconnecting = reconnecting;
        self.resumed = resumed;
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn elapsed_ms(&self, now_ms: f64) -> f64 {
        (now_ms - self.start_ms).max(0.0)
    }

    /// Adds `n` bytes; returns a report when one is due.
    pub fn add(&mut self, n: u64, now_ms: f64) -> Option<Progress> {
        self.bytes += n;
        if now_ms - self.window[1].0 >= WINDOW_MS / 2.0 {
            self.window = [self.window[1], (now_ms, self.bytes)];
        }
        if now_ms - self.last_emit_ms >= PROGRESS_INTERVAL_MS {
            Some(self.report(now_ms))
        } else {
            None
        }
    }

    /// The report to emit now (also used for the final one).
    pub fn report(&mut self, now_ms: f64) -> Progress {
        self.last_emit_ms = now_ms;
        let (t0, b0) = self.window[0];
        let span = now_ms - t0;
        let bytes_per_second = if span > 0.0 {
            (self.bytes - b0) as f64 * 1000.0 / span
        } else {
            0.0
        };
        Progress {
            bytes: self.bytes,
            total: self.total,
            bytes_per_second,
            resumed: self.resumed,
            reconnecting: self.reconnecting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttles_and_measures() {
        let mut m = RateMeter::new(0.0, Some(10_000));
        assert!(m.add(100, 0.0).is_some());
        assert!(m.add(100, 50.0).is_none());
        let p = m.add(800, 1000.0).unwrap();
        assert_eq!(p.bytes, 1000);
        assert_eq!(p.total, Some(10_000));
        assert!((p.bytes_per_second - 1000.0).abs() < 1e-6, "{p:?}");
        // Steady 1 MB/s for 10 s: the windowed rate follows.
        for i in 1..=100 {
            m.add(100_000, 1000.0 + i as f64 * 100.0);
        }
        let p = m.report(11_000.0);
        assert!(
            (p.bytes_per_second - 1_000_000.0).abs() < 100_000.0,
            "{p:?}"
        );
        assert_eq!(m.bytes(), 10_001_000);
        assert_eq!(m.elapsed_ms(11_000.0), 11_000.0);
    }
}
