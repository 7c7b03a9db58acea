//! Counters for `/metrics` (Prometheus text format, `docs/PROTOCOL.md` §9).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::pairing::Counts;

/// Why a transfer failed (the `reason` label of `httpipe_transfers_failed_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    ProducerAborted,
    ReceiverDisconnected,
    UploadGapTimeout,
    BadUpload,
    /// The relay's shutdown grace period ended first (§9).
    Shutdown,
}

impl FailReason {
    pub const ALL: [FailReason; 5] = [
        FailReason::ProducerAborted,
        FailReason::ReceiverDisconnected,
        FailReason::UploadGapTimeout,
        FailReason::BadUpload,
        FailReason::Shutdown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailReason::ProducerAborted => "producer_aborted",
            FailReason::ReceiverDisconnected => "receiver_disconnected",
            FailReason::UploadGapTimeout => "upload_gap_timeout",
            FailReason::BadUpload => "bad_upload",
            FailReason::Shutdown => "shutdown",
        }
    }
}

/// Monotonic counters; gauges come from the pairing table at scrape time.
#[derive(Default)]
pub struct Metrics {
    bytes: AtomicU64,
    started: AtomicU64,
    completed: AtomicU64,
    failed: [AtomicU64; FailReason::ALL.len()],
    requests: AtomicU64,
    segmented_active: AtomicU64,
}

impl Metrics {
    pub fn relayed(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Relaxed);
    }
    pub fn transfer_started(&self) {
        self.started.fetch_add(1, Relaxed);
    }
    pub fn completed(&self) {
        self.completed.fetch_add(1, Relaxed);
    }
    pub fn failed(&self, reason: FailReason) {
        let i = FailReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        self.failed[i].fetch_add(1, Relaxed);
    }
    pub fn request(&self) {
        self.requests.fetch_add(1, Relaxed);
    }
    pub fn segmented_started(&self) {
        self.segmented_active.fetch_add(1, Relaxed);
    }
    pub fn segmented_ended(&self) {
        self.segmented_active.fetch_sub(1, Relaxed);
    }
    pub fn segmented_active(&self) -> u64 {
        self.segmented_active.load(Relaxed)
    }
    pub fn requests_total(&self) -> u64 {
        self.requests.load(Relaxed)
    }
    pub fn bytes_relayed(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self, c: Counts) -> String {
        let mut s = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(
                s,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        metric(
            "httpipe_waiting_producers",
            "gauge",
            "Producers waiting for consumers.",
            c.waiting_producers as u64,
        );
        metric(
            "httpipe_waiting_consumers",
            "gauge",
            "Consumers waiting for a producer.",
            c.waiting_consumers as u64,
        );
        metric(
            "httpipe_connect_waiting",
            "gauge",
            "Connect API callers waiting for a peer.",
            c.connect_waiters as u64,
        );
        metric(
            "httpipe_connect_lingering",
            "gauge",
            "Last words of Connect callers that left, kept for their peer (PROTOCOL.md §5.1 linger).",
            c.lingering as u64,
        );
        metric(
            "httpipe_active_transfers",
            "gauge",
            "Transfers in progress.",
            c.active_transfers as u64,
        );
        metric(
            "httpipe_segmented_uploads",
            "gauge",
            "Segmented uploads in progress.",
            self.segmented_active.load(Relaxed),
        );
        metric(
            "httpipe_bytes_relayed_total",
            "counter",
            "Bytes handed to consumers (counted once per consumer).",
            self.bytes.load(Relaxed),
        );
        metric(
            "httpipe_transfers_started_total",
            "counter",
            "Transfers started.",
            self.started.load(Relaxed),
        );
        metric(
            "httpipe_transfers_completed_total",
            "counter",
            "Transfers that ended with [STATE:TRANSFER_SUCCESSFUL].",
            self.completed.load(Relaxed),
        );
        metric(
            "httpipe_requests_total",
            "counter",
            "HTTP requests received.",
            self.requests.load(Relaxed),
        );
        let _ = writeln!(s, "# HELP httpipe_transfers_failed_total Transfers that failed, by reason.\n# TYPE httpipe_transfers_failed_total counter");
        for (i, r) in FailReason::ALL.iter().enumerate() {
            let _ = writeln!(
                s,
                "httpipe_transfers_failed_total{{reason=\"{}\"}} {}",
                r.as_str(),
                self.failed[i].load(Relaxed)
            );
        }
        s
    }
}
