// Memory of a producer (issue #13): a plain `send()` of a ReadableStream into a slow consumer
// must not keep the chunks it sent. Node's fetch (undici) tees a stream request body for a
// redirect it could never replay and kept every chunk sent in the branch nobody reads
// (nodejs/undici#4058): `process.memoryUsage().arrayBuffers` grew by 1 MB per MiB sent, with
// `gc()` forced. The SDK now says `redirect: 'error'` on streaming uploads (src/wasm/http.rs).
// The producer runs in its own process (`--expose-gc`), samples `arrayBuffers` after a forced
// gc every 250 ms, and prints the largest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { runChild } from './lib/child.mjs';

const MiB = 1024 * 1024;
const TOTAL_MIB = 160;
const RATE = 40 * MiB; // the consumer's read rate: the producer is held back (backpressure)

const PRODUCER = `
import * as sdk from ${JSON.stringify(PKG)};
const [relay, path, total] = process.argv.slice(2);
let sent = 0, peak = 0;
const sample = setInterval(() => { gc(); peak = Math.max(peak, process.memoryUsage().arrayBuffers); }, 250);
const source = new ReadableStream({
  pull(c) {
    if (sent >= Number(total)) { c.close(); return; }
    sent += 1; c.enqueue(new Uint8Array(${MiB}).fill(sent & 255));
  },
}, { highWaterMark: 0 });
const report = await sdk.send(source, { relay, path, receipt: false });
clearInterval(sample);
console.log(JSON.stringify({ bytes: report.bytes, peak }));
`;

test(`a plain send() of ${TOTAL_MIB} MiB (1 MiB chunks) into a ${RATE / MiB} MB/s consumer keeps no sent chunk (arrayBuffers after gc stays < 40 MB)`, { timeout: 60_000 }, async (t) => {
  const relay = await startRelay();
  t.after(() => relay.stop());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-mem-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'producer.mjs');
  fs.writeFileSync(script, PRODUCER);
  const p = uniquePath('mem');
  const producer = runChild(['--expose-gc', script, relay.http, p, String(TOTAL_MIB)]);
  t.after(() => producer.kill());
  // the consumer: plain fetch, reading at RATE
  const resp = await fetch(`${relay.http}${p}`);
  const reader = resp.body.getReader();
  let got = 0;
  const t0 = performance.now();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    got += value.length;
    const wait = t0 + (got / RATE) * 1000 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const { bytes, peak } = await producer.waitFor((e) => 'peak' in e);
  assert.equal(got, TOTAL_MIB * MiB);
  assert.equal(bytes, TOTAL_MIB * MiB);
  assert.ok(peak < 40e6, `the producer's arrayBuffers reached ${(peak / 1e6).toFixed(0)} MB after gc (sent chunks kept?)`);
});
