// Pipelines in browsers (the package as the relay serves it at /assets/pkg/): a Chromium page
// produces encrypted, gzipped NDJSON records for a Node consumer pipeline; a Chromium page
// consumes a Node producer's records in batches through a retrying sink; Firefox ESR (BiDi,
// no native ChaCha20, the HTTP/1.1 segmented upload) produces records too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { startRelay } from './lib/relay.mjs';
import { launchChromium } from './lib/demo-browser.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { skipUnless } from './lib/tools.mjs';

const sdk = await import(PKG);
const FIREFOX = process.env.HTTPIPE_FIREFOX || '/usr/bin/firefox-esr';
const skipFirefox = skipUnless(FIREFOX, 'Firefox ESR');
const N = 20_000;
let relay;
let browser;
before(async () => { relay = await startRelay(); browser = await launchChromium(); });
after(async () => { await browser?.close(); await relay?.stop(); });

async function openPage(b, origin) {
  const page = await b.newPage();
  page.on('console', (m) => { if (m.type() === 'error') console.log(`# page: ${m.text()}`); });
  await page.goto(`${origin}/version`);
  await page.evaluate(async () => { window.httpipe = await import('/assets/pkg/index.js'); await window.httpipe.init(); });
  return page;
}

// What the page runs: records → NDJSON → gzip → age-rt → the pipe.
async function pageProduces({ relayUrl, path, n }) {
  const { pipeline, map, ndjson, gzip, encrypt, toPipe } = window.httpipe;
  function* rows() { for (let i = 0; i < n; i++) yield { id: i, name: `item ${i}`, tags: ['a', 'b'] }; }
  const run = pipeline(rows, map((r) => ({ ...r, from: 'browser' })), ndjson.encode(), gzip(), encrypt({ passphrase: 'pw' }), toPipe({ relay: relayUrl, path }));
  const rep = await run.done;
  return { records: rep.records.in, transport: rep.sink.transfers[0].transport, steps: rep.steps.map((s) => s.name) };
}

async function nodeConsumes(p) {
  // the decrypt() step opens the ciphertext, so the keyless source asks for it (PROTOCOL.md §11.3)
  const run = sdk.pipeline(sdk.fromPipe({ relay: relay.http, path: p, ciphertext: true }), sdk.decrypt({ passphrase: 'pw' }), sdk.gunzip(), sdk.ndjson.decode(), sdk.collect());
  return (await run.done).result;
}

function checkRows(rows) {
  assert.equal(rows.length, N);
  rows.forEach((r, i) => { assert.equal(r.id, i); assert.equal(r.from, 'browser'); });
}

test('Chromium producer pipeline (gzip + age-rt, h2 streaming) → Node consumer pipeline', { timeout: 120_000 }, async () => {
  const page = await openPage(browser.context, relay.https);
  try {
    const p = uniquePath('pl-chromium');
    const got = nodeConsumes(p);
    const rep = await page.evaluate(pageProduces, { relayUrl: relay.https, path: p, n: N });
    assert.deepEqual(rep.steps, ['map', 'ndjson.encode', 'gzip', 'encrypt']);
    assert.equal(rep.transport, 'stream');
    assert.equal(rep.records, N);
    checkRows(await got);
  } finally { await page.close(); }
});

test('Node producer pipeline → Chromium consumer pipeline with batches and a retrying sink', { timeout: 120_000 }, async () => {
  const page = await openPage(browser.context, relay.http);
  try {
    const p = uniquePath('pl-chromium-in');
    const sent = sdk.pipeline(function* g() { for (let i = 0; i < N; i++) yield { id: i }; }, sdk.ndjson.encode(), sdk.toPipe({ relay: relay.http, path: p, passphrase: 'pw' })).done;
    const res = await page.evaluate(async ({ relayUrl, path }) => {
      const { pipeline, fromPipe, ndjson, batch, sink } = window.httpipe;
      let sum = 0;
      let failedOnce = false;
      const rep = await pipeline(fromPipe({ relay: relayUrl, path, passphrase: 'pw' }), ndjson.decode(), batch({ maxItems: 1000 }),
        sink((b, { key }) => { if (key === '3' && !failedOnce) { failedOnce = true; throw new Error('flaky'); } for (const r of b) sum += r.id; },
          { retry: { attempts: 2, baseDelayMs: 5 } })).done;
      return { sum, delivered: rep.sink.delivered, retries: rep.retries };
    }, { relayUrl: relay.http, path: p });
    await sent;
    assert.deepEqual(res, { sum: (N * (N - 1)) / 2, delivered: N / 1000, retries: 1 });
  } finally { await page.close(); }
});

test('Firefox ESR producer pipeline (HTTP/1.1: segmented upload, wasm cipher) → Node consumer pipeline', { timeout: 180_000, skip: skipFirefox }, async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-'));
  let firefox;
  try {
    firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile });
    const page = await openPage(firefox, relay.http);
    const p = uniquePath('pl-firefox');
    const got = nodeConsumes(p);
    const rep = await page.evaluate(pageProduces, { relayUrl: relay.http, path: p, n: N });
    assert.equal(rep.transport, 'segmented');
    checkRows(await got);
  } finally {
    await firefox?.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
});
