// Delivery receipts (PROTOCOL.md §12) in Node through the real relay: send() resolves only on
// the receiver's receipt, rejects when the receiver cancelled or failed after the relay had
// handed it every byte, refuses forged receipts, and falls back to the relay's verdict
// (receipt undefined) with peers that don't send receipts (curl; raw fetch without a hello).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './lib/relay.mjs';
import { PKG, uniquePath, randomSource, hashStream, rejection, sleep, within, channelOf } from './lib/sdk.mjs';

const sdk = await import(PKG);
let relay;
before(async () => { relay = await startRelay(); });
after(async () => { await relay?.stop(); });

const KiB = 1024;
const MiB = 1024 * KiB;
const identity = sdk.generateIdentity();
const recipient = sdk.identityToRecipient(identity);
const PASS = 'receipt passphrase';
const CRYPTO = {
  plain: { send: {}, recv: {}, authenticated: false },
  'age-rt passphrase': { send: { passphrase: PASS }, recv: { passphrase: PASS }, authenticated: true },
  'age x25519': { send: { recipients: [recipient], format: 'age' }, recv: { identities: [identity] }, authenticated: true },
};

/** Resolves once `n` Connect callers wait at the relay (`/metrics`, PROTOCOL.md §9). */
async function untilConnectWaiting(n, ms = 20_000) {
  const end = performance.now() + ms;
  for (;;) {
    const text = await (await fetch(`${relay.http}/metrics`)).text();
    const waiting = /^httpipe_connect_waiting (\d+)$/m.exec(text)?.[1];
    if (Number(waiting) === n) return;
    if (performance.now() > end) throw new Error(`the relay does not report ${n} Connect waiter(s) after ${ms} ms (it reports ${waiting})`);
    await sleep(50);
  }
}


for (const [name, c] of Object.entries(CRYPTO)) {
  for (const upload of ['stream', 'segmented']) {
    test(`${name}, ${upload}: send() resolves with the receiver's receipt (count, digest, authenticated)`, async () => {
      const size = 3 * MiB + 5;
      const path = uniquePath('rcpt');
      const common = { relay: relay.http, path };
      const { stream, digest } = randomSource(size, 100 * KiB + 3);
      const sendP = sdk.send(stream, { ...common, ...c.send, upload, partSize: 512 * KiB, size });
      const got = await sdk.receive({ ...common, ...c.recv }).then((r) => hashStream(r.stream));
      const report = await within(sendP, 20_000, 'send');
      assert.equal(got.bytes, size);
      assert.equal(got.sha256, await digest);
      assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
      assert.ok(report.receipt, 'a receipt');
      assert.equal(report.receipt.bytes, size);
      // XXH3-128 of the bytes (plain), SHA-256 of the chunk tags (decrypted)
      assert.match(report.receipt.digest, c.authenticated ? /^[0-9a-f]{64}$/ : /^[0-9a-f]{32}$/);
      assert.equal(report.receipt.authenticated, c.authenticated);
    });
  }
}

test('the plain digest is the bytes\' (same bytes, same digest; one byte changed, another)', async () => {
  const bytes = randomFillSync(new Uint8Array(200 * KiB));
  const other = bytes.slice(); other[12345] ^= 1;
  const digests = [];
  for (const b of [bytes, bytes, other]) {
    const path = uniquePath('dig');
    const sendP = sdk.send(b, { relay: relay.http, path });
    await sdk.receive({ relay: relay.http, path }).then((r) => hashStream(r.stream));
    digests.push((await sendP).receipt.digest);
  }
  assert.equal(digests[0], digests[1]);
  assert.notEqual(digests[0], digests[2]);
});

test('an empty transfer gets its receipt too', async () => {
  const path = uniquePath('empty');
  const sendP = sdk.send(new Uint8Array(0), { relay: relay.http, path });
  const got = await sdk.receive({ relay: relay.http, path }).then((r) => hashStream(r.stream));
  const report = await sendP;
  assert.equal(got.bytes, 0);
  assert.equal(report.receipt.bytes, 0);
});

