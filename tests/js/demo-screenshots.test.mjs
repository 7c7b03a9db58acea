// Screenshots of the demo's screens through a real handoff by short code (Chromium page →
// page, real relay): start, the sender's code, the receiver's code form, sending, receiving
// and both finished panels, on a desktop (1280×800) and a phone (390×844). They go to
// test-artifacts/screenshots/ (look at them; docs/img/ has docs/demo.md's pair). Each screen is
// also checked for what a person needs there: no sideways scrolling, every control labelled.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './lib/relay.mjs';
import {
  launchChromium, openDemo, dropFiles, waitState, textOf, screenshot, unlabelledControls, fitsWidth, ARTIFACTS,
} from './lib/demo-browser.mjs';

const MiB = 1024 * 1024;
const VIEWPORTS = [['desktop', 1280, 800], ['phone', 390, 844]];
let relay; let senderBrowser; let receiverBrowser; let dir;

test.before(async () => {
  relay = await startRelay();
  senderBrowser = await launchChromium();
  receiverBrowser = await launchChromium();
  await receiverBrowser.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-shots-'));
});

test.after(async () => {
  await senderBrowser?.close();
  await receiverBrowser?.close();
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A screen: saved as screenshots/<viewport>-<name>.png, checked for width and labels; on the
 * desktop also -card.png, the page's column only (docs/demo.md shows those side by side).
 */
async function shot(page, viewport, name) {
  assert.equal(await fitsWidth(page), true, `${viewport} ${name}: no sideways scrolling`);
  assert.deepEqual(await unlabelledControls(page), [], `${viewport} ${name}: every control has a name`);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await screenshot(page, `screenshots/${viewport}-${name}.png`, { fullPage: false });
  if (viewport !== 'desktop') return;
  const clip = await page.evaluate(() => {
    const top = document.querySelector('.top').getBoundingClientRect();
    const card = [...document.querySelectorAll('main > .card')].find((c) => !c.hidden).getBoundingClientRect();
    return { x: top.left - 32, y: 0, width: top.width + 64, height: card.bottom + 32 };
  });
  await page.screenshot({ path: path.join(ARTIFACTS, 'screenshots', `${viewport}-${name}-card.png`), clip });
}

for (const [viewport, width, height] of VIEWPORTS) {
  test(`screens on a ${viewport} (${width}×${height}): start, code, sending, receiving, done`, { timeout: 120000 }, async () => {
    // sparse zeros: instant to make, long enough to catch both pages mid-way (~5 s left after
    // the receiver's 20 %, where two screenshots take ~1 s; 768 MiB took 15 s more each)
    fs.mkdirSync(path.join(dir, viewport));
    const file = path.join(dir, viewport, 'Holiday 2026.mp4');
    fs.closeSync(fs.openSync(file, 'w'));
    fs.truncateSync(file, 256 * MiB);
    const sender = await senderBrowser.context.newPage();
    const receiver = await receiverBrowser.context.newPage();
    for (const p of [sender, receiver]) await p.setViewportSize({ width, height });
    await openDemo(sender, `${relay.https}/`);
    await shot(sender, viewport, 'start');

    await dropFiles(sender, [file]);
    await sender.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
    const code = await textOf(sender, 'send-code');
    await shot(sender, viewport, 'send-code');

    const download = receiver.waitForEvent('download', { timeout: 60000 });
    await openDemo(receiver, `${relay.https}/#code=${code}`);
    assert.equal(await receiver.inputValue('#recv-code'), code, 'the QR code link fills the code in');
    await shot(receiver, viewport, 'receive-code');
    await receiver.click('#recv-start');
    const dl = await download;
    // both pages mid-way
    await receiver.waitForFunction(() => document.getElementById('recv-progress').value >= 20, null, { timeout: 60000, polling: 50 });
    await Promise.all([shot(sender, viewport, 'sending'), shot(receiver, viewport, 'receiving')]);

    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error']), 'done', await textOf(receiver, 'recv-error'));
    assert.equal(await waitState(sender, 'send-panel', ['done', 'error']), 'done', await textOf(sender, 'send-error'));
    await shot(sender, viewport, 'send-done');
    await shot(receiver, viewport, 'receive-done');
    await dl.delete();
    await sender.close();
    await receiver.close();
  });
}
