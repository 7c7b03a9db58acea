// Firefox ESR (driven over WebDriver BiDi with puppeteer-core) as the sender on the relay's
// plain port, by short code: Firefox can't stream request bodies, so the SDK falls back to
// the segmented upload (PROTOCOL.md §4) and the page says so in a small note; a Chromium
// receiver types the code and gets the exact bytes. And Firefox as the receiver by code,
// saving through the Service Worker streaming download (no File System Access API in Firefox).
// And the payload cipher: no ChaCha20-Poly1305 in Firefox's WebCrypto, so the wasm one.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { startRelay } from './lib/relay.mjs';
import {
  launchChromium, randomFile, sha256File, waitState, progressOf, textOf, screenshot, ARTIFACTS, sendByCode, receiveByCode,
} from './lib/demo-browser.mjs';
import { skipUnless } from './lib/tools.mjs';
import { PKG, uniquePath, within, sleep } from './lib/sdk.mjs';

const FIREFOX = process.env.HTTPIPE_FIREFOX || '/usr/bin/firefox-esr';
const skipFirefox = skipUnless(FIREFOX, 'Firefox ESR');

test('Firefox sends by code over the plain port with the segmented fallback', { timeout: 240000, skip: skipFirefox }, async () => {
  const relay = await startRelay();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-'));
  const src = randomFile(24 * 1024 * 1024 + 7, 'firefox upload.bin');
  const chromium = await launchChromium();
  let firefox;
  try {
    firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile });
    const sender = await firefox.newPage();
    await sender.goto(`${relay.http}/`);
    await sender.waitForSelector('body[data-ready=true]', { timeout: 30000 });
    const input = await sender.$('#file-input');
    await input.uploadFile(src.file);
    await sender.waitForFunction(() => document.getElementById('send-code').textContent, { timeout: 30000 });
    const code = await sender.$eval('#send-code', (e) => e.textContent);
    assert.match(code, /^[1-9]\d{0,2}-[a-z]+-[a-z]+$/);

    await chromium.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
    const { page: receiver, download } = await receiveByCode(chromium, relay.http, code);
    const dl = await download;
    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error'], 180000), 'done', await textOf(receiver, 'recv-error'));
    await sender.waitForFunction(() => ['done', 'error'].includes(document.getElementById('send-panel').dataset.state), { timeout: 60000 });
    const state = await sender.$eval('#send-panel', (e) => e.dataset.state);
    assert.equal(state, 'done', await sender.$eval('#send-error', (e) => e.textContent));
    assert.equal(await sha256File(await dl.path()), src.sha256);
    assert.equal(await sender.$eval('#send-panel', (e) => e.dataset.transport), 'segmented');
    assert.equal(await sender.$eval('#send-note', (e) => !e.hidden), true, 'the segmented note is shown');
    assert.match(await sender.$eval('#send-note', (e) => e.textContent), /in parts/);
    assert.deepEqual(await sender.$eval('#send-progress', (e) => ({ value: e.value, max: e.max })), { value: 100, max: 100 });
    assert.deepEqual(await progressOf(receiver, 'recv-progress'), { value: 100, max: 100 });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await sender.screenshot({ path: path.join(ARTIFACTS, 'demo-firefox-sender-done.png'), fullPage: true });
    await screenshot(receiver, 'demo-firefox-receiver-done.png');
    await dl.delete();
  } finally {
    await firefox?.close().catch(() => {});
    await chromium.close();
    await relay.stop();
    fs.rmSync(profile, { recursive: true, force: true });
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

test('Firefox receives by code through the Service Worker streaming download', { timeout: 240000, skip: skipFirefox }, async () => {
  const relay = await startRelay();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-'));
  const downloads = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-dl-'));
  const src = randomFile(20 * 1024 * 1024 + 3, 'for firefox.bin');
  const chromium = await launchChromium();
  let firefox;
  try {
    const { page: sender, code } = await sendByCode(chromium, relay.http, [src.file]);
    firefox = await puppeteer.launch({
      browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile,
      extraPrefsFirefox: {
        'browser.download.dir': downloads, 'browser.download.folderList': 2, 'browser.download.useDownloadDir': true,
        'browser.download.always_ask_before_handling_new_types': false,
        'browser.helperApps.neverAsk.saveToDisk': 'application/octet-stream',
      },
    });
    // the code typed on the start page, as a person would
    const receiver = await firefox.newPage();
    await receiver.goto(`${relay.http}/`);
    await receiver.waitForSelector('body[data-ready=true]', { timeout: 30000 });
    await receiver.type('#open-input', code);
    await receiver.keyboard.press('Enter');
    await receiver.waitForFunction(() => ['done', 'error'].includes(document.getElementById('recv-panel').dataset.state), { timeout: 120000 });
    assert.equal(await receiver.$eval('#recv-panel', (e) => e.dataset.state), 'done', await receiver.$eval('#recv-error', (e) => e.textContent));
    assert.match(await receiver.$eval('#recv-status', (e) => e.textContent), /Saved as a download/);
    assert.equal(await receiver.$eval('#recv-summary', (e) => e.textContent), 'for firefox.bin · 20.0 MiB');
    const saved = path.join(downloads, 'for firefox.bin');
    // Firefox writes a .part file and renames it when the download completes.
    for (let i = 0; i < 100 && !(fs.existsSync(saved) && fs.statSync(saved).size === 20 * 1024 * 1024 + 3); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(await sha256File(saved), src.sha256);
    assert.equal(await waitState(sender, 'send-panel', ['done', 'error']), 'done');
  } finally {
    await firefox?.close().catch(() => {});
    await chromium.close();
    await relay.stop();
    for (const d of [profile, downloads, src.dir]) fs.rmSync(d, { recursive: true, force: true });
  }
});

// The payload cipher (issue #13): Firefox ESR's WebCrypto has no ChaCha20-Poly1305, so the
// package's detection (a known-answer test, src/wasm/webcrypto.rs) must leave the wasm cipher
// in place, and encryption must work as before.
test('Firefox: the payload cipher is the wasm one; encrypt / decrypt round trip (X25519, and post-quantum through the second module)', { timeout: 120000, skip: skipFirefox }, async () => {
  const relay = await startRelay();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-'));
  let firefox;
  try {
    firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile });
    const page = await firefox.newPage();
    await page.goto(`${relay.http}/version`);
    const r = await page.evaluate(async () => {
      const h = await import('/assets/pkg/index.js');
      await h.init();
      const probe = await crypto.subtle.importKey('raw-secret', new Uint8Array(32), { name: 'ChaCha20-Poly1305' }, false, ['encrypt'])
        .then(() => true, () => false);
      const id = h.generateIdentity();
      const bytes = new Uint8Array(3 * 65536 + 5).map((_, i) => (i * 13) & 255);
      const out = { probe, backend: h.cryptoBackend(), ok: [] };
      for (const format of ['age', 'age-rt']) {
        const ct = await new Response(new Blob([bytes]).stream().pipeThrough(h.encryptStream({ recipients: [h.identityToRecipient(id)], format }))).arrayBuffer();
        const pt = new Uint8Array(await new Response(new Blob([ct]).stream().pipeThrough(h.decryptStream({ identities: [id] }))).arrayBuffer());
        out.ok.push(pt.length === bytes.length && pt.every((x, i) => x === bytes[i]));
      }
      // post-quantum (httpipe_xwing_bg.wasm, fetched only now): the recipient needs it loaded
      // (identityToRecipient is synchronous); decryptStream loads it by itself
      const pq = h.generateHybridIdentity();
      const xwingFetches = () => performance.getEntriesByType('resource').filter((e) => e.name.includes('httpipe_xwing')).length;
      out.pq = { before: xwingFetches() };
      try { h.identityToRecipient(pq); } catch (e) { out.pq.sync = e.code; }
      await h.loadPostQuantum();
      const ct = await new Response(new Blob([bytes]).stream().pipeThrough(h.encryptStream({ recipients: [h.identityToRecipient(pq)] }))).arrayBuffer();
      const pt = new Uint8Array(await new Response(new Blob([ct]).stream().pipeThrough(h.decryptStream({ identities: [pq] }))).arrayBuffer());
      out.pq.ok = pt.length === bytes.length && pt.every((x, i) => x === bytes[i]);
      out.pq.after = xwingFetches();
      return out;
    });
    assert.deepEqual(r, { probe: false, backend: 'wasm', ok: [true, true], pq: { before: 0, sync: 'UNSUPPORTED', ok: true, after: 1 } });
  } finally {
    await firefox?.close().catch(() => {});
    await relay.stop();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});

// Issue #25 item 8, PROTOCOL.md §12.3 "A page that goes away": a Firefox page that leaves while
// it sends (segmented, over HTTP/1.1) sends its last word on `pagehide` with `keepalive`, so
// its Node consumer fails TRUNCATED within seconds instead of waiting out its resume time.
test('Firefox: a sending page that goes away mid-transfer tells its Node consumer within 10 s', { timeout: 120000, skip: skipFirefox }, async (t) => {
  const relay = await startRelay();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-firefox-'));
  const sdk = await import(PKG);
  let firefox;
  try {
    firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile });
    const page = await firefox.newPage();
    await page.goto(`${relay.http}/version`);
    const streamPath = uniquePath('firefox-gone');
    let got = 0;
    const received = sdk.receive({ relay: relay.http, path: streamPath })
      .then(async (r) => { for await (const c of r.stream) got += c.length; return null; })
      .catch((e) => e);
    await page.evaluate(async ({ relayUrl, path }) => {
      const h = await import('/assets/pkg/index.js');
      await h.init();
      let n = 0;
      const source = new ReadableStream({
        pull(c) { c.enqueue(new Uint8Array(1 << 20).fill(n++ & 255)); },
      }, { highWaterMark: 0 });
      h.send(source, { relay: relayUrl, path }).catch(() => {});
    }, { relayUrl: relay.http, path: streamPath });
    for (const deadline = performance.now() + 30_000; got <= 4 << 20; await sleep(50)) {
      assert.ok(performance.now() < deadline, `the first MiBs at the Node consumer: ${got} bytes after 30 s`);
    }
    const t0 = performance.now();
    await page.goto('about:blank');
    const err = await within(received, 15_000, 'the Node consumer told');
    assert.equal(err?.code, 'TRUNCATED', `the consumer got ${err ?? `a clean end after ${got} bytes`}`);
    assert.ok(performance.now() - t0 < 10_000, `the consumer was told after ${performance.now() - t0} ms`);
    t.diagnostic(`a sending Firefox page gone: its consumer told after ${performance.now() - t0} ms`);
  } finally {
    await firefox?.close().catch(() => {});
    await relay.stop();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});