test('a receiver that cancels after the relay handed it every byte: send() rejects PEER_DISCONNECTED', async () => {
  // 48 kB fit in the consumer's socket and fetch buffers: the relay reports success while
  // the receiver has read nothing. (The relay says so only once the consumer's side took every
  // byte, §3.2: 200 kB didn't fit once on a loaded machine — the sender then never waits for a
  // receipt and this test timed out — and 1 MB often doesn't.)
  const path = uniquePath('cancel');
  const sendE = rejection(sdk.send(randomFillSync(new Uint8Array(48_000)), { relay: relay.http, path }));
  const r = await sdk.receive({ relay: relay.http, path });
  // the relay's success has reached the sender once it waits for the receipt on the
  // transfer's channel: then the cancel can only reach it as the receiver's receipt. Two
  // Connect callers then: that wait and the sender's presence call (§12.5), open from the
  // rendezvous to the verdict. (Waiting for 1 caught the presence call alone, before the
  // relay's success, or never: in CI the first look came after it, and 2 stayed for 20 s.)
  await untilConnectWaiting(2);
  await r.stream.cancel('the user said no');
  const e = await within(sendE, 10_000, 'send');
  assert.equal(e.code, 'PEER_DISCONNECTED', e.message);
  assert.match(e.message, /cancelled after \d+ of the 48000 bytes sent/);
});

test('a receiver that never confirms: send() rejects UNCONFIRMED after receiptTimeout', async () => {
  const path = uniquePath('silent');
  const t0 = performance.now();
  const sendE = rejection(sdk.send(randomFillSync(new Uint8Array(100_000)), { relay: relay.http, path, receiptTimeout: 2 }));
  const r = await sdk.receive({ relay: relay.http, path, receipt: 'manual' });
  await hashStream(r.stream);
  const e = await within(sendE, 10_000, 'send');
  assert.equal(e.code, 'UNCONFIRMED', e.message);
  assert.match(e.message, /no receipt within 2 s/);
  assert.ok(performance.now() - t0 >= 2000);
});

test("receipt: 'manual': send() resolves only after confirm()", async () => {
  const path = uniquePath('manual');
  let settled = false;
  const sendP = sdk.send(randomFillSync(new Uint8Array(300_000)), { relay: relay.http, path });
  sendP.then(() => { settled = true; }, () => { settled = true; });
  const r = await sdk.receive({ relay: relay.http, path, receipt: 'manual' });
  assert.equal(typeof r.confirm, 'function');
  const early = await rejection(r.confirm());
  assert.equal(early.code, 'UNSUPPORTED', 'confirm() before the end of the stream');
  const got = await hashStream(r.stream);
  await sleep(1500);
  assert.equal(settled, false, 'no success before the application confirmed');
  await within(r.confirm(), 10_000, 'confirm');
  const report = await within(sendP, 10_000, 'send');
  assert.equal(report.receipt.bytes, got.bytes);
});

