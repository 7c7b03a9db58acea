// Memory: during a 1 GiB browser-to-browser transfer through the demo, the receiving page's JS
// heap (DevTools protocol, Runtime.getHeapUsage) stays under 200 MB — the file streams to disk
// through the download worker and is never held by the page. Prints the peak and the time.
import test from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './lib/relay.mjs';
import { launchChromium, sha256File, openDemo, dropFiles, waitState, textOf, preferLinks } from './lib/demo-browser.mjs';

const SIZE = Number(process.env.HTTPIPE_DEMO_MEMORY_BYTES || 1024 * 1024 * 1024);
const LIMIT = 200 * 1000 * 1000;
// Heap + embedder heap + ArrayBuffer backing stores (incl. the wasm memory and chunks in
// flight) after a forced GC. 64 MB proved too tight in CI (72 MB seen once: buffers queued
// towards the download at the sampling instant); the bound is 200 MB, still far
// below the 1 GiB a page that accumulated the file would hold.
const RETAINED_LIMIT = 200 * 1000 * 1000;

test(`receiving ${SIZE} bytes keeps the receiver's JS heap under 200 MB`, { timeout: 600000 }, async () => {
  const relay = await startRelay();
  const sender = await launchChromium();
  const receiverBrowser = await launchChromium();
  await preferLinks(sender);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-demo-'));
  const file = path.join(dir, 'big.bin');
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, SIZE); // sparse zeros: instant; the ciphertext still differs everywhere
  const expected = crypto.createHash('sha256');
  const zeros = Buffer.alloc(4 * 1024 * 1024);
  for (let n = 0; n < SIZE; n += zeros.length) expected.update(zeros.subarray(0, Math.min(zeros.length, SIZE - n)));
  const expectedHash = expected.digest('hex');
  try {
    const sp = await sender.context.newPage();
    await openDemo(sp, `${relay.https}/`);
    await dropFiles(sp, [file]);
    await waitState(sp, 'send-panel', ['waiting']);
    const link = await sp.inputValue('#link');

    await receiverBrowser.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
    const rp = await receiverBrowser.context.newPage();
    const cdp = await receiverBrowser.context.newCDPSession(rp);
    const download = rp.waitForEvent('download', { timeout: 120000 });
    const t0 = performance.now();
    await openDemo(rp, link);
    // Every 200 ms: the V8 heap in use, as the page runs (the bound the issue asks for).
    // Every 2 s also a forced GC, then heap + embedder heap + ArrayBuffer backing stores:
    // what the page really retains (chunks already handed on are garbage, not retained),
    // so a page that accumulated the file would show here at once.
    let peak = 0;
    let peakRetained = 0;
    let samples = 0;
    let running = true;
    const sampler = (async () => {
      while (running) {
        const h = await cdp.send('Runtime.getHeapUsage').catch(() => null);
        if (h) { peak = Math.max(peak, h.usedSize); samples++; }
        if (samples % 10 === 0) {
          await cdp.send('HeapProfiler.collectGarbage').catch(() => {});
          const r = await cdp.send('Runtime.getHeapUsage').catch(() => null);
          if (r) peakRetained = Math.max(peakRetained, r.usedSize + (r.embedderHeapUsedSize || 0) + (r.backingStorageSize || 0));
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const dl = await download;
    const state = await waitState(rp, 'recv-panel', ['done', 'error'], 540000);
    running = false;
    await sampler;
    const seconds = (performance.now() - t0) / 1000;
    console.log(`# demo memory: ${SIZE} bytes in ${seconds.toFixed(1)} s (${(SIZE / 1048576 / seconds).toFixed(1)} MiB/s), receiver JS heap peak ${(peak / 1e6).toFixed(1)} MB over ${samples} samples; retained after GC (heap + buffers) peak ${(peakRetained / 1e6).toFixed(1)} MB`);
    assert.equal(state, 'done', await textOf(rp, 'recv-error'));
    assert.ok(samples >= 5, 'sampled during the transfer');
    assert.ok(peak < LIMIT, `receiver JS heap peaked at ${peak} bytes`);
    assert.ok(peakRetained < RETAINED_LIMIT, `receiver retained ${peakRetained} bytes after GC`);
    assert.equal(await sha256File(await dl.path()), expectedHash);
    await dl.delete();
    assert.equal(await waitState(sp, 'send-panel', ['done', 'error']), 'done');
  } finally {
    await sender.close();
    await receiverBrowser.close();
    await relay.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
