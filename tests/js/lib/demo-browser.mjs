// Helpers for the demo's browser tests: launch Debian's Chromium through playwright-core,
// drive the sender and receiver pages, hash files, save screenshots to test-artifacts/.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './relay.mjs';

export const CHROMIUM = process.env.HTTPIPE_CHROMIUM || '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test-artifacts');
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--ignore-certificate-errors'];

/** Chromium with a new empty user-data-dir; `close()` removes it. */
export async function launchChromium(extraArgs = []) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-chromium-'));
  const context = await launchContext(userDataDir, extraArgs);
  return {
    context,
    userDataDir,
    async newContext() {
      // A second, fully separate browser profile: the "other device".
      return launchChromium(extraArgs);
    },
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// Debian's Chromium now and then dies with SIGSEGV while it starts (seen in 2 of ~10 full runs,
// before any page or SDK code: "Target page, context or browser has been closed" from the
// launch itself). A launch that fails so is tried again, twice, with a fresh profile; a browser
// that fails later fails its test.
async function launchContext(userDataDir, extraArgs, attempt = 1) {
  try {
    return await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs],
      ignoreHTTPSErrors: true, acceptDownloads: true, viewport: { width: 900, height: 900 },
    });
  } catch (e) {
    if (attempt >= 3 || !/has been closed|SIGSEGV/.test(String(e && e.message))) throw e;
    console.error(`# Chromium died while starting (attempt ${attempt}): starting it again`);
    fs.rmSync(userDataDir, { recursive: true, force: true });
    fs.mkdirSync(userDataDir);
    return launchContext(userDataDir, extraArgs, attempt + 1);
  }
}

/** Writes `size` random bytes to a temp file; returns { file, sha256 }. */
export function randomFile(size, name = 'random.bin') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-demo-'));
  const file = path.join(dir, name);
  const fd = fs.openSync(file, 'w');
  const hash = crypto.createHash('sha256');
  const block = 4 * 1024 * 1024;
  for (let done = 0; done < size;) {
    const n = Math.min(block, size - done);
    const buf = crypto.randomBytes(n);
    fs.writeSync(fd, buf);
    hash.update(buf);
    done += n;
  }
  fs.closeSync(fd);
  return { file, dir, sha256: hash.digest('hex') };
}

export async function sha256File(file) {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** The ZIP at `file`: { path: size } of every entry (folders end in "/"), checked by Python's zipfile. */
export function zipListing(file) {
  return JSON.parse(execFileSync('python3', ['-c', `
import zipfile, sys, json
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps({i.filename: i.file_size for i in z.infolist()}))`, file]).toString());
}

/** Fails the test on any request that leaves the page's origin (the page must make none). */
export function forbidForeignRequests(page, origin) {
  const foreign = [];
  page.on('request', (req) => {
    const u = req.url();
    if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u);
  });
  return foreign;
}

/** Waits for the demo page to have loaded the SDK. */
export async function openDemo(page, url) {
  await page.goto(url);
  await page.waitForSelector('body[data-ready=true]', { timeout: 30000 });
}

/** Drops files on the drop zone with a real `drop` event carrying a DataTransfer. */
export async function dropFiles(page, files) {
  // A scratch file input gives the page disk-backed File objects (no copy through the protocol).
  await page.evaluate(() => {
    const i = document.createElement('input');
    i.type = 'file'; i.multiple = true; i.id = 'test-scratch-input'; i.hidden = true;
    document.body.appendChild(i);
  });
  await page.setInputFiles('#test-scratch-input', files);
  await page.evaluate(() => {
    const input = document.getElementById('test-scratch-input');
    const dt = new DataTransfer();
    for (const f of input.files) dt.items.add(f);
    input.remove();
    const drop = document.getElementById('drop');
    drop.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true, cancelable: true }));
    drop.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
}

/**
 * Drops files or folders from disk on the drop zone as the operating system would (DevTools
 * protocol drag events: the page gets real entries, so a folder arrives as a directory).
 * Chromium only.
 */
export async function dropPaths(page, paths) {
  const cdp = await page.context().newCDPSession(page);
  try {
    const box = await page.locator('#drop').boundingBox();
    const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    const data = { items: [], files: paths, dragOperationsMask: 1 };
    for (const type of ['dragEnter', 'dragOver', 'drop']) await cdp.send('Input.dispatchDragEvent', { type, ...at, data });
  } finally {
    await cdp.detach().catch(() => {});
  }
}

