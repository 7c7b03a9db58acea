// The demo in WebKit (WebKitGTK's MiniBrowser over WebDriver, lib/webkit.mjs: Safari's engine)
// beside Chromium, against the real relay that serves it; one WebKit session for the file.
// By short code WebKit → Chromium (WebKit can't stream uploads: the segmented path, and the
// page says so) and Chromium → WebKit (no File System Access API in WebKit: the receiver saves
// through the Service Worker streaming download); a link with a wrong, then the right,
// passphrase typed in WebKit; a folder as one ZIP into WebKit and several files zipped in
// WebKit. Screens at desktop width and at 390 px go to test-artifacts/webkit/ (look at them).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './lib/relay.mjs';
import {
  launchChromium, randomFile, sha256File, openDemo, dropFiles, waitState, progressOf, textOf, screenshot,
  sendByCode, receiveByCode, sendByLink, typeWrongPassphrase, zipListing, fitsWidth, unlabelledControls,
} from './lib/demo-browser.mjs';
import { launchWebKit, skipWithoutWebKit } from './lib/webkit.mjs';

const MiB = 1024 * 1024;
const CODE = /^[1-9]\d{0,2}-[a-z]+-[a-z]+$/;
const skip = skipWithoutWebKit();
let relay; let chromium; let webkit; let page;

test.before(async () => {
  if (skip) return;
  relay = await startRelay();
  chromium = await launchChromium();
  await chromium.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
  webkit = await launchWebKit({ width: 1280, height: 800 });
  page = webkit.page;
});

test.after(async () => {
  await webkit?.close();
  await chromium?.close();
  await relay?.stop();
});

/**
 * The file WebKit downloaded as `name` (MiniBrowser saves to webkit.downloads), once it has
 * `size` bytes (without `size`: once its size held for 300 ms).
 */
