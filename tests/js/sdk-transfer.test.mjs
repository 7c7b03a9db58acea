// SDK transfers in Node through the real relay: sizes × plain/encrypted × arrival order ×
// rendezvous × transport, checksums equal. (PROTOCOL.md §3–§5, §7–§8.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startRelay } from './lib/relay.mjs';
import { PKG, uniquePath, randomSource, hashStream, sleep } from './lib/sdk.mjs';

const sdk = await import(PKG);
let relay;
before(async () => { relay = await startRelay(); });
after(async () => { await relay?.stop(); });

const KiB = 1024;
const MiB = 1024 * KiB;
const identity = sdk.generateIdentity();
const recipient = sdk.identityToRecipient(identity);

const CRYPTO = {
  plain: { send: {}, recv: {} },
  'age-rt passphrase': { send: { passphrase: 'correct horse battery staple' }, recv: { passphrase: 'correct horse battery staple' } },
  'age x25519': { send: { recipients: [recipient], format: 'age' }, recv: { identities: [identity] } },
};

async function transfer({ size, crypto, consumerFirst, rendezvous, upload }) {
  const path = uniquePath('xfer');
  const common = { relay: relay.http, path, rendezvous };
  const { stream, digest } = randomSource(size, 100 * KiB + 7);
  const progress = [];
  const startSend = () => sdk.send(stream, { ...common, ...CRYPTO[crypto].send, upload, partSize: 256 * KiB, size,
    onProgress: (p) => progress.push(p) });
  const startRecv = () => sdk.receive({ ...common, ...CRYPTO[crypto].recv }).then((r) => hashStream(r.stream));
  let sendP, recvP;
  if (consumerFirst) { recvP = startRecv(); await sleep(50); sendP = startSend(); }
  else { sendP = startSend(); await sleep(50); recvP = startRecv(); }
  const [report, got] = await Promise.all([sendP, recvP]);
  assert.equal(got.bytes, size);
  assert.equal(got.sha256, await digest);
  assert.equal(report.bytes, size);
  assert.equal(report.transport, upload === 'segmented' ? 'segmented' : 'stream');
  assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
  assert.ok(report.durationMs >= 0);
  const last = progress.at(-1);
  assert.equal(last.bytes, size);
  assert.equal(last.total, size);
}

const SIZES = [0, 1, 64 * KiB, 10 * MiB];
let i = 0;
for (const crypto of Object.keys(CRYPTO)) {
  for (const size of SIZES) {
    for (const upload of ['stream', 'segmented']) {
      // Vary arrival order and rendezvous across the matrix (every combination appears for
      // plain streams; encrypted ones rotate through them to keep scrypt time in check).
      const combos = crypto === 'plain'
        ? [[true, true], [false, true], [true, false], [false, false]]
        : [[((i + (i >> 1)) % 2) === 0, ((i >> 1) % 2) === 0]];
      i += 1;
      for (const [consumerFirst, rendezvous] of combos) {
        const name = `${crypto} ${size} B ${upload}, ${consumerFirst ? 'consumer' : 'producer'} first, rendezvous ${rendezvous ? 'on' : 'off'}`;
        // The 0 B plain streaming cases are the regression test for the relay reporting an
        // empty upload as [ERROR:RECEIVER_PREMATURE_DISCONNECT] (fixed in 86e72fd).
        test(name, { timeout: 120_000 }, () => transfer({ size, crypto, consumerFirst, rendezvous, upload }));
      }
    }
  }
}

test('every source type arrives byte-exact (Blob, string, Uint8Array, async iterable, iterable)', async () => {
  const enc = new TextEncoder();
  async function* gen() { yield enc.encode('a'); yield 'b'; yield new Uint8Array([99]); }
  const cases = [
    [new Blob(['blob ', 'data'], { type: 'text/csv' }), 'blob data', 'text/csv'],
    ['héllo', 'héllo', undefined],
    [enc.encode('bytes'), 'bytes', undefined],
    [gen(), 'abc', undefined],
    [[enc.encode('x'), 'y'], 'xy', undefined],
  ];
  for (const [source, text, type] of cases) {
    const path = uniquePath('src');
    const recvP = sdk.receive({ relay: relay.http, path });
    const sendP = sdk.send(source, { relay: relay.http, path });
    const r = await recvP;
    assert.equal(await new Response(r.stream).text(), text);
    const report = await sendP;
    assert.equal(report.bytes, enc.encode(text).byteLength);
    assert.equal(report.receipt.bytes, report.bytes);
    if (type) assert.equal(r.contentType, type);
  }
});

test('contentType and filename reach the consumer', async () => {
  const path = uniquePath('meta');
  const recvP = sdk.receive({ relay: relay.http, path });
  const sendP = sdk.send('x,y\n', { relay: relay.http, path, contentType: 'text/csv; charset=utf-8', filename: 'Grüße "1".csv' });
  const r = await recvP;
  assert.equal(r.contentType, 'text/csv; charset=utf-8');
  assert.equal(r.filename, 'Grüße "1".csv');
  assert.equal(await new Response(r.stream).text(), 'x,y\n');
  await sendP;
});

