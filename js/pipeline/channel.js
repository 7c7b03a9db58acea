// A bounded queue between two async loops of one run (tap's side branch, partition's lanes,
// the dead-letter pipe): `put` waits for room (backpressure), `take` waits for an item.
export class Channel {
  static END = Symbol('end');

  constructor(capacity) {
    this.capacity = capacity;
    this.items = [];
    this.closed = false;
    this.error = null;
    this.takers = [];
    this.putters = [];
  }

  /** Adds `item` now if there is room; false otherwise. */
  offer(item) {
    if (this.error) throw this.error;
    if (this.closed) return false;
    if (this.takers.length) { this.takers.shift().resolve(item); return true; }
    if (this.items.length >= this.capacity) return false;
    this.items.push(item);
    return true;
  }

  /** Adds `item`, waiting while the queue is full. */
  async put(item) {
    while (!this.offer(item)) {
      if (this.closed) throw new Error('channel closed');
      await new Promise((resolve, reject) => this.putters.push({ resolve, reject }));
    }
  }

  /** The next item, or Channel.END after close(). */
  take() {
    if (this.items.length) {
      const item = this.items.shift();
      if (this.putters.length) this.putters.shift().resolve();
      return Promise.resolve(item);
    }
    if (this.error) return Promise.reject(this.error);
    if (this.closed) return Promise.resolve(Channel.END);
    return new Promise((resolve, reject) => this.takers.push({ resolve, reject }));
  }

  get size() { return this.items.length; }

  close() {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.takers.splice(0)) t.resolve(Channel.END);
    for (const p of this.putters.splice(0)) p.resolve();
  }

  fail(e) {
    if (this.error) return;
    this.error = e;
    this.closed = true;
    for (const t of this.takers.splice(0)) t.reject(e);
    for (const p of this.putters.splice(0)) p.reject(e);
  }
}