// Regression (#25 item 4): a receiver piping `received.stream` into a file on a full disk
// confirmed all 8 MiB (the stream was read to its end before the write error surfaced).
// receiveTo confirms only after the destination took every byte and closed.
test('receiveTo: the receipt goes out after the file is written; a full disk (/dev/full) never confirms', { timeout: 60_000 }, async () => {
  const size = 8 * MiB + 3;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-receive-to-'));
  try {
    // a file: complete before the sender resolves
    let p = uniquePath('to-file');
    const { stream, digest } = randomSource(size, 256 * KiB);
    const sendP = sdk.send(stream, { relay: relay.http, path: p, size, passphrase: PASS });
    const file = path.join(dir, 'saved.bin');
    const info = await within(sdk.receiveTo(fs.createWriteStream(file), { relay: relay.http, path: p, passphrase: PASS }), 30_000, 'receiveTo');
    assert.equal(info.filename, undefined);
    const report = await within(sendP, 10_000, 'send');
    assert.equal(report.receipt.bytes, size);
    assert.equal(report.receipt.authenticated, true);
    assert.equal(createHash('sha256').update(fs.readFileSync(file)).digest('hex'), await digest);
    // a WritableStream works the same
    p = uniquePath('to-web');
    const sendW = sdk.send('into a web stream', { relay: relay.http, path: p });
    const parts = [];
    await sdk.receiveTo(new WritableStream({ write(c) { parts.push(c); } }), { relay: relay.http, path: p });
    assert.equal(Buffer.concat(parts).toString(), 'into a web stream');
    assert.equal((await sendW).receipt.bytes, 17);
    // a full disk: the write fails, receiveTo rejects with it, the sender never resolves
    if (fs.existsSync('/dev/full')) {
      p = uniquePath('to-full');
      const big = randomSource(size, 256 * KiB);
      const sendE = rejection(sdk.send(big.stream, { relay: relay.http, path: p, size }));
      const e = await rejection(sdk.receiveTo(fs.createWriteStream('/dev/full'), { relay: relay.http, path: p }));
      assert.equal(e.code, 'ENOSPC', e.message);
      const s = await within(sendE, 20_000, 'send');
      assert.equal(s.code, 'PEER_DISCONNECTED', s.message);
    }
    // not a destination: a clear error before anything is received
    const bad = await rejection(sdk.receiveTo({}, { relay: relay.http, path: uniquePath('bad') }));
    assert.equal(bad.code, 'UNSUPPORTED');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a receiver that fails (WRONG_KEY) on a small payload: send() rejects PEER_DISCONNECTED naming it', async () => {
  const path = uniquePath('wrongkey');
  const sendE = rejection(sdk.send('a small secret', { relay: relay.http, path, passphrase: 'right' }));
  const r = await sdk.receive({ relay: relay.http, path, passphrase: 'wrong' });
  const re = await rejection(hashStream(r.stream));
  assert.equal(re.code, 'WRONG_KEY');
  const e = await within(sendE, 15_000, 'send');
  assert.equal(e.code, 'PEER_DISCONNECTED', e.message);
  assert.match(e.message, /WRONG_KEY/);
  // the receiver's code, for a sender that acts on it (PROTOCOL.md §12.2)
  assert.equal(e.peerCode, 'WRONG_KEY');
});

// Regressions (#26): a receiver with only the path (no key) stored the ciphertext and its
// receipt made send() resolve (the demo said "Delivered"); `passphrase: ''` encrypted with
// the empty passphrase.
test('a receiver without keys: refuses the ciphertext (WRONG_KEY), and its receipt never delivers', async () => {
  const common = { relay: relay.http };
  // by default the keyless receiver fails before the header line reaches it
  let path = uniquePath('keyless');
  const sendE = rejection(sdk.send('a secret', { ...common, path, passphrase: PASS }));
  let r = await sdk.receive({ ...common, path });
  const chunks = [];
  const re = await rejection((async () => { for await (const c of r.stream) chunks.push(c); })());
  assert.equal(re.code, 'WRONG_KEY', re.message);
  assert.match(re.message, /the stream is encrypted \(age-rt\)/);
  assert.ok(!new TextDecoder().decode(Buffer.concat(chunks)).includes('age-rt-encryption/'), 'no header line released');
  const e = await within(sendE, 15_000, 'send');
  assert.equal(e.code, 'PEER_DISCONNECTED', e.message);
  assert.equal(e.peerCode, 'WRONG_KEY');
  // asked for the ciphertext: stored, but the sender is not told "delivered"
  path = uniquePath('keyless');
  const sendU = rejection(sdk.send('a secret', { ...common, path, passphrase: PASS }));
  r = await sdk.receive({ ...common, path, ciphertext: true });
  const cipher = new Uint8Array(await new Response(r.stream).arrayBuffer());
  assert.ok(cipher.byteLength > 'a secret'.length);
  const u = await within(sendU, 15_000, 'send');
  assert.equal(u.code, 'UNCONFIRMED', u.message);
  assert.match(u.message, /holds no key/);
});

// Regression (PROTOCOL.md §12.1 `plain`): an age file sent as it is to a receiver that
// decrypts it: the receiver's receipt committed to the plaintext, and send() rejected
// UNCONFIRMED ("says 11 bytes arrived, but 211 were sent") on a complete transfer.
test('an age file sent as it is, to a receiver that decrypts it: delivered, the receipt on the bytes sent', async () => {
  const id = sdk.generateIdentity();
  for (const format of ['age', 'age-rt']) {
    const file = new Uint8Array(await new Response(new Blob(['hello world']).stream()
      .pipeThrough(sdk.encryptStream({ recipients: [sdk.identityToRecipient(id)], format }))).arrayBuffer());
    const path = uniquePath('agefile');
    const got = sdk.receive({ relay: relay.http, path, identities: [id] }).then((r) => new Response(r.stream).text());
    const report = await sdk.send(file, { relay: relay.http, path });
    assert.equal(await got, 'hello world', format);
    assert.deepEqual([report.receipt.bytes, report.receipt.authenticated], [file.byteLength, false], format);
  }
});

test("an empty passphrase is refused on both sides (UNSUPPORTED)", async () => {
  for (const call of [
    () => sdk.send('x', { relay: relay.http, path: uniquePath('empty'), passphrase: '' }),
    () => sdk.receive({ relay: relay.http, path: uniquePath('empty'), passphrase: '' }),
  ]) {
    const e = await rejection(call());
    assert.equal(e.code, 'UNSUPPORTED', e.message);
    assert.match(e.message, /`passphrase` is empty/);
  }
});

// Regression: `recipients: []` (a list that came out empty) sent the data in the clear and
// resolved like any plain send; it is refused before anything waits, as in encryptStream.
test('recipients: [] is refused before anything waits (UNSUPPORTED), never sent in the clear', async () => {
  const path = uniquePath('norecipients');
  for (const call of [
    () => sdk.send('TOP SECRET', { relay: relay.http, path, recipients: [], rendezvous: false }),
    () => sdk.openWriter({ relay: relay.http, path, recipients: [], rendezvous: false }).done,
  ]) {
    const e = await within(rejection(call()), 5_000, 'the refusal');
    assert.equal(e.code, 'UNSUPPORTED', e.message);
    assert.match(e.message, /`recipients` is empty/);
  }
  // nothing reached the relay: a consumer there finds no sender
  const res = await fetch(`${relay.http}${path}`, { signal: AbortSignal.timeout(1_500) }).catch((e) => e);
  assert.ok(res instanceof Error, `no sender on the path (got ${res.status})`);
});

test('receipt: false on either side: the relay\'s verdict, no receipt', async () => {
  for (const [s, r] of [[{ receipt: false }, {}], [{}, { receipt: false }]]) {
    const path = uniquePath('off');
    const sendP = sdk.send('hello', { relay: relay.http, path, ...s });
    await sdk.receive({ relay: relay.http, path, ...r }).then((x) => hashStream(x.stream));
    const report = await within(sendP, 10_000, 'send');
    assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
    assert.equal(report.receipt, undefined);
  }
});

test('curl as the consumer: relay-level success, marked unconfirmed (no receipt)', async () => {
  const path = uniquePath('curl');
  const sendP = sdk.send('for curl\n', { relay: relay.http, path });
  const out = await new Promise((resolve, reject) => {
    const p = spawn('curl', ['-sSf', `${relay.http}${path}`]);
    let s = '';
    p.stdout.on('data', (d) => { s += d; });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`curl exited ${code}`))));
  });
  assert.equal(out, 'for curl\n');
  const report = await within(sendP, 10_000, 'send');
  assert.equal(report.receipt, undefined);
  assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
});

