// Firefox ESR (driven over WebDriver BiDi with puppeteer-core) as the sender on the relay's
// plain port: Firefox can't stream request bodies, so the SDK falls back to the segmented
// upload (PROTOCOL.md §4) and the page says so in a small note; a Chromium receiver opens the
// shown link and gets the exact bytes.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { startRelay } from './lib/relay.mjs';
import { launchChromium, randomFile, sha256File, openDemo, waitState, progressOf, textOf, screenshot, ARTIFACTS } from './lib/demo-browser.mjs';

const FIREFOX = process.env.HTTPIPE_FIREFOX || '/usr/bin/firefox-esr';

test('Firefox sends over the plain port with the segmented fallback', { timeout: 240000, skip: !fs.existsSync(FIREFOX) && 'no firefox-esr' }, async () => {
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
    await sender.waitForFunction(() => ['waiting', 'sending'].includes(document.getElementById('send-panel').dataset.state));
    const link = await sender.$eval('#link', (e) => e.value);
    assert.ok(link.startsWith(`${relay.http}/#r=`), link);

    await chromium.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
    const receiver = await chromium.context.newPage();
    const download = receiver.waitForEvent('download', { timeout: 120000 });
    await openDemo(receiver, link);
    const dl = await download;
    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error'], 180000), 'done', await textOf(receiver, 'recv-error'));
    await sender.waitForFunction(() => ['done', 'error'].includes(document.getElementById('send-panel').dataset.state), { timeout: 60000 });
    const state = await sender.$eval('#send-panel', (e) => e.dataset.state);
    assert.equal(state, 'done', await sender.$eval('#send-error', (e) => e.textContent));
    assert.equal(await sha256File(await dl.path()), src.sha256);
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
