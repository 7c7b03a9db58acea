//! Giving memory back to the operating system after load.
//!
//! glibc's `malloc` keeps memory freed in the middle of its heaps (and in the per-thread
//! arenas the tokio workers use) for reuse; it returns pages only from the very top of the
//! main heap. After a burst of connections and transfers the relay's RSS therefore stayed
//! near its peak, and grew from burst to burst as each one fragmented the heaps differently.
//! [`spawn`] runs a small task that calls glibc's `malloc_trim(0)` — which releases every
//! free page of every arena (`madvise(MADV_DONTNEED)`), not just the top — once load has
//! gone: when the number of waiting peers and transfers fell to half its peak since the last
//! trim, or at the first quiet second (no new request, no byte relayed) after activity; and
//! once more two seconds later, for what the teardown of connections freed meanwhile.
//! [`configure`] (called by the binary before its runtime starts) also limits glibc to one
//! arena instead of eight per CPU: one heap to fragment and to leave pages in. Measured with
//! `relay/tests/memory.rs`: after load, anonymous RSS came back to ~1 MB above its pre-load
//! value with one arena, ~2 MB with the default; per waiting peer it costs no memory
//! (`BENCH_ONLY=mem`); allocations are few per relayed chunk, so the shared lock is cheap.
//! A trim costs a few milliseconds at most and happens only on the way down, never in steady
//! state. Other allocators (mimalloc, jemalloc) were measured to cost more memory per
//! waiting peer (README, relay benchmark), so the allocator stays glibc's.
//!
//! On other C libraries (musl, macOS) this is a no-op.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::data::Plane;

/// How often load is sampled.
const TICK: Duration = Duration::from_secs(1);
/// A trim is repeated this many ticks later.
const FOLLOWUP_TICKS: u8 = 2;
/// A drop in load smaller than this (waiting peers + transfers) isn't worth a trim.
const MIN_DROP: u64 = 16;

/// Starts the trimming task for the relay whose Data API is `plane`; it ends with the relay.
pub fn spawn(plane: &Arc<Plane>) {
    let plane = Arc::downgrade(plane);
    tokio::spawn(run(plane));
}

async fn run(state: Weak<Plane>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut policy = Policy::default();
    loop {
        tick.tick().await;
        let Some(s) = state.upgrade() else { return };
        let c = s.hub.counts();
        let sample = Sample {
            load: (c.waiting_producers
                + c.waiting_consumers
                + c.connect_waiters
                + c.active_transfers) as u64
                + s.metrics.segmented_active(),
            activity: s
                .metrics
                .requests_total()
                .wrapping_add(s.metrics.bytes_relayed()),
        };
        drop(s);
        if policy.should_trim(sample) {
            let t = std::time::Instant::now();
            let released = trim();
            tracing::debug!(
                released,
                us = t.elapsed().as_micros() as u64,
                load = sample.load,
                "malloc_trim"
            );
        }
    }
}

/// One look at the relay.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Waiting peers, Connect waiters, transfers and segmented uploads now.
    load: u64,
    /// A counter that moves with any request or relayed byte.
    activity: u64,
}

/// When to trim: after load fell to half its peak, or at the first quiet tick after activity.
#[derive(Debug, Default)]
struct Policy {
    /// Highest load since the last trim.
    peak: u64,
    /// `activity` at the previous tick.
    last_activity: u64,
    /// Something happened since the last trim.
    dirty: bool,
    /// Ticks until a follow-up trim (0: none due): connections and tasks are torn down a
    /// little after the load that triggered a trim is gone, freeing more.
    followup: u8,
}

impl Policy {
    fn should_trim(&mut self, s: Sample) -> bool {
        let active_now = s.activity != self.last_activity;
        self.last_activity = s.activity;
        self.dirty |= active_now;
        self.peak = self.peak.max(s.load);
        let dropped = self.peak - s.load >= MIN_DROP && s.load <= self.peak / 2;
        let quiet_after_activity = self.dirty && !active_now;
        let followup_due = self.followup == 1;
        self.followup = self.followup.saturating_sub(1);
        if dropped || quiet_after_activity {
            self.peak = s.load;
            self.dirty = false;
            self.followup = FOLLOWUP_TICKS;
            true
        } else {
            followup_due
        }
    }
}

/// glibc's arena limit: the main heap only, shared by all threads.
const ARENA_MAX: i32 = 1;
/// Blocks up to this size come from the heap, not from `mmap` of their own: an HTTP/1.1
/// read buffer (`server::H1_BUF_BYTES`) is one, allocated and freed per block relayed.
pub(crate) const MMAP_THRESHOLD: i32 = 4 << 20;
/// Free memory at the heap's top is given back by `free` only beyond this much. With glibc's
/// default (twice the largest block seen) every relayed block moved the top: `brk` up, pages
/// faulted in and zeroed, `brk` down — 2 000 `brk` calls per 2 GiB relayed. What stays at
/// the top is given back after load by [`spawn`]'s trim.
const TRIM_THRESHOLD: i32 = 16 << 20;

/// Allocator settings; call before threads allocate (arenas are created on first use).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn configure() {
    // from glibc's `malloc.h`
    const M_TRIM_THRESHOLD: std::os::raw::c_int = -1;
    const M_MMAP_THRESHOLD: std::os::raw::c_int = -3;
    const M_ARENA_MAX: std::os::raw::c_int = -8;
    extern "C" {
        fn mallopt(param: std::os::raw::c_int, value: std::os::raw::c_int) -> std::os::raw::c_int;
    }
    // SAFETY: glibc's `mallopt` (this is a gnu target) with documented parameters; it only
    // changes the allocator's own settings.
    unsafe {
        mallopt(M_ARENA_MAX, ARENA_MAX);
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Allocator settings (no-op: not glibc).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn configure() {}

/// Returns free heap memory to the OS; true if any was released.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim() -> bool {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::os::raw::c_int;
    }
    // SAFETY: `malloc_trim` is glibc's (this is a gnu target); it takes the allocator's own
    // locks and only releases memory that is free.
    unsafe { malloc_trim(0) != 0 }
}

/// Returns free heap memory to the OS (no-op: not glibc).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(load: u64, activity: u64) -> Sample {
        Sample { load, activity }
    }

    #[test]
    fn trims_once_when_quiet_after_activity() {
        let mut p = Policy::default();
        assert!(!p.should_trim(s(0, 0)), "nothing happened yet");
        assert!(!p.should_trim(s(10, 5)), "busy");
        assert!(!p.should_trim(s(10, 9)), "busy");
        assert!(p.should_trim(s(10, 9)), "first quiet tick");
        assert!(!p.should_trim(s(10, 9)), "still quiet");
        assert!(p.should_trim(s(10, 9)), "the follow-up");
        assert!(!p.should_trim(s(10, 9)), "still quiet: twice is enough");
        assert!(!p.should_trim(s(10, 9)));
    }

    #[test]
    fn trims_when_load_halves_under_steady_activity() {
        let mut p = Policy::default();
        let mut a = 0;
        let mut next = |load| {
            a += 1;
            p.should_trim(s(load, a))
        };
        assert!(!next(1000));
        assert!(!next(800));
        assert!(next(400), "down to half the peak");
        assert!(!next(300));
        assert!(next(200));
        assert!(next(20));
        assert!(!next(8), "a drop of less than MIN_DROP");
        assert!(next(500), "the follow-up");
        assert!(!next(500));
        assert!(!next(500));
    }
}
