// Passphrase mode from the demo page to the ZebraStream reference client: the page encrypts
// with age-rt (scrypt passphrase), the Python CLI `zebrastream read` (zebrastream-io 0.5.4,
// in .venv) meets it through the Connect API and decrypts the same bytes.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startRelay, ROOT } from './lib/relay.mjs';
import { launchChromium, randomFile, sha256File, openDemo, dropFiles, waitState, textOf } from './lib/demo-browser.mjs';
import { skipUnless } from './lib/tools.mjs';

const ZEBRASTREAM = path.join(ROOT, '.venv/bin/zebrastream');

test('a page-sent passphrase stream decrypts with the ZebraStream Python client', { timeout: 180000, skip: skipUnless(ZEBRASTREAM, 'the ZebraStream client (.venv)') }, async () => {
  const relay = await startRelay();
  const browser = await launchChromium();
  const src = randomFile(5 * 1024 * 1024 + 123, 'measurements.csv');
  const out = path.join(src.dir, 'received.bin');
  try {
    const page = await browser.context.newPage();
    await openDemo(page, `${relay.https}/`);
    await page.click('#options summary');
    await page.check('#mode-passphrase');
    const suggested = await page.inputValue('#passphrase');
    assert.match(suggested, /^([a-z2-9]{5}-){4}[a-z2-9]{5}$/, 'a random passphrase is suggested');
    await page.click('#new-passphrase');
    assert.notEqual(await page.inputValue('#passphrase'), suggested, '"New" makes another one');
    const passphrase = 'tulip-harbor-97-quietly';
    await page.fill('#passphrase', passphrase);
    await dropFiles(page, [src.file]);
    await waitState(page, 'send-panel', ['waiting']);
    const link = await page.inputValue('#link');
    const streamPath = new URLSearchParams(new URL(link).hash.slice(1)).get('r');
    assert.match(await textOf(page, 'share-hint'), new RegExp(`Stream path: ${streamPath}`));

    const fd = fs.openSync(out, 'w');
    const py = spawn(ZEBRASTREAM, ['read', '--stream-path', streamPath, '--connect-url', `${relay.http}/connect/v0/`,
      '--passphrase', passphrase, '--access-token', 'open-mode-needs-none'], { stdio: ['ignore', fd, 'pipe'] });
    let stderr = '';
    py.stderr.on('data', (d) => { stderr += d; });
    const code = await new Promise((resolve) => py.on('exit', resolve));
    fs.closeSync(fd);
    assert.equal(code, 0, `zebrastream read failed: ${stderr}`);
    assert.equal(await waitState(page, 'send-panel', ['done', 'error'], 60000), 'done', await textOf(page, 'send-error'));
    assert.equal(await sha256File(out), src.sha256);
  } finally {
    await browser.close();
    await relay.stop();
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});
