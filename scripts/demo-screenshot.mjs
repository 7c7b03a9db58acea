// Regenerates docs/demo.png (the README's picture of the demo): a real transfer between two
// headless Chromium profiles through a real relay, captured mid-way, sender and receiver side
// by side. Usage: node scripts/demo-screenshot.mjs   (needs the release relay and pkg/ built)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT } from '../tests/js/lib/relay.mjs';
import { launchChromium, openDemo, dropFiles, waitState } from '../tests/js/lib/demo-browser.mjs';

const relay = await startRelay();
const a = await launchChromium();
const b = await launchChromium();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-shot-'));
const file = path.join(dir, 'Holiday 2026.mp4');
fs.closeSync(fs.openSync(file, 'w'));
fs.truncateSync(file, 2 * 1024 ** 3);
try {
  const size = { width: 640, height: 760 };
  const sender = await a.context.newPage();
  await sender.setViewportSize(size);
  await openDemo(sender, `${relay.https}/`);
  await dropFiles(sender, [file]);
  await waitState(sender, 'send-panel', ['waiting']);
  await b.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
  const receiver = await b.context.newPage();
  await receiver.setViewportSize(size);
  await openDemo(receiver, await sender.inputValue('#link'));
  await receiver.waitForFunction(() => document.getElementById('recv-progress').value >= 35, null, { timeout: 600000, polling: 100 });
  const [left, right] = await Promise.all([sender.screenshot(), receiver.screenshot()]);
  await sender.click('#send-cancel');
  const board = await a.context.newPage();
  await board.setViewportSize({ width: 2 * size.width + 48, height: size.height + 64 });
  const img = (png, caption) => `<figure><figcaption>${caption}</figcaption><img src="data:image/png;base64,${png.toString('base64')}"></figure>`;
  await board.setContent(`<style>
    body { margin: 0; padding: 16px; display: flex; gap: 16px; background: #dde2e8; font: 600 15px system-ui, sans-serif; }
    figure { margin: 0; } figcaption { margin: 0 0 6px 4px; color: #333; }
    img { display: block; border-radius: 8px; box-shadow: 0 2px 8px rgba(0,0,0,.18); }
  </style>${img(left, 'Sender')}${img(right, 'Receiver (another browser or device, via the link or QR code)')}`);
  const out = path.join(ROOT, 'docs/demo.png');
  await board.screenshot({ path: out, fullPage: true });
  console.log(`wrote ${out}`);
} finally {
  await a.close();
  await b.close();
  await relay.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
