// 1 GiB transfers through the real relay with bounded memory (issue #13): the producer and the
// consumer each run in their own process (tests/js/lib/sdk-child.mjs: a stream of 64 KiB
// chunks in, SHA-256 out), and the RSS of each (sampled from /proc every 50 ms) may grow by at
// most 100 MB from the moment the transfer moved its first 4 MiB to its end. That growth holds
// the producer's replay window (PROTOCOL.md §12.3: 32 MiB by default, the SDK's copies in 1 MiB
// blocks, src/wasm/chunks.rs `Kept`), the runtime's fetch and what its garbage collector has
// not freed yet; it must not grow with the size. For a passphrase the baseline is after scrypt
// (its 256 MiB are node:crypto's, freed when it returns: src/crypto/runtime.rs).
// Measured here (2 cores): Node producer +49–87 MB, consumer +42–69; Deno producer +95–105,
// consumer +74–85 (Deno's own fetch of a stream body, no SDK: +49–52; the SDK with no window
// +59); segmented +105–116 (each 1 MiB part
// is copied by the runtime's fetch, and V8 lets ~64 MB of dropped copies wait for a full
// collection).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { runChild, rssOf } from './lib/child.mjs';

const sdk = await import(PKG);
const CHILD = path.join(ROOT, 'tests/js/lib/sdk-child.mjs');
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
const MiB = 1 << 20;
const GiB = 1 << 30;
const MB = 1e6;
let relay;
before(async () => { relay = await startRelay(); });
after(async () => { await relay?.stop(); });

/** One side in its own process: Node, or Deno running the same script. */
function side(runtime, args) {
  if (runtime === 'deno') {
    return runChild(['run', '--no-prompt', '--allow-all', CHILD, ...args],
      { command: DENO, env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  }
  return runChild([CHILD, ...args]);
}

const identity = sdk.generateIdentity();
const recipient = sdk.identityToRecipient(identity);
const cases = [
  { name: 'plain, streaming (Node)', runtime: 'node', send: {}, recv: {}, bound: 100 },
  { name: 'age-rt passphrase (Node)', runtime: 'node', send: { passphrase: 'pw' }, recv: { passphrase: 'pw' }, bound: 100 },
  { name: 'age, X25519 recipient (Node)', runtime: 'node', send: { recipients: [recipient], format: 'age' }, recv: { identities: [identity] }, bound: 100 },
  { name: 'plain, streaming (Deno)', runtime: 'deno', send: {}, recv: {}, bound: 120 },
  { name: 'plain, segmented (Node)', runtime: 'node', send: { upload: 'segmented' }, recv: {}, bound: 150 },
];

for (const c of cases) {
  test(`1 GiB ${c.name}: checksums equal, producer and consumer RSS growth < ${c.bound} MB`, { timeout: 600_000 }, async () => {
    const p = uniquePath('gib');
    const consumer = side(c.runtime, ['receive', relay.http, p, JSON.stringify(c.recv)]);
    const producer = side(c.runtime, ['send', relay.http, p, String(GiB), JSON.stringify(c.send)]);
    try {
      const moving = (e) => (e.event === 'progress' && e.bytes >= 4 * MiB) || e.event === 'error' || e.event === 'done';
      const [a, b] = await Promise.all([producer.waitFor(moving, 120_000), consumer.waitFor(moving, 120_000)]);
      assert.equal(a.event, 'progress', JSON.stringify(a));
      assert.equal(b.event, 'progress', JSON.stringify(b));
      const pids = [producer.proc.pid, consumer.proc.pid];
      const base = pids.map(rssOf);
      const peak = [...base];
      const t0 = performance.now();
      const timer = setInterval(() => pids.forEach((pid, i) => { peak[i] = Math.max(peak[i], rssOf(pid)); }), 50);
      const ended = (e) => e.event === 'done' || e.event === 'error';
      const [sent, got] = await Promise.all([producer.waitFor(ended, 600_000), consumer.waitFor(ended, 600_000)]);
      clearInterval(timer);
      const secs = (performance.now() - t0) / 1000;
      assert.equal(sent.event, 'done', JSON.stringify(sent));
      assert.equal(got.event, 'done', JSON.stringify(got));
      assert.equal(sent.bytes, GiB);
      assert.equal(got.bytes, GiB);
      assert.equal(got.sha256, sent.sha256, 'the consumer got the bytes the producer sent');
      const growth = peak.map((v, i) => v - base[i]);
      console.log(`# 1 GiB ${c.name}: ${secs.toFixed(1)} s; producer RSS ${(base[0] / MB).toFixed(0)} → ${(peak[0] / MB).toFixed(0)} MB (+${(growth[0] / MB).toFixed(0)}), consumer ${(base[1] / MB).toFixed(0)} → ${(peak[1] / MB).toFixed(0)} MB (+${(growth[1] / MB).toFixed(0)})`);
      assert.ok(growth[0] < c.bound * MB, `the producer's RSS grew by ${(growth[0] / MB).toFixed(0)} MB`);
      assert.ok(growth[1] < c.bound * MB, `the consumer's RSS grew by ${(growth[1] / MB).toFixed(0)} MB`);
    } finally { producer.kill(); consumer.kill(); }
  });
}
