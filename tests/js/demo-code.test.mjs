// Short codes in the demo (PROTOCOL.md §14, the default way to send): Chromium page → page
// through the real relay, the code typed into the second page as a person would; a wrong
// code fails both pages with "wrong code" and saves nothing; two senders at once get
// different codes; a code used once is refused the second time; text pasted onto the page is
// sent; the screen is kept on while a transfer runs.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startRelay } from './lib/relay.mjs';
import {
  launchChromium, randomFile, sha256File, openDemo, waitState, progressOf, textOf, screenshot,
  forbidForeignRequests, sendByCode, receiveByCode,
} from './lib/demo-browser.mjs';

const MiB = 1024 * 1024;
const CODE = /^[1-9]\d{0,2}-[a-z]+-[a-z]+$/;
let relay; let senderBrowser; let receiverBrowser;

test.before(async () => {
  relay = await startRelay();
  senderBrowser = await launchChromium();
  receiverBrowser = await launchChromium();
  await receiverBrowser.context.addInitScript(() => localStorage.setItem('httpipe.save', 'sw'));
});

test.after(async () => {
  await senderBrowser?.close();
  await receiverBrowser?.close();
  await relay?.stop();
});

test('100 MiB page → page by a short code typed into the second page: the same bytes, nothing outside the relay', { timeout: 180000 }, async () => {
  const src = randomFile(100 * MiB, 'field recordings.wav');
  try {
    const origin = relay.https;
    const { page: sender, code } = await sendByCode(senderBrowser, origin, [src.file]);
    const foreign = forbidForeignRequests(sender, origin);
    assert.match(code, CODE);
    assert.equal(await sender.getAttribute('#send-panel', 'data-mode'), 'code');
    assert.ok(await sender.$('#qr svg'), 'QR code rendered');
    assert.match(await textOf(sender, 'send-status'), /Waiting for the receiver to enter the code/);
    // the copy button gives the code; the link button the short link the QR code holds
    await senderBrowser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    await sender.click('#copy-code');
    assert.equal(await sender.evaluate(() => navigator.clipboard.readText()), code);
    await sender.click('#copy-code-link');
    assert.equal(await sender.evaluate(() => navigator.clipboard.readText()), `${origin}/#code=${code}`);

    // typed as heard: capitals and spaces
    const typed = code.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join(' ');
    const { page: receiver, download } = await receiveByCode(receiverBrowser, origin, typed);
    const rForeign = forbidForeignRequests(receiver, origin);
    const dl = await download;
    assert.equal(dl.suggestedFilename(), 'field recordings.wav', 'the name came in the sealed offer');
    // the screen stays on while the transfer runs (or the browser said no: headless may)
    assert.ok(['held', 'refused', 'unsupported'].includes(await receiver.evaluate(() => document.body.dataset.wakeLock)));
    assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error', 'cancelled'], 150000), 'done',
      await textOf(receiver, 'recv-error'));
    assert.equal(await waitState(sender, 'send-panel', ['done', 'error', 'cancelled'], 60000), 'done',
      await textOf(sender, 'send-error'));
    assert.equal(await sha256File(await dl.path()), src.sha256);
    assert.match(await textOf(receiver, 'recv-summary'), /^field recordings\.wav · 100 MiB$/);
    assert.match(await textOf(receiver, 'recv-status'), /Done: 100 MiB received and verified/);
    assert.equal(await textOf(receiver, 'recv-title'), 'Received');
    assert.equal(await textOf(sender, 'send-title'), 'Sent');
    assert.match(await textOf(sender, 'send-status'), /Delivered/);
    assert.deepEqual(await progressOf(sender, 'send-progress'), { value: 100, max: 100 });
    assert.deepEqual(await progressOf(receiver, 'recv-progress'), { value: 100, max: 100 });
    // finished: the spent code is gone, "send another" / "receive another" are offered
    assert.equal(await sender.isVisible('#send-code'), false);
    assert.equal(await sender.isVisible('#send-new'), true);
    assert.equal(await receiver.isVisible('#recv-new'), true);
    assert.notEqual(await sender.evaluate(() => document.body.dataset.wakeLock), 'held', 'the screen may sleep again');
    assert.deepEqual(foreign, [], 'sender page requested nothing outside the relay');
    assert.deepEqual(rForeign, [], 'receiver page requested nothing outside the relay');

    // "receive another" gives an empty code field, ready to type
    await receiver.click('#recv-new');
    await receiver.waitForFunction(() => document.activeElement.id === 'recv-code');
    assert.equal(await receiver.inputValue('#recv-code'), '');
    await dl.delete();
    await sender.close();
    await receiver.close();
  } finally {
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

test('a wrong code: both pages say "wrong code", nothing is saved, the code and QR code are gone', { timeout: 60000 }, async () => {
  const src = randomFile(3 * MiB, 'contract.pdf');
  try {
    const { page: sender, code } = await sendByCode(senderBrowser, relay.https, [src.file]);
    const [n, odd, even] = code.split('-');
    const wrong = `${n}-${odd === 'adroitness' ? 'adviser' : 'adroitness'}-${even}`; // the right channel, another word
    const { page: receiver } = await receiveByCode(receiverBrowser, relay.https, wrong);
    let downloads = 0;
    receiver.on('download', () => { downloads++; });
    assert.equal(await waitState(receiver, 'recv-panel', ['error', 'done'], 30000), 'error');
    assert.equal(await waitState(sender, 'send-panel', ['error', 'done'], 30000), 'error');
    assert.equal(await textOf(receiver, 'recv-status'), 'Wrong code.');
    assert.equal(await textOf(sender, 'send-status'), 'Wrong code.');
    assert.match(await textOf(receiver, 'recv-error'), /doesn't match the sender's code.*Nothing was received/);
    assert.match(await textOf(sender, 'send-error'), /wrong code.*Nothing was sent.*new code/);
    assert.equal(await sender.isVisible('#send-code'), false, 'the spent code is hidden');
    assert.equal(await sender.isVisible('#qr'), false, 'its QR code too');
    assert.equal(await textOf(sender, 'send-retry'), 'Send again with a new code');
    await screenshot(sender, 'demo-sender-wrong-code.png');
    await screenshot(receiver, 'demo-receiver-wrong-code.png');
    assert.equal(downloads, 0, 'nothing was saved');
    // "Send again" makes a new code, which works
    await sender.click('#send-retry');
    await sender.waitForFunction((old) => {
      const c = document.getElementById('send-code').textContent;
      return c && c !== old;
    }, code, { timeout: 30000 });
    const fresh = await textOf(sender, 'send-code');
    const download = receiver.waitForEvent('download', { timeout: 60000 });
    await receiver.click('#recv-retry');
    await receiver.fill('#recv-code', fresh);
    await receiver.press('#recv-code', 'Enter');
    const dl = await download;
    assert.equal(await waitState(receiver, 'recv-panel', ['error', 'done'], 60000), 'done', await textOf(receiver, 'recv-error'));
    assert.equal(await sha256File(await dl.path()), src.sha256);
    assert.equal(await waitState(sender, 'send-panel', ['error', 'done'], 30000), 'done');
    await dl.delete();
    await sender.close();
    await receiver.close();
  } finally {
    fs.rmSync(src.dir, { recursive: true, force: true });
  }
});

test('two senders at once get different codes; a code used once is refused the second time', { timeout: 90000 }, async () => {
  const a = randomFile(100 * 1024, 'a.bin');
  const b = randomFile(100 * 1024, 'b.bin');
  try {
    const [first, second] = await Promise.all([
      sendByCode(senderBrowser, relay.https, [a.file]),
      sendByCode(senderBrowser, relay.https, [b.file]),
    ]);
    assert.notEqual(first.code, second.code);
    assert.notEqual(first.code.split('-')[0], second.code.split('-')[0], 'two live senders hold two channels');
    // each code finds its own sender
    for (const [{ page, code }, src] of [[first, a], [second, b]]) {
      const { page: receiver, download } = await receiveByCode(receiverBrowser, relay.https, code);
      const dl = await download;
      assert.equal(await waitState(receiver, 'recv-panel', ['error', 'done'], 60000), 'done', await textOf(receiver, 'recv-error'));
      assert.equal(await sha256File(await dl.path()), src.sha256);
      assert.equal(await waitState(page, 'send-panel', ['error', 'done'], 30000), 'done');
      await dl.delete();
      await receiver.close();
    }
    // the first code again, after its transfer: nobody sends on it any more
    const { page: again } = await receiveByCode(receiverBrowser, relay.https, first.code);
    assert.equal(await waitState(again, 'recv-panel', ['error', 'done'], 30000), 'error');
    assert.equal(await textOf(again, 'recv-status'), 'Wrong code.');
    assert.match(await textOf(again, 'recv-error'), /Nobody is sending with this code: it was used already/);
    await again.close();
    await first.page.close();
    await second.page.close();
  } finally {
    fs.rmSync(a.dir, { recursive: true, force: true });
    fs.rmSync(b.dir, { recursive: true, force: true });
  }
});

// Issue #14's new-user pass: pasting text onto the page did nothing (only files were taken).
test('text pasted onto the start page is sent by code and shown in the receiving page', { timeout: 60000 }, async () => {
  const text = 'Wi-Fi: harbour-guest\nPassword: 7 blue tulips ✓';
  const sender = await senderBrowser.context.newPage();
  await openDemo(sender, `${relay.https}/`);
  await senderBrowser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: relay.https });
  await sender.evaluate((t) => navigator.clipboard.writeText(t), text);
  await sender.locator('body').click({ position: { x: 5, y: 5 } }); // focus on the page, not a field
  await sender.keyboard.press('ControlOrMeta+V');
  await sender.waitForFunction(() => document.getElementById('send-code').textContent, null, { timeout: 30000 });
  assert.match(await textOf(sender, 'send-summary'), /^Text · 4\d B$/);
  const code = await textOf(sender, 'send-code');
  // a code pasted onto the page goes into the receive field instead of being sent
  const receiver = await receiverBrowser.context.newPage();
  await openDemo(receiver, `${relay.https}/`);
  await receiverBrowser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: relay.https });
  await receiver.evaluate((c) => navigator.clipboard.writeText(c), code);
  await receiver.locator('body').click({ position: { x: 5, y: 5 } });
  await receiver.keyboard.press('ControlOrMeta+V');
  assert.equal(await receiver.inputValue('#open-input'), code);
  assert.equal(await receiver.evaluate(() => document.body.dataset.view), 'start', 'nothing was sent');
  await receiver.press('#open-input', 'Enter');
  assert.equal(await waitState(receiver, 'recv-panel', ['done', 'error'], 30000), 'done', await textOf(receiver, 'recv-error'));
  assert.equal(await textOf(receiver, 'recv-text'), text);
  assert.equal(await waitState(sender, 'send-panel', ['done', 'error']), 'done');
  await screenshot(receiver, 'demo-receiver-pasted-text.png');
  await sender.close();
  await receiver.close();
});