test('openWriter/openReader: log lines arrive one by one before the writer closes', async () => {
  const path = uniquePath('log');
  const w = sdk.openWriter({ relay: relay.http, path, passphrase: 'pw' });
  const reader = (await sdk.openReader({ relay: relay.http, path, passphrase: 'pw' })).getReader();
  const writer = w.writable.getWriter();
  const dec = new TextDecoder();
  for (let n = 0; n < 5; n++) {
    await writer.write(new TextEncoder().encode(`line ${n}\n`));
    const { value } = await reader.read();
    assert.equal(dec.decode(value), `line ${n}\n`);
  }
  // close() settles with the verdict, which needs the consumer to read the end (its receipt)
  const closed = writer.close();
  assert.equal((await reader.read()).done, true);
  await closed;
  const report = await w.done;
  assert.equal(report.bytes, 35);
});

test('autoFlush batches small writes and flush() hands them on', async () => {
  const path = uniquePath('batch');
  const w = sdk.openWriter({ relay: relay.http, path, autoFlush: 60_000 });
  // A plain stream starts with its first bytes (Node's fetch sends the request then), so the
  // reader is awaited after the first flush.
  const readerP = sdk.openReader({ relay: relay.http, path });
  const writer = w.writable.getWriter();
  await writer.write(new TextEncoder().encode('a'));
  await writer.write(new TextEncoder().encode('b'));
  await w.flush();
  const reader = (await readerP).getReader();
  const { value } = await reader.read();
  assert.equal(new TextDecoder().decode(value), 'ab', 'both writes in one batch');
  const closed = writer.close();
  assert.equal((await reader.read()).done, true);
  await closed;
  await w.done;
});

// A closed writer is a delivered stream: close() and `closed` resolved while `done` rejected
// (a consumer that cancelled after the last write), and a string chunk was refused without
// autoFlush but sent with it (both found by an adversarial run).
test('openWriter: close() settles with the verdict; strings go as UTF-8 with and without autoFlush', async () => {
  for (const autoFlush of [undefined, 5]) {
    const path = uniquePath('writer-verdict');
    const w = sdk.openWriter({ relay: relay.http, path, autoFlush });
    const writer = w.writable.getWriter();
    const received = sdk.receive({ relay: relay.http, path });
    await writer.write('line 1\n');
    const reader = (await received).stream.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'line 1\n');
    await reader.cancel(); // the consumer leaves after the first line
    const closing = writer.close();
    await assert.rejects(w.done, (e) => e.code === 'PEER_DISCONNECTED');
    const [closed, closedP] = await Promise.all([closing.catch((e) => e), writer.closed.catch((e) => e)]);
    assert.equal(closed?.code, 'PEER_DISCONNECTED', `close() with autoFlush ${autoFlush}`);
    assert.equal(closedP?.code, 'PEER_DISCONNECTED', `closed with autoFlush ${autoFlush}`);

    const ok = uniquePath('writer-ok');
    const w2 = sdk.openWriter({ relay: relay.http, path: ok, autoFlush });
    const writer2 = w2.writable.getWriter();
    const text = sdk.receive({ relay: relay.http, path: ok }).then((r) => new Response(r.stream).text());
    await writer2.write('grüße\n');
    await writer2.write(new TextEncoder().encode('bytes\n'));
    let settled = false;
    w2.done.then(() => { settled = true; });
    await writer2.close();
    assert.ok(settled, 'close() resolved after done');
    assert.equal(await text, 'grüße\nbytes\n');
  }
});

test('encryptStream/decryptStream round trip and wrong key', async () => {
  const { stream, digest } = randomSource(300 * KiB);
  const got = await hashStream(stream.pipeThrough(sdk.encryptStream({ recipients: [recipient] }))
    .pipeThrough(sdk.decryptStream({ identities: [identity] })));
  assert.equal(got.sha256, await digest);
  const other = sdk.generateIdentity();
  const wrong = randomSource(1000).stream.pipeThrough(sdk.encryptStream({ recipients: [recipient] }))
    .pipeThrough(sdk.decryptStream({ identities: [other] }));
  await assert.rejects(hashStream(wrong), (e) => e instanceof sdk.HttpipeError && e.code === 'WRONG_KEY');
  // random bytes are no ciphertext: said at once, not "line longer than 64 columns" of armor
  const random = randomSource(1000).stream.pipeThrough(sdk.decryptStream({ identities: [identity] }));
  await assert.rejects(hashStream(random), (e) => e.code === 'DECRYPT_FAILED' && /not an age file/.test(e.message));
  assert.match(recipient, /^age1[0-9a-z]{58}$/);
  assert.match(identity, /^AGE-SECRET-KEY-1[0-9A-Z]{58}$/);
});