/** A consumer that speaks §5.1/§12 by hand: rendezvous with a receipt hello, read everything. */
async function handConsumer(path) {
  const rv = await fetch(`${relay.http}/connect/v0${path}?mode=await-writer`, {
    headers: { 'X-Httpipe-Hello': 'httpipe=1; receipt' },
  });
  assert.equal(rv.status, 200);
  const hello = rv.headers.get('x-httpipe-peer-hello');
  const transfer = /transfer=([A-Za-z0-9_-]+)/.exec(hello)[1];
  const data = new Uint8Array(await (await fetch((await rv.text()).trim())).arrayBuffer());
  const ch = channelOf(transfer);
  const sendReceipt = (text) => fetch(`${relay.http}/connect/v0${path}?mode=await-writer&${ch.query}&timeout=10`, {
    headers: { 'X-Httpipe-Hello': text, ...ch.headers },
  });
  return { data, transfer, sendReceipt };
}

test('a forged receipt is refused: wrong digest (plain), wrong key (encrypted), another count', async () => {
  const cases = [
    ['plain, wrong digest', {}, (n) => `httpipe-receipt=1; status=ok; bytes=${n}; digest=${'A'.repeat(43)}`],
    ['plain, another count', {}, (n) => `httpipe-receipt=1; status=ok; bytes=${n + 1}; digest=${'A'.repeat(43)}`],
    ['encrypted, made without the key', { passphrase: PASS },
      () => `httpipe-receipt=1; status=ok; bytes=5; digest=${'A'.repeat(43)}; mac=${'B'.repeat(43)}`],
    ['encrypted, no mac', { passphrase: PASS }, () => `httpipe-receipt=1; status=ok; bytes=5; digest=${'A'.repeat(43)}`],
  ];
  for (const [what, opts, forge] of cases) {
    const path = uniquePath('forge');
    const sendE = rejection(sdk.send('hello', { relay: relay.http, path, ...opts }));
    const { sendReceipt } = await handConsumer(path);
    const answer = await sendReceipt(forge(5));
    assert.equal(answer.status, 200, what);
    const e = await within(sendE, 10_000, what);
    assert.equal(e.code, 'UNCONFIRMED', `${what}: ${e.message}`);
  }
});