export async function waitState(page, panel, states, timeout = 120000) {
  const list = Array.isArray(states) ? states : [states];
  await page.waitForFunction(([id, l]) => l.includes(document.getElementById(id).dataset.state),
    [panel, list], { timeout, polling: 100 });
  return page.evaluate((id) => document.getElementById(id).dataset.state, panel);
}

export async function progressOf(page, id) {
  return page.evaluate((i) => { const p = document.getElementById(i); return { value: p.value, max: p.max }; }, id);
}

export async function textOf(page, id) {
  return page.evaluate((i) => document.getElementById(i).textContent, id);
}

/** Saves a screenshot as test-artifacts/<name> (a name may have folders); the full page by default. */
export async function screenshot(page, name, { fullPage = true } = {}) {
  const file = path.join(ARTIFACTS, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage });
  return file;
}

/** Visible form controls without an accessible name (label, aria-label(ledby), or text). */
export async function unlabelledControls(page) {
  return page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, [role=button]')]
    .filter((el) => el.offsetParent !== null && el.type !== 'hidden')
    .filter((el) => !((el.labels && el.labels.length) || el.getAttribute('aria-label')
      || el.getAttribute('aria-labelledby') || el.textContent.trim()))
    .map((el) => el.id || el.outerHTML.slice(0, 60)));
}

/** True when the page needs no sideways scrolling. */
export async function fitsWidth(page) {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/** Sends `files` from a new demo page in `browser` by short code: { page, code }. */
export async function sendByCode(browser, origin, files) {
  const page = await browser.context.newPage();
  await openDemo(page, `${origin}/`);
  await dropFiles(page, files);
  await page.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
  return { page, code: await textOf(page, 'send-code') };
}

/**
 * Receives by `code` typed into the start page's receive field of a new page in `browser`
 * (as a person would): `{ page, download }` once its panel is busy or ended; `download`
 * settles with the page's download (rejects after `timeout` ms without one).
 */
export async function receiveByCode(browser, origin, code, { timeout = 120000 } = {}) {
  const page = await browser.context.newPage();
  await openDemo(page, `${origin}/`);
  const download = page.waitForEvent('download', { timeout });
  download.catch(() => {});
  await page.fill('#open-input', code);
  await page.press('#open-input', 'Enter');
  await waitState(page, 'recv-panel', ['waiting', 'ready', 'receiving', 'done', 'error']);
  return { page, download };
}

/**
 * Sends `files` from a new demo page in `browser` by link: `{ page, link }` once it waits for
 * the receiver. With `passphrase`, in passphrase mode (which the page then remembers);
 * without, in the mode the page has (see {@link preferLinks}).
 */
export async function sendByLink(browser, origin, files, passphrase) {
  const page = await browser.context.newPage();
  await openDemo(page, `${origin}/`);
  if (passphrase !== undefined) {
    await page.click('#options summary');
    await page.check('#mode-passphrase');
    await page.fill('#passphrase', passphrase);
  }
  await dropFiles(page, files);
  await waitState(page, 'send-panel', ['waiting', 'sending']);
  return { page, link: await page.inputValue('#link') };
}

/**
 * On a receiving page that asks for the passphrase (any page with fill and click, also
 * lib/webkit.mjs's): a wrong one ends it in the error that says so, nothing saved.
 */
export async function typeWrongPassphrase(page) {
  assert.equal(await page.isVisible('#recv-passphrase'), true);
  await page.fill('#recv-passphrase', 'wrong horse');
  await page.click('#recv-start');
  assert.equal(await waitState(page, 'recv-panel', ['error', 'done'], 60000), 'error');
  assert.equal(await textOf(page, 'recv-status'), 'Wrong passphrase or key.');
  assert.match(await textOf(page, 'recv-error'), /Wrong passphrase.*Nothing was saved/);
}

/** Makes new pages of `browser` send by link ('link') or passphrase, not by code (the default). */
export async function preferLinks(browser, mode = 'link') {
  await browser.context.addInitScript((m) => localStorage.setItem('httpipe.mode', m), mode);
}