test('identities and recipients take key-file text as the CLI does (comments, several keys, blank lines)', async () => {
  const other = sdk.generateIdentity();
  const otherRecipient = sdk.identityToRecipient(other);
  const idFile = `# created: 2026-12-04\n# public key: ${recipient}\n${identity}\n\n  ${other}  \n`;
  const recipientsFile = `# the team\n${otherRecipient}\n\n${recipient}\n`;
  for (const recipients of [[recipientsFile], [recipient, otherRecipient]]) {
    const { stream, digest } = randomSource(100 * KiB + 3);
    const got = await hashStream(stream.pipeThrough(sdk.encryptStream({ recipients }))
      .pipeThrough(sdk.decryptStream({ identities: [idFile] })));
    assert.equal(got.sha256, await digest);
  }
  // through the relay too
  const path = uniquePath('keyfile');
  const recvP = sdk.receive({ relay: relay.http, path, identities: [`# mine\n${other}\n`] });
  const sendP = sdk.send('hello, key files', { relay: relay.http, path, recipients: [recipientsFile] });
  assert.equal(await new Response((await recvP).stream).text(), 'hello, key files');
  await sendP;
  // an entry that holds no key is a usage error that names it
  const none = randomSource(10).stream.pipeThrough(sdk.decryptStream({ identities: ['# nothing here\n'] }));
  await assert.rejects(hashStream(none),
    (e) => e instanceof sdk.HttpipeError && e.code === 'UNSUPPORTED' && /entry 1 holds no key/.test(e.message));
});

for (const upload of ['stream', 'segmented']) {
  test(`empty send('') and send(new Uint8Array(0)) resolve with a success report (${upload})`, async () => {
    for (const source of ['', new Uint8Array(0), new ArrayBuffer(0), new Blob([])]) {
      const path = uniquePath('empty');
      const recvP = sdk.receive({ relay: relay.http, path });
      const sendP = sdk.send(source, { relay: relay.http, path, upload });
      const r = await recvP;
      assert.equal((await new Response(r.stream).arrayBuffer()).byteLength, 0);
      const report = await sendP;
      assert.equal(r.size, 0);
      assert.equal(report.bytes, 0);
      assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
      assert.equal(report.transport, upload);
    }
  });

  test(`receive() fills in size for Blob/bytes sources and an explicit size, not for streams (${upload})`, async () => {
    const cases = [
      [new Blob(['12345']), {}, 5],
      [new Uint8Array(70_000), {}, 70_000],
      ['héllo', {}, 6],
      [randomSource(3000).stream, {}, undefined],
      [randomSource(3000).stream, { size: 3000 }, 3000],
    ];
    for (const [source, extra, size] of cases) {
      const path = uniquePath('size');
      const recvP = sdk.receive({ relay: relay.http, path });
      const sendP = sdk.send(source, { relay: relay.http, path, upload, ...extra });
      const r = await recvP;
      assert.equal(r.size, size);
      await new Response(r.stream).arrayBuffer();
      await sendP;
    }
  });

  test(`encrypting sends no metadata in clear: no filename, no size, application/octet-stream (${upload})`, async () => {
    const path = uniquePath('meta-enc');
    // A consumer without the passphrase (that asked for the ciphertext) sees exactly what the
    // relay forwards.
    const rawP = sdk.receive({ relay: relay.http, path, ciphertext: true });
    const sendP = sdk.send(new Blob(['secret'], { type: 'text/csv' }),
      { relay: relay.http, path, upload, passphrase: 'pw', filename: 'salaries.csv', contentType: 'text/csv', receipt: 'ciphertext' });
    const raw = await rawP;
    assert.equal(raw.contentType, 'application/octet-stream');
    assert.equal(raw.filename, undefined);
    assert.equal(raw.size, undefined);
    const cipher = new Uint8Array(await new Response(raw.stream).arrayBuffer());
    assert.ok(!new TextDecoder().decode(cipher).includes('salaries'));
    // a consumer without keys confirms the ciphertext it stores, unauthenticated (§12.2): a
    // sender that accepts such receipts (receipt: 'ciphertext') counts its ciphertext bytes
    const rawReport = await sendP;
    assert.equal(rawReport.receipt.bytes, cipher.byteLength);
    assert.equal(rawReport.receipt.authenticated, false);
    // ...and a decrypting consumer gets none of it either.
    const path2 = uniquePath('meta-enc');
    const decP = sdk.receive({ relay: relay.http, path: path2, passphrase: 'pw' });
    const sendP2 = sdk.send('secret', { relay: relay.http, path: path2, upload, passphrase: 'pw', filename: 'a.txt' });
    const dec = await decP;
    assert.equal(dec.filename, undefined);
    assert.equal(dec.contentType, undefined);
    assert.equal(dec.size, undefined);
    assert.equal(await new Response(dec.stream).text(), 'secret');
    const decReport = await sendP2;
    assert.equal(decReport.receipt.bytes, 6);
    assert.equal(decReport.receipt.authenticated, true);
  });
}
