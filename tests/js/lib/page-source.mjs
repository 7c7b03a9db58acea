// Deterministic pseudo-random bytes (xorshift32) that a Chromium page and Node both make from
// the same source text: `GEN_SRC` goes into `page.evaluate` and is evaluated there, `gen` is
// the same function here. `gen(total, seed)` → a ReadableStream of 256 KiB chunks.
export const GEN_SRC = `(total, seed) => {
  let x = seed >>> 0 || 1;
  let sent = 0;
  return new ReadableStream({
    pull(ctrl) {
      if (sent >= total) { ctrl.close(); return; }
      const n = Math.min(256 * 1024, total - sent);
      const words = new Uint32Array(Math.ceil(n / 4));
      for (let i = 0; i < words.length; i++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; words[i] = x; }
      ctrl.enqueue(new Uint8Array(words.buffer, 0, n));
      sent += n;
    },
  }, { highWaterMark: 0 });
}`;
// eslint-disable-next-line no-eval
export const gen = (0, eval)(GEN_SRC);
