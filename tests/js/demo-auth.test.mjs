// The demo on a relay in auth mode (PROTOCOL.md §6). Issue #14's new-user pass: there was no
// way to give a token. The page sees the relay wants tokens (its /help says so), shows the
// token field on the start screen and sends by link with the sender's write token; the receiver
// is asked for its read token before anything is requested, and a token that doesn't fit is
// said so plainly, with a way to give another. Issue #26: short codes work there too, with a
// code token on both sides (the way of sending follows the kind of token entered).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { startRelay, RELAY_BIN } from './lib/relay.mjs';
import {
  launchChromium, randomFile, sha256File, openDemo, dropFiles, waitState, textOf, screenshot, unlabelledControls,
} from './lib/demo-browser.mjs';

const KEY = 'demo-auth-test-key-0123456789abcdef';

function mint(mode) {
  const path = mode === 'code' ? [] : ['--path', '/s', '--recursive'];
  return execFileSync(RELAY_BIN, ['token', ...path, '--mode', mode, '--ttl', '1h'],
    { env: { ...process.env, HTTPIPE_AUTH_KEY: KEY } }).toString().trim();
}

test('auth mode: a token field on the start screen, a transfer with a write and a read token, one by code with code tokens', { timeout: 150000 }, async () => {
  const relay = await startRelay({ env: { HTTPIPE_AUTH_KEY: KEY } });
  const senderBrowser = await launchChromium();
  const receiverBrowser = await launchChromium();
  const src = randomFile(5 * 1024 * 1024 + 1, 'budget.xlsx');
  try {
    const write = mint('write');
    const read = mint('read');
    await receiverBrowser.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
    const sender = await senderBrowser.context.newPage();
    await openDemo(sender, `${relay.https}/`);
    assert.equal(await sender.evaluate(() => document.body.dataset.auth), 'true');
    assert.equal(await sender.isVisible('#token'), true, 'the token field is on the start screen, not folded away');
    assert.equal(await sender.isDisabled('#mode-code'), false, 'short codes are offered (with a code token)');
    assert.equal(await sender.evaluate(() => document.getElementById('code-token').hidden), false);
    assert.deepEqual(await unlabelledControls(sender), []);
    await screenshot(sender, 'demo-auth-start.png');
    // no token: nothing is sent, the page asks for one
    await dropFiles(sender, [src.file]);
    assert.match(await textOf(sender, 'drop-msg'), /needs an access token/);
    assert.equal(await sender.evaluate(() => document.activeElement.id), 'token');
    assert.equal(await sender.evaluate(() => document.body.dataset.view), 'start');
    await sender.fill('#token', write);
    assert.equal(await sender.isChecked('#mode-link'), true, 'a write token sends by link');
    await dropFiles(sender, [src.file]);
    await waitState(sender, 'send-panel', ['waiting']);
    const link = await sender.inputValue('#link');

    const receiver = await receiverBrowser.context.newPage();
    await openDemo(receiver, link);
    // asked for a token before any request
    assert.equal(await receiver.isVisible('#recv-token'), true);
    assert.equal(await receiver.evaluate(() => document.activeElement.id), 'recv-token');
    assert.equal(await receiver.getAttribute('#recv-panel', 'data-state'), 'idle');
    // the wrong one (the sender's write token): said plainly, and another can be given
    await receiver.fill('#recv-token', write);
    await receiver.press('#recv-token', 'Enter');
    assert.equal(await waitState(receiver, 'recv-panel', ['error', 'done'], 30000), 'error');
    assert.equal(await textOf(receiver, 'recv-status'), "The access token doesn't fit.");
    assert.match(await textOf(receiver, 'recv-error'), /read token/);
    await receiver.click('#recv-retry');
    assert.equal(await receiver.evaluate(() => document.activeElement.id), 'recv-token');
    await receiver.fill('#recv-token', read);
    const download = receiver.waitForEvent('download', { timeout: 60000 });
    await receiver.press('#recv-token', 'Enter');
    const dl = await download;
    assert.equal(await waitState(receiver, 'recv-panel', ['error', 'done'], 60000), 'done', await textOf(receiver, 'recv-error'));
    assert.equal(await sha256File(await dl.path()), src.sha256);
    assert.equal(await waitState(sender, 'send-panel', ['error', 'done'], 60000), 'done', await textOf(sender, 'send-error'));
    assert.match(await textOf(sender, 'send-status'), /Delivered/);

    // the relay's /help, which the page reads, still says tokens are needed (and an open one doesn't)
    assert.match(await (await fetch(`${relay.http}/help`)).text(), /requires access tokens/);
    await dl.delete();

    // by short code: a code token on both sides (PROTOCOL.md §6, §14)
    const codeToken = mint('code');
    const small = randomFile(300 * 1024 + 3, 'notes.bin');
    try {
      const cs = await senderBrowser.context.newPage();
      await openDemo(cs, `${relay.https}/`);
      // a write token, then short codes chosen by hand: said before anything is sent
      await cs.fill('#token', write);
      await cs.click('#options summary');
      await cs.check('#mode-code');
      await dropFiles(cs, [small.file]);
      assert.match(await textOf(cs, 'drop-msg'), /short codes need a code token/);
      assert.equal(await cs.evaluate(() => document.body.dataset.view), 'start');
      await cs.fill('#token', codeToken);
      assert.equal(await cs.isChecked('#mode-code'), true, 'a code token sends by code');
      await dropFiles(cs, [small.file]);
      await cs.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
      const code = await textOf(cs, 'send-code');
      assert.match(await textOf(cs, 'share-hint'), /need a code token/);

      const cr = await receiverBrowser.context.newPage();
      await openDemo(cr, `${relay.https}/`);
      await cr.fill('#open-input', code);
      await cr.press('#open-input', 'Enter');
      // asked for the token before any request, the code kept
      await cr.waitForFunction(() => document.activeElement.id === 'recv-token');
      assert.equal(await cr.inputValue('#recv-code'), code);
      assert.equal(await cr.getAttribute('#recv-panel', 'data-state'), 'idle');
      await cr.fill('#recv-token', codeToken);
      const codeDownload = cr.waitForEvent('download', { timeout: 60000 });
      await cr.press('#recv-token', 'Enter');
      const cdl = await codeDownload;
      assert.equal(await waitState(cr, 'recv-panel', ['error', 'done'], 60000), 'done', await textOf(cr, 'recv-error'));
      assert.equal(await sha256File(await cdl.path()), small.sha256);
      assert.equal(await waitState(cs, 'send-panel', ['error', 'done'], 60000), 'done', await textOf(cs, 'send-error'));
      await cdl.delete();
    } finally {
      fs.rmSync(small.dir, { recursive: true, force: true });
    }
  } finally {
    await senderBrowser.close();
    await receiverBrowser.close();
    await relay.stop();
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});
