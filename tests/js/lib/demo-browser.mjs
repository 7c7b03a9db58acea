// Helpers for the demo's browser tests: launch Debian's Chromium through playwright-core,
// drive the sender and receiver pages, hash files, save screenshots to test-artifacts/.
import { chromium } from 'playwright-core';
import crypto from 'node:crypto';
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
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs],
    ignoreHTTPSErrors: true, acceptDownloads: true, viewport: { width: 900, height: 900 },
  });
  return {
    context,
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

export async function screenshot(page, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