test('a receipt for another transfer on the same path does not confirm this one', async () => {
  const path = uniquePath('other');
  const sendE = rejection(sdk.send('hello', { relay: relay.http, path, receiptTimeout: 2 }));
  const { sendReceipt } = await handConsumer(path);
  // a channel nobody waits on: the call times out at the relay, the producer never sees it
  const other = channelOf('not-the-transfer');
  const answer = await fetch(`${relay.http}/connect/v0${path}?mode=await-writer&${other.query}&timeout=1`, {
    headers: { 'X-Httpipe-Hello': 'httpipe-receipt=1; status=ok; bytes=5; digest=x', ...other.headers },
  });
  assert.equal(answer.status, 408);
  void sendReceipt;
  const e = await within(sendE, 10_000, 'send');
  assert.equal(e.code, 'UNCONFIRMED', e.message);
});

/**
 * A producer that speaks §5.1/§12 by hand: it promises receipts and its end (`attest`), uploads
 * `body` with a clean end, then answers the consumer's receipt on the channel with `end` as its
 * hello (none when undefined). Resolves with the consumer's receipt it met.
 */
async function handProducer(path, body, end) {
  const transfer = randomBytes(16).toString('base64url');
  const rv = await fetch(`${relay.http}/connect/v0${path}?mode=await-reader`, {
    headers: { 'X-Httpipe-Hello': `httpipe=1; transfer=${transfer}; receipt; attest` },
  });
  assert.equal(rv.status, 200);
  const up = await fetch((await rv.text()).trim(), { method: 'POST', body });
  assert.match(await up.text(), /TRANSFER_SUCCESSFUL/);
  const ch = channelOf(transfer);
  const wait = await fetch(`${relay.http}/connect/v0${path}?mode=await-reader&${ch.query}&timeout=10`, {
    headers: { ...(end === undefined ? {} : { 'X-Httpipe-Hello': end }), ...ch.headers },
  });
  assert.equal(wait.status, 200);
  return wait.headers.get('x-httpipe-peer-hello');
}

// PROTOCOL.md §12.2 "The producer's end" (issue #25 item 2): a clean end of the body is only
// the relay's word. A producer whose clean-looking end is short of what it states, that states
// no end after promising one, or that sends its failure notice instead, leaves its consumer
// with TRUNCATED — never a clean end: before the stream's end with automatic receipts, from
// confirm() with manual ones. (An SDK producer's matching end is every other test here.)
test('a clean end the producer does not state is TRUNCATED (short body, no end, a failure notice)', async () => {
  const hello = 'hello';
  const cases = [
    ['a short body: the producer states 11 bytes', `httpipe-end=1; bytes=11; digest=${'A'.repeat(22)}`, /the sender sent 11 bytes and 5 arrived/],
    ['the right count, another digest', `httpipe-end=1; bytes=5; digest=${'A'.repeat(22)}`, /not the ones the sender sent/],
    ['no end after promising one', undefined, /did not state its end/],
    ['a failure notice', 'httpipe-resume=1; failed=ABORTED', /failed with ABORTED before its end/],
  ];
  for (const [what, end, says] of cases) {
    for (const receipt of [true, 'manual']) {
      const path = uniquePath('end');
      let got = '';
      const recvP = sdk.receive({ relay: relay.http, path, receipt }).then(async (r) => {
        for await (const c of r.stream) got += Buffer.from(c).toString();
        if (receipt === 'manual') await r.confirm();
        return 'a clean end';
      }).catch((e) => e);
      const receiptSeen = await handProducer(path, hello, end);
      assert.match(receiptSeen, /^httpipe-receipt=1; status=ok; bytes=5; /, what);
      const e = await within(recvP, 10_000, what);
      assert.equal(e?.code, 'TRUNCATED', `${what} (receipt ${receipt}): ${e?.message ?? e}`);
      assert.match(e.message, says, what);
      assert.equal(got, hello, 'the bytes that came were released; their end was not');
    }
  }
});
