// 1 GiB transfers through the real relay with bounded memory: the consumer runs in its own
// process and its RSS (sampled from /proc) must grow by less than 150 MB. Streaming, segmented
// and age-rt encrypted (about 4 s, 7 s and 11 s here).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath, randomSource } from './lib/sdk.mjs';
import { runChild } from './lib/child.mjs';

const sdk = await import(PKG);
const CHILD = path.join(ROOT, 'tests/js/lib/sdk-child.mjs');
const GiB = 1 << 30;
let relay;
before(async () => { relay = await startRelay(); });
after(async () => { await relay?.stop(); });

function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

const cases = [{ name: 'plain, streaming', send: {}, recv: {} }];
{
  cases.push({ name: 'plain, segmented', send: { upload: 'segmented' }, recv: {} });
  // scrypt (log2 N = 18) needs 256 MiB of wasm memory once, which a wasm instance never gives
  // back: for passphrases the baseline is taken after the header was opened (first progress).
  cases.push({ name: 'age-rt passphrase', send: { passphrase: 'pw' }, recv: { passphrase: 'pw' }, baseline: 'progress' });
}

for (const c of cases) {
  test(`1 GiB ${c.name}: checksums equal, consumer RSS growth < 150 MB`, { timeout: 600_000 }, async () => {
    const p = uniquePath('gib');
    const child = runChild([CHILD, 'receive', relay.http, p, JSON.stringify(c.recv)]);
    try {
      const started = child.waitFor((e) => e.event === 'started' || e.event === 'error');
      const { stream, digest } = randomSource(GiB, 1 << 20);
      const t0 = Date.now();
      const sendP = sdk.send(stream, { relay: relay.http, path: p, ...c.send });
      const first = await started;
      assert.equal(first.event, 'started', JSON.stringify(first));
      if (c.baseline === 'progress') await child.waitFor((e) => e.event === 'progress' || e.event === 'error', 120_000);
      const base = rssOf(child.proc.pid);
      let peak = base;
      const timer = setInterval(() => { try { peak = Math.max(peak, rssOf(child.proc.pid)); } catch { /* exited */ } }, 100);
      const [report, done] = await Promise.all([sendP, child.waitFor((e) => e.event === 'done' || e.event === 'error', 600_000)]);
      clearInterval(timer);
      const secs = (Date.now() - t0) / 1000;
      assert.equal(done.event, 'done', JSON.stringify(done));
      assert.equal(done.bytes, GiB);
      assert.equal(done.sha256, await digest);
      assert.equal(report.bytes, GiB);
      const growth = peak - base;
      console.log(`# 1 GiB ${c.name}: ${secs.toFixed(1)} s (${(GiB / secs / 1e6).toFixed(0)} MB/s), consumer RSS ${(base / 1e6).toFixed(0)} → peak ${(peak / 1e6).toFixed(0)} MB (growth ${(growth / 1e6).toFixed(0)} MB)`);
      assert.ok(growth < 150e6, `consumer RSS grew by ${(growth / 1e6).toFixed(0)} MB`);
    } finally { child.kill(); }
  });
}
