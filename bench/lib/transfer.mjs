// Shared by the SDK benchmarks (bench/sdk.mjs, bench/receipts.mjs): a cheap source, a
// consumer in its own process, medians.
import { randomFillSync } from 'node:crypto';
import { runChild } from '../../tests/js/lib/child.mjs';

export const MiB = 1 << 20;
const block = randomFillSync(new Uint8Array(MiB));

/** `total` bytes as 1 MiB views of one random block (measures the pipe, not a PRNG). */
export function source(total) {
  let sent = 0;
  return new ReadableStream({
    pull(ctrl) {
      if (sent >= total) { ctrl.close(); return; }
      const n = Math.min(MiB, total - sent);
      sent += n;
      ctrl.enqueue(n === MiB ? block.slice() : block.slice(0, n));
    },
  }, { highWaterMark: 0 });
}

// The consumer runs in its own process (like curl's), so producer and consumer don't share a
// thread; it counts the bytes without hashing them.
const CHILD = new URL('../../tests/js/lib/sdk-child.mjs', import.meta.url).pathname;
export async function childReceive(relayUrl, path, opts = {}) {
  const child = runChild([CHILD, 'receive', relayUrl, path, JSON.stringify(opts)], { env: { HTTPIPE_CHILD_NO_HASH: '1' } });
  const ev = await child.waitFor((e) => e.event === 'done' || e.event === 'error', 3_600_000);
  child.kill();
  if (ev.event !== 'done') throw new Error(`consumer failed: ${ev.code} ${ev.message}`);
  return ev.bytes;
}

export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
