// Short codes (PROTOCOL.md §14) through the real relay: sendWithCode / receiveWithCode in Node
// and Deno; a wrong code fails both sides WRONG_CODE before any data; two live senders get
// different codes; a code works once (used again: WRONG_CODE after the 10-s wait for a sender).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startRelay, ROOT, runCli } from './lib/relay.mjs';
import { PKG, hashStream, randomBytes, rejection, within } from './lib/sdk.mjs';

const sdk = await import(PKG);
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
const CODE = /^([1-9]\d{0,3})-([a-z]+)-([a-z]+)$/;
let relay;
let dir;
before(async () => {
  relay = await startRelay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-code-'));
});
after(async () => {
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function wrongCode(e) {
  assert.equal(e.name, 'HttpipeError', String(e));
  assert.equal(e.code, 'WRONG_CODE', e.message);
  return true;
}

test('Node → Node by code: 3 MiB, checksum equal, filename/size/type from the sealed offer', { timeout: 30_000 }, async () => {
  const { bytes, sha256: want } = randomBytes(3 << 20);
  const file = new File([bytes], 'report.bin', { type: 'application/x-report' });
  const progress = [];
  const { code, done } = await sdk.sendWithCode(file, { relay: relay.http });
  assert.match(code, CODE);
  // typed as a person would: other case, spaces
  const typed = code.toUpperCase().replaceAll('-', ' - ');
  const r = await sdk.receiveWithCode(typed, { relay: relay.http, onProgress: (p) => progress.push(p) });
  assert.equal(r.filename, 'report.bin');
  assert.equal(r.size, bytes.byteLength);
  assert.equal(r.contentType, 'application/x-report');
  const got = await hashStream(r.stream);
  assert.equal(got.bytes, bytes.byteLength);
  assert.equal(got.sha256, want);
  const report = await done;
  assert.equal(report.bytes, bytes.byteLength);
  assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
  // encrypted to the derived key: the receipt is signed (§12.2)
  assert.equal(report.receipt.authenticated, true);
  assert.equal(progress.at(-1).total, bytes.byteLength);

  // the code works once: used again, no sender waits on its channel (after the relay's 10 s)
  const t0 = performance.now();
  const e = await within(rejection(sdk.receiveWithCode(code, { relay: relay.http })), 16_000, 'reused code');
  wrongCode(e);
  assert.match(e.message, /no sender is waiting/);
  assert.ok(performance.now() - t0 < 15_000, `took ${performance.now() - t0} ms`);
});

test('a wrong code (right channel, other words): both sides WRONG_CODE, no data; then the real code finds no sender', { timeout: 30_000 }, async () => {
  const { code, done } = await sdk.sendWithCode('secret data', { relay: relay.http });
  const [, n, odd, even] = code.match(CODE);
  // another odd word: "adroitness" unless that is the code's
  const other = `${n}-${odd === 'adroitness' ? 'adviser' : 'adroitness'}-${even}`;
  wrongCode(await rejection(sdk.receiveWithCode(other, { relay: relay.http })));
  const e = await rejection(done);
  wrongCode(e);
  assert.match(e.message, /another code, or someone else tried this one/);
  // the real receiver now finds no sender (§14.4: a failed guess makes the handoff fail visibly)
  const real = await within(rejection(sdk.receiveWithCode(code, { relay: relay.http })), 16_000, 'the real receiver');
  wrongCode(real);
  assert.match(real.message, /no sender is waiting/);
});

test('malformed codes: WRONG_CODE naming the part, before any request; derived options refused', async () => {
  const opts = { relay: 'http://127.0.0.1:9' }; // nothing listens there: a request would be NETWORK
  for (const [code, part] of [['7-guitarist', /not a code/], ['07-guitarist-revenge', /number "07"/],
    ['7-guitarst-revenge', /first word "guitarst"/], ['7-revenge-guitarist', /swapped/]]) {
    const e = await rejection(sdk.receiveWithCode(code, opts));
    wrongCode(e);
    assert.match(e.message, part);
  }
  for (const bad of [{ path: '/x' }, { passphrase: 'p' }, { identities: [sdk.generateIdentity()] }]) {
    const e = await rejection(sdk.receiveWithCode('7-guitarist-revenge', { ...opts, ...bad }));
    assert.equal(e.code, 'UNSUPPORTED', e.message);
  }
  const e = await rejection(sdk.sendWithCode('x', { ...opts, recipients: ['age1x'] }));
  assert.equal(e.code, 'UNSUPPORTED', e.message);
});

test('two live senders get different codes (different channels); abort ends them', { timeout: 20_000 }, async () => {
  const ac = new AbortController();
  const [a, b] = await Promise.all([
    sdk.sendWithCode('one', { relay: relay.http, signal: ac.signal }),
    sdk.sendWithCode('two', { relay: relay.http, signal: ac.signal }),
  ]);
  assert.match(a.code, CODE);
  assert.match(b.code, CODE);
  assert.notEqual(a.code.split('-')[0], b.code.split('-')[0]);
  ac.abort();
  for (const s of [a, b]) assert.equal((await rejection(s.done)).code, 'ABORTED');
});

/**
 * An idle `method` request on `path` from source address `from` (Linux routes all of
 * 127.0.0.0/8 to the loopback): resolves with its response head; `req.destroy()` hangs up.
 */
function idle(method, path, from) {
  return new Promise((resolve, reject) => {
    const body = method === 'POST' ? Buffer.alloc(33) : undefined;
    const req = http.request(`${relay.http}${path}`, {
      method, localAddress: from, agent: false, headers: body ? { 'content-length': body.length } : {},
    });
    req.on('response', (res) => resolve({ req, res, refusal: res.headers['x-httpipe-error'] }));
    req.on('error', reject);
    req.end(body);
  });
}

/** How many of `answers` had each status and refusal code. */
function tally(answers) {
  const t = {};
  for (const a of answers) {
    const k = `${a.res.statusCode} ${a.refusal || ''}`.trim();
    t[k] = (t[k] || 0) + 1;
  }
  return t;
}

test('busy channels: with 1–99 held by 7 addresses (16 each, §14.5), the sender moves on to 1–999 (§14.2 step 1)', { timeout: 20_000 }, async () => {
  const held = await Promise.all(Array.from({ length: 99 }, (_, i) =>
    idle('POST', `/code/v1/${i + 1}/a`, `127.0.2.${Math.floor(i / 16) + 1}`)));
  try {
    assert.deepEqual(tally(held), { 200: 99 });
    const ac = new AbortController();
    const { code, done } = await sdk.sendWithCode('busy', { relay: relay.http, signal: ac.signal });
    assert.ok(Number(code.split('-')[0]) > 99, code);
    ac.abort();
    assert.equal((await rejection(done)).code, 'ABORTED');
  } finally {
    for (const h of held) h.req.destroy();
  }
});

// Issue #26: ~999 idle connections from one address made every `send` fail "20 channels in a
// row were busy", and idle GETs on every first pipe took each sender's SPAKE2 message. Now one
// address holds 16 channels, its GETs never wait, and a handoff from elsewhere goes through.
test('a crowd from one address: 100 idle POSTs hold 16 channels, 100 GETs take nothing, codes still work', { timeout: 30_000 }, async () => {
  const crowd = '127.0.3.1';
  // one after another (at once, 16 at a time would pass: the open-request limit refuses the rest)
  const gets = [];
  for (let n = 1; n <= 100; n++) gets.push(await idle('GET', `/code/v1/${n}/a`, crowd));
  await new Promise((r) => setTimeout(r, 100)); // the last GET's place given back
  const posts = await Promise.all(Array.from({ length: 100 }, (_, i) => idle('POST', `/code/v1/${i + 1}/a`, crowd)));
  try {
    console.log('one address, 100 idle GETs on first pipes:', tally(gets), '100 idle POSTs:', tally(posts));
    assert.ok(gets.every((g) => g.res.statusCode !== 200), 'a GET on pipe a waited');
    // 60 lookups a minute; a slow run may see one more refilled
    const t = tally(gets);
    assert.ok(t['404 no-sender'] >= 60 && t['404 no-sender'] <= 62, JSON.stringify(t));
    assert.equal(t['404 no-sender'] + t['429 too-many-code-lookups'], 100, JSON.stringify(t));
    assert.deepEqual(tally(posts), { 200: 16, '429 too-many-code-requests': 84 });
    // the refusal says what happened
    const refused = posts.find((p) => p.res.statusCode === 429);
    assert.equal(refused.res.headers['retry-after'], '1');
    let text = '';
    for await (const chunk of refused.res) text += chunk;
    assert.match(text, /Too many short-code requests from your address at once \(at most 16\)/);
    // a handoff from another address
    const { code, done } = await sdk.sendWithCode('through the crowd', { relay: relay.http });
    const r = await sdk.receiveWithCode(code, { relay: relay.http });
    assert.equal(new TextDecoder().decode(await new Response(r.stream).arrayBuffer()), 'through the crowd');
    assert.equal((await done).receipt.authenticated, true);
  } finally {
    for (const h of [...gets, ...posts]) h.req.destroy();
  }
});

test('Deno → Node by code, 2 MiB', { timeout: 60_000 }, async () => {
  const { bytes, sha256: want } = randomBytes(2 << 20);
  const file = path.join(dir, 'deno-code.bin');
  fs.writeFileSync(file, bytes);
  const script = path.join(dir, 'send-code.mjs');
  fs.writeFileSync(script, `
    import { sendWithCode } from ${JSON.stringify(pathToFileURL(PKG).href)};
    const data = await Deno.readFile(${JSON.stringify(file)});
    const { code, done } = await sendWithCode(new File([data], 'deno-code.bin'), { relay: ${JSON.stringify(relay.http)} });
    console.log(code);
    console.log(JSON.stringify(await done));
  `);
  const proc = spawn(DENO, ['run', '--no-prompt', '--allow-net', '--allow-read', script],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  try {
    const code = await within(new Promise((resolve, reject) => {
      proc.stdout.on('data', (d) => { out += d; const m = out.match(/^(\S+)\n/); if (m) resolve(m[1]); });
      proc.on('exit', (c) => reject(new Error(`deno exited ${c} before a code: ${err}`)));
    }), 30_000, 'the Deno sender\'s code');
    assert.match(code, CODE);
    const r = await sdk.receiveWithCode(code, { relay: relay.http });
    assert.equal(r.filename, 'deno-code.bin');
    assert.equal(r.size, bytes.byteLength);
    const got = await hashStream(r.stream);
    assert.equal(got.sha256, want);
    assert.equal(await exited, 0, err);
    const report = JSON.parse(out.trim().split('\n').at(-1));
    assert.equal(report.bytes, bytes.byteLength);
  } finally { proc.kill('SIGKILL'); }
});

test('CLI ↔ SDK by code: `httpipe send FILE` → receiveWithCode, sendWithCode → `httpipe receive CODE`', { timeout: 60_000 }, async () => {
  const { bytes, sha256: want } = randomBytes((2 << 20) + 3);
  const sendDir = fs.mkdtempSync(path.join(dir, 'cli-send-'));
  fs.writeFileSync(path.join(sendDir, 'inventory.csv'), bytes);
  // the CLI sends; the SDK receives by the printed code
  let shown;
  const printed = new Promise((resolve) => { shown = resolve; });
  const sender = runCli(['send', '--relay', relay.http, 'inventory.csv'], {
    cwd: sendDir,
    onStderr: (t) => { const m = /^Code: (\S+)$/m.exec(t); if (m) shown(m[1]); },
  });
  const code = await within(printed, 20_000, 'the CLI\'s code');
  assert.match(code, CODE);
  const r = await sdk.receiveWithCode(code, { relay: relay.http });
  assert.equal(r.filename, 'inventory.csv');
  assert.equal(r.size, bytes.byteLength);
  assert.equal((await hashStream(r.stream)).sha256, want);
  const s = await sender;
  assert.equal(s.code, 0, s.stderr);
  assert.match(s.stderr, /delivered/);

  // the SDK sends; the CLI receives into a directory, under the sent name
  const recvDir = fs.mkdtempSync(path.join(dir, 'cli-recv-'));
  const file = new File([bytes], 'orders.bin');
  const { code: code2, done } = await sdk.sendWithCode(file, { relay: relay.http });
  const got = await runCli(['receive', '--relay', relay.http, '-o', recvDir, code2]);
  assert.equal(got.code, 0, got.stderr);
  const saved = fs.readFileSync(path.join(recvDir, 'orders.bin'));
  assert.equal(saved.length, bytes.byteLength);
  assert.equal((await hashStream(new Blob([saved]).stream())).sha256, want);
  assert.equal((await done).receipt.authenticated, true);
});
