// A producer or consumer in its own process, for tests that kill one side.
//   node sdk-child.mjs send <relay> <path> <bytes|-1 for endless> '<json options>'
//   node sdk-child.mjs receive <relay> <path> '<json options>'
// Prints one JSON line per event: {"event":"progress","bytes":N}, {"event":"done",...} (with
// the SHA-256 of the bytes sent or received),
// {"event":"error","code":...}.
// HTTPIPE_CHILD_SEED=n: the producer sends `gen(bytes, n)` (lib/page-source.mjs, the bytes a
// page can make too) instead of random bytes.
// HTTPIPE_CHILD_QUIET_MS=n: the producer's source gives nothing for n ms before its first byte
// (a slow source: a command before its first output).
// HTTPIPE_CHILD_ABORT_AT=n: the producer aborts its send (its AbortSignal) once n bytes were
// pulled from its source. HTTPIPE_CHILD_CHUNK_MS=n: each 64 KiB chunk takes n ms (a slow source).
import { randomFillSync, createHash } from 'node:crypto';
import { PKG } from './sdk.mjs';
import { gen } from './page-source.mjs';

const sdk = await import(PKG);
const [mode, relay, path, a, b] = process.argv.slice(2);
// HTTPIPE_CHILD_NO_HASH=1: count only (benchmarks compare with `curl | wc -c`).
const NO_HASH = process.env.HTTPIPE_CHILD_NO_HASH === '1';
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

if (mode === 'send') {
  const total = Number(a);
  const opts = JSON.parse(b || '{}');
  let sent = 0;
  const hash = createHash('sha256');
  const seed = process.env.HTTPIPE_CHILD_SEED;
  const hashed = (source) => source.pipeThrough(new TransformStream({ transform(c, ctrl) { hash.update(c); ctrl.enqueue(c); } }));
  const quietMs = Number(process.env.HTTPIPE_CHILD_QUIET_MS || 0);
  const abortAt = Number(process.env.HTTPIPE_CHILD_ABORT_AT || 0);
  const chunkMs = Number(process.env.HTTPIPE_CHILD_CHUNK_MS || 0);
  const ac = new AbortController();
  const stream = seed !== undefined ? hashed(gen(total, Number(seed))) : new ReadableStream({
    async pull(ctrl) {
      if (sent === 0 && quietMs > 0) await new Promise((r) => setTimeout(r, quietMs));
      if (chunkMs > 0) await new Promise((r) => setTimeout(r, chunkMs));
      if (total >= 0 && sent >= total) { ctrl.close(); return; }
      const n = total >= 0 ? Math.min(65536, total - sent) : 65536;
      sent += n;
      if (abortAt > 0 && sent >= abortAt) setTimeout(() => ac.abort(), 0);
      const chunk = randomFillSync(new Uint8Array(n));
      if (!NO_HASH) hash.update(chunk);
      ctrl.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
  let last = 0;
  sdk.send(stream, { relay, path, signal: ac.signal, ...opts, onProgress: (p) => { if (p.bytes - last >= 1 << 20) { last = p.bytes; say({ event: 'progress', bytes: p.bytes }); } } })
    .then((r) => say({ event: 'done', ...r, sha256: NO_HASH ? undefined : hash.digest('hex') }), (e) => say({ event: 'error', code: e.code, message: e.message }));
} else {
  const opts = JSON.parse(a || '{}');
  try {
    const r = await sdk.receive({ relay, path, ...opts });
    say({ event: 'started', rss: process.memoryUsage().rss });
    let bytes = 0;
    let last = 0;
    const hash = createHash('sha256');
    for await (const c of r.stream) {
      bytes += c.byteLength;
      if (!NO_HASH) hash.update(c);
      if (bytes - last >= 1 << 20) { last = bytes; say({ event: 'progress', bytes }); }
    }
    say({ event: 'done', bytes, sha256: hash.digest('hex'), rss: process.memoryUsage().rss });
  } catch (e) {
    say({ event: 'error', code: e.code, message: e.message });
  }
}