async function downloaded(name, size) {
  const file = path.join(webkit.downloads, name);
  const sizeOf = () => (fs.existsSync(file) ? fs.statSync(file).size : -1);
  for (let i = 0, last = -1; i < 100; i++, last = sizeOf()) {
    if (size === undefined ? last >= 0 && sizeOf() === last && i % 3 === 0 : sizeOf() === size) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(fs.readdirSync(webkit.downloads), [name], 'one download, under its name');
  return file;
}

/** Types `code` into WebKit's start page and waits for the receiving panel to end. */
async function webkitReceivesByCode(code) {
  await openDemo(page, `${relay.https}/`);
  await page.fill('#open-input', code);
  await page.press('#open-input', 'Enter');
  return waitState(page, 'recv-panel', ['done', 'error', 'cancelled'], 60000);
}

/** A screen of the WebKit page: test-artifacts/webkit/<viewport>-<name>.png, checked for width and labels. */
async function shot(viewport, name) {
  assert.equal(await fitsWidth(page), true, `${viewport} ${name}: no sideways scrolling`);
  assert.deepEqual(await unlabelledControls(page), [], `${viewport} ${name}: every control has a name`);
  await new Promise((r) => setTimeout(r, 300)); // the progress bar's .25 s transition
  await screenshot(page, `webkit/${viewport}-${name}.png`);
}

const clearDownloads = () => { for (const f of fs.readdirSync(webkit.downloads)) fs.rmSync(path.join(webkit.downloads, f)); };

test('WebKit → Chromium by short code: segmented upload with its note, the exact bytes, "Delivered"', { skip, timeout: 90000 }, async () => {
  const src = randomFile(6 * MiB + 7, 'from safari.mov');
  try {
    await openDemo(page, `${relay.https}/`);
    await shot('desktop', 'start');
    await dropFiles(page, [src.file]);
    await page.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
    const code = await textOf(page, 'send-code');
    assert.match(code, CODE);
    assert.ok(await page.evaluate(() => !!document.querySelector('#qr svg')), 'QR code rendered');
    await shot('desktop', 'send-code');
    const { page: receiver, download } = await receiveByCode(chromium, relay.https, code);
    const dl = await download;
    assert.equal(dl.suggestedFilename(), 'from safari.mov');
    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error']), 'done', await textOf(receiver, 'recv-error'));
    assert.equal(await waitState(page, 'send-panel', ['done', 'error'], 60000), 'done', await textOf(page, 'send-error'));
    assert.equal(await sha256File(await dl.path()), src.sha256);
    // WebKit can't stream a request body, over HTTP/2 either: parts, and the page says so
    assert.equal(await page.evaluate(() => document.getElementById('send-panel').dataset.transport), 'segmented');
    assert.equal(await page.isVisible('#send-note'), true, 'the segmented note is shown');
    assert.match(await textOf(page, 'send-note'), /in parts/);
    assert.match(await textOf(page, 'send-status'), /Delivered/);
    assert.deepEqual(await progressOf(page, 'send-progress'), { value: 100, max: 100 });
    await shot('desktop', 'send-done');
    await dl.delete();
    await receiver.close();
  } finally {
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

// The save path a WebKit receiver takes: no showSaveFilePicker (the "choose a file" method is
// disabled), so 'auto' is the Service Worker streaming download (sw.js): the file goes to
// the browser's download folder as it arrives, the page keeps none of it. On a 390 px screen.
test('Chromium → WebKit by short code on a 390 px screen: saved through the Service Worker download, exact', { skip, timeout: 90000 }, async () => {
  const src = randomFile(5 * MiB + 3, 'for the phone.pdf');
  clearDownloads();
  try {
    await page.setViewportSize({ width: 390, height: 844 });
    await openDemo(page, `${relay.https}/`);
    await shot('phone', 'start');
    const saving = await page.evaluate(async () => ({
      fsa: typeof window.showSaveFilePicker,
      fsaOption: document.querySelector('#save-method option[value=fsa]').disabled,
      worker: !!(await navigator.serviceWorker.getRegistration('/assets/'))?.active,
      hint: document.getElementById('save-hint').textContent,
    }));
    assert.deepEqual(saving, {
      fsa: 'undefined', fsaOption: true, worker: true, hint: 'Downloads stream to disk as they arrive.',
    });
    const { page: sender, code } = await sendByCode(chromium, relay.https, [src.file]);
    assert.equal(await webkitReceivesByCode(code), 'done', await textOf(page, 'recv-error'));
    assert.match(await textOf(page, 'recv-status'), /Done: 5\.00 MiB received and verified\. Saved as a download\./);
    assert.equal(await textOf(page, 'recv-summary'), 'for the phone.pdf · 5.00 MiB');
    assert.equal(await sha256File(await downloaded('for the phone.pdf', 5 * MiB + 3)), src.sha256);
    assert.equal(await waitState(sender, 'send-panel', ['done', 'error']), 'done', await textOf(sender, 'send-error'));
    assert.match(await textOf(sender, 'send-status'), /Delivered/);
    await shot('phone', 'receive-done');
    await sender.close();
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

test('a link with a passphrase opened in WebKit: the wrong one says so and saves nothing, the right one then works', { skip, timeout: 90000 }, async () => {
  const src = randomFile(2 * MiB + 5, 'secret.txt');
  clearDownloads();
  const { page: sender, link } = await sendByLink(chromium, relay.https, [src.file], 'correct horse battery staple');
  try {
    await openDemo(page, link);
    await typeWrongPassphrase(page);
    assert.deepEqual(fs.readdirSync(webkit.downloads), [], 'nothing was saved');
    await shot('desktop', 'wrong-passphrase');
    await sender.waitForFunction(() => /wrong passphrase\. Waiting for them to try again/.test(document.getElementById('send-status').textContent),
      null, { timeout: 30000, polling: 100 });
    await page.click('#recv-retry');
    await page.fill('#recv-passphrase', 'correct horse battery staple');
    await page.click('#recv-start');
    assert.equal(await waitState(page, 'recv-panel', ['error', 'done'], 60000), 'done', await textOf(page, 'recv-error'));
    assert.equal(await sha256File(await downloaded('secret.txt', 2 * MiB + 5)), src.sha256);
    assert.equal(await waitState(sender, 'send-panel', ['error', 'done']), 'done', await textOf(sender, 'send-error'));
    assert.match(await textOf(sender, 'send-status'), /Delivered/);
  } finally {
    // the mode is remembered: the next Chromium pages send by code again
    await sender.evaluate(() => localStorage.setItem('httpipe.mode', 'code')).catch(() => {});
    await sender.close();
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

// WebDriver can't hand WebKit a folder (WebKitWebDriver gives the input the folder as one
// empty file), so the folder is chosen in Chromium and its ZIP saved by WebKit; WebKit zips
// several dropped files itself (client-zip in the page) for Chromium.
test('a folder as one ZIP into WebKit, and several files zipped in WebKit into Chromium', { skip, timeout: 90000 }, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-folder-'));
  const folder = path.join(root, 'Trip photos');
  fs.mkdirSync(path.join(folder, 'day 2'), { recursive: true });
  fs.writeFileSync(path.join(folder, 'notes.txt'), 'first day: rain\n');
  fs.writeFileSync(path.join(folder, 'day 2', 'beach.jpg'), Buffer.alloc(300 * 1024, 7));
  const a = randomFile(MiB + 17, 'a.bin');
  const b = randomFile(1000, 'notes.txt');
  clearDownloads();
  try {
    const sender = await chromium.context.newPage();
    await openDemo(sender, `${relay.https}/`);
    const chooser = sender.waitForEvent('filechooser');
    await sender.click('#pick-folder');
    await (await chooser).setFiles(folder);
    await sender.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
    assert.match(await textOf(sender, 'send-summary'), /^Trip photos\.zip · folder, 2 files as a ZIP/);
    assert.equal(await webkitReceivesByCode(await textOf(sender, 'send-code')), 'done', await textOf(page, 'recv-error'));
    assert.equal(await waitState(sender, 'send-panel', ['done', 'error']), 'done');
    const zip = await downloaded('Trip photos.zip');
    assert.deepEqual(zipListing(zip), { 'Trip photos/day 2/beach.jpg': 300 * 1024, 'Trip photos/notes.txt': 16 });
    await sender.close();

    await openDemo(page, `${relay.https}/`);
    await dropFiles(page, [a.file, b.file]);
    await page.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
    assert.match(await textOf(page, 'send-summary'), /^2 files as a ZIP · 1\.00 MiB$/);
    const { page: receiver, download } = await receiveByCode(chromium, relay.https, await textOf(page, 'send-code'));
    const dl = await download;
    assert.equal(dl.suggestedFilename(), 'httpipe-2-files.zip');
    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error']), 'done', await textOf(receiver, 'recv-error'));
    assert.equal(await waitState(page, 'send-panel', ['done', 'error']), 'done', await textOf(page, 'send-error'));
    assert.deepEqual(zipListing(await dl.path()), { 'a.bin': MiB + 17, 'notes.txt': 1000 });
    await dl.delete();
    await receiver.close();
  } finally {
    for (const d of [root, a.dir, b.dir]) fs.rmSync(d, { recursive: true, force: true });
  }
});
