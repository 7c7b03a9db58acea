// A fake clock for pipeline unit tests (the `clock` option of pipeline()): timers fire only
// when the test advances time.
export class FakeClock {
  constructor() { this.t = 0; this.timers = new Map(); this.nextId = 1; }
  now() { return this.t; }
  setTimeout(fn, ms) { const id = this.nextId++; this.timers.set(id, { at: this.t + Math.max(0, ms), fn }); return id; }
  clearTimeout(id) { this.timers.delete(id); }
  get pending() { return this.timers.size; }
  /** Moves time on by `ms`, firing due timers in order, letting promises settle between them. */
  async advance(ms) {
    const end = this.t + ms;
    for (;;) {
      await settle();
      let next = null;
      for (const [id, tm] of this.timers) if (tm.at <= end && (!next || tm.at < next[1].at)) next = [id, tm];
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise callbacks (and one macrotask turn) run. */
export async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}
