// Human-readable sizes, rates and times, and a progress meter (bytes, percent, rate, ETA).

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 -> "1.5 KiB" (binary units). */
export function formatBytes(n) {
  if (!Number.isFinite(n) || n < 0) return '?';
  let i = 0;
  while (n >= 1024 && i < UNITS.length - 1) { n /= 1024; i++; }
  // Bytes are whole (a rate may not be: 81.3 B/s reads "81 B/s").
  return i === 0 ? `${Math.round(n)} B` : `${n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)} ${UNITS[i]}`;
}

/** Seconds -> "42 s", "3 min 5 s", "1 h 2 min". */
export function formatDuration(s) {
  if (!Number.isFinite(s) || s < 0) return '?';
  s = Math.round(s);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * Tracks a transfer's progress. Rate is an exponential moving average over ~2 s windows.
 * `now` is injectable (milliseconds) for tests.
 */
/** No new byte for this long (ms) and the transfer counts as stalled: no rate, no time left. */
export const STALL_MS = 3000;

export class ProgressMeter {
  constructor(total, now = () => performance.now()) {
    this.total = Number.isFinite(total) ? total : undefined;
    this.now = now;
    this.start = now();
    this.bytes = 0;
    this.rate = 0;
    this.lastT = this.start;
    this.lastBytes = 0;
    this.changedAt = this.start;
  }

  /** Records the cumulative byte count. */
  update(bytes) {
    if (bytes !== this.bytes) this.changedAt = this.now();
    this.bytes = bytes;
    const t = this.now();
    const dt = (t - this.lastT) / 1000;
    if (dt >= 0.5) {
      const inst = (bytes - this.lastBytes) / dt;
      this.rate = this.rate === 0 ? inst : this.rate * 0.6 + inst * 0.4;
      this.lastT = t;
      this.lastBytes = bytes;
    }
  }

  /** Average rate since start (bytes/s). */
  averageRate() {
    const s = (this.now() - this.start) / 1000;
    return s > 0 ? this.bytes / s : 0;
  }

  /** True when no byte moved for {@link STALL_MS} (after the first): the other side holds back. */
  stalled() {
    return this.bytes > 0 && this.now() - this.changedAt >= STALL_MS
      && (this.total === undefined || this.bytes < this.total);
  }

  /**
   * { bytes, total?, percent?, rate, eta?, stalled } with rate in bytes/s and eta in seconds;
   * a stalled transfer has rate 0 and no eta (a frozen "5 s left" would be a lie).
   */
  snapshot() {
    const stalled = this.stalled();
    const rate = stalled ? 0 : this.rate || this.averageRate();
    const out = { bytes: this.bytes, rate, stalled };
    if (this.total !== undefined) {
      out.total = this.total;
      out.percent = this.total === 0 ? 100 : Math.min(100, (this.bytes / this.total) * 100);
      if (rate > 0) out.eta = Math.max(0, (this.total - this.bytes) / rate);
    }
    return out;
  }

  /** "12.0 MiB of 200 MiB · 6% · 45.0 MiB/s · 4 s left" */
  describe() {
    const s = this.snapshot();
    const parts = [s.total !== undefined ? `${formatBytes(s.bytes)} of ${formatBytes(s.total)}` : formatBytes(s.bytes)];
    if (s.percent !== undefined) parts.push(`${Math.floor(s.percent)}%`);
    if (s.stalled) parts.push('paused');
    if (s.rate > 0) parts.push(`${formatBytes(s.rate)}/s`);
    if (s.eta !== undefined && s.percent < 100) parts.push(`${formatDuration(s.eta)} left`);
    return parts.join(' · ');
  }
}
