// Deno (the npm `deno` runtime) as producer and consumer against Node through the real relay:
// examples/deno/send.ts streams a 10 MiB file to a Node consumer, and examples/deno/receive.ts
// takes a stream from a Node producer; plain and age-rt passphrase; checksums equal. A post-quantum
// key made and used in Deno opens in Node.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath, hashStream, randomBytes, sha256 } from './lib/sdk.mjs';

const sdk = await import(PKG);
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
let relay;
let dir;
before(async () => {
  relay = await startRelay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-deno-'));
});
after(async () => {
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function deno(args) {
  const proc = spawn(DENO, ['run', '--no-prompt', '--allow-net', '--allow-read', '--allow-write', ...args],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const done = new Promise((resolve) => proc.on('exit', (code) => resolve({ code, out, err })));
  return { proc, done };
}

for (const passphrase of [undefined, 'deno passphrase']) {
  const kind = passphrase ? 'age-rt passphrase' : 'plain';

  test(`Deno producer → Node consumer, 10 MiB ${kind}`, { timeout: 120_000 }, async () => {
    const { bytes, sha256: want } = randomBytes(10 << 20);
    const file = path.join(dir, `deno-${kind.replace(/\W/g, '')}.bin`);
    fs.writeFileSync(file, bytes);
    const p = uniquePath('deno');
    const child = deno(['examples/deno/send.ts', relay.http, p, file, ...(passphrase ? [passphrase] : [])]);
    try {
      const r = await sdk.receive({ relay: relay.http, path: p, passphrase });
      const got = await hashStream(r.stream);
      const res = await child.done;
      assert.equal(res.code, 0, res.err);
      assert.equal(got.bytes, bytes.byteLength);
      assert.equal(got.sha256, want);
      // Encrypting sends no filename in clear (docs/js-api.md).
      assert.equal(r.filename, passphrase ? undefined : path.basename(file));
      const report = JSON.parse(res.out.trim().split('\n').at(-1));
      assert.equal(report.bytes, bytes.byteLength);
      assert.equal(report.transport, 'stream');
      assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
      // the Node consumer's receipt (PROTOCOL.md §12); signed when encrypted
      assert.equal(report.receipt.bytes, bytes.byteLength);
      assert.equal(report.receipt.authenticated, Boolean(passphrase));
    } finally { child.proc.kill('SIGKILL'); }
  });

  test(`Node producer → Deno consumer, 10 MiB ${kind}`, { timeout: 120_000 }, async () => {
    const { bytes, sha256: want } = randomBytes(10 << 20);
    const file = path.join(dir, `deno-out-${kind.replace(/\W/g, '')}.bin`);
    const p = uniquePath('deno-recv');
    const child = deno(['examples/deno/receive.ts', relay.http, p, file, ...(passphrase ? [passphrase] : [])]);
    try {
      const report = await sdk.send(bytes, { relay: relay.http, path: p, passphrase });
      const res = await child.done;
      assert.equal(res.code, 0, res.err);
      assert.equal(report.bytes, bytes.byteLength);
      assert.equal(report.receipt.bytes, bytes.byteLength, 'the Deno consumer\'s receipt');
      assert.equal(report.receipt.authenticated, Boolean(passphrase));
      assert.equal(sha256(fs.readFileSync(file)), want);
    } finally { child.proc.kill('SIGKILL'); }
  });
}

test('Deno: a bad token is an UNAUTHORIZED HttpipeError', { timeout: 60_000 }, async () => {
  const auth = await startRelay({ env: { HTTPIPE_AUTH_KEY: 'deno-test-key-0123456789' } });
  try {
    const child = deno(['examples/deno/send.ts', auth.http, '/deno-auth', '/dev/null']);
    const res = await child.done;
    assert.equal(res.code, 1);
    assert.match(res.err, /failed: UNAUTHORIZED: /);
  } finally { await auth.stop(); }
});

test('Deno picks node:crypto\'s ChaCha20-Poly1305 for the payload, and round-trips with the wasm cipher (issue #13)', { timeout: 60_000 }, async () => {
  const script = path.join(dir, 'backend.ts');
  fs.writeFileSync(script, `
import * as sdk from ${JSON.stringify(PKG)};
await sdk.init();
const id = sdk.generateIdentity();
const bytes = new Uint8Array(200_003).map((_, i) => i & 255);
const run = async (s: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(s).arrayBuffer());
const detected = sdk.cryptoBackend();
const ct = await run(new Blob([bytes]).stream().pipeThrough(sdk.encryptStream({ recipients: [sdk.identityToRecipient(id)] })));
sdk.cryptoBackend('wasm');
const pt = await run(new Blob([ct]).stream().pipeThrough(sdk.decryptStream({ identities: [id] })));
console.log(JSON.stringify({ detected, same: pt.length === bytes.length && pt.every((b, i) => b === bytes[i]) }));
`);
  const res = await deno([script]).done;
  assert.equal(res.code, 0, res.err);
  assert.deepEqual(JSON.parse(res.out.trim().split('\n').at(-1)), { detected: 'node:crypto', same: true });
});

test('Deno: a post-quantum key made in Deno; what Deno encrypts to it (age-rt) Node decrypts (PROTOCOL.md §7.1)', { timeout: 60_000 }, async () => {
  const script = path.join(dir, 'pq.mjs');
  fs.writeFileSync(script, `
    import * as sdk from ${JSON.stringify(new URL(`file://${PKG}`).href)};
    const id = sdk.generateHybridIdentity();
    const sealed = new Blob(['hello post-quantum']).stream()
      .pipeThrough(sdk.encryptStream({ recipients: [sdk.identityToRecipient(id)] }));
    const ct = new Uint8Array(await new Response(sealed).arrayBuffer());
    console.log(JSON.stringify({ id, rcpt: sdk.identityToRecipient(id), ct: btoa(String.fromCharCode(...ct)) }));
  `);
  const res = await deno([script]).done;
  assert.equal(res.code, 0, res.err);
  const { id, rcpt, ct } = JSON.parse(res.out);
  assert.match(id, /^AGE-SECRET-KEY-PQ-1/);
  assert.equal(sdk.identityToRecipient(id), rcpt);
  const opened = new Blob([Buffer.from(ct, 'base64')]).stream().pipeThrough(sdk.decryptStream({ identities: [id] }));
  assert.equal(await new Response(opened).text(), 'hello post-quantum');
});

// A fast stream whose consumer aborts mid-stream: Deno stops a response body on its request's
// AbortSignal only while the `Response` object lives, and the SDK let it go once the stream
// started, so Deno's `receive()` ran on to a clean end after the abort (and the producer got
// a full receipt). Now the stream errors ABORTED at once and the producer is told.
test('Deno: a consumer that aborts a fast stream midway gets ABORTED, never a clean end', { timeout: 60_000 }, async () => {
  const p = uniquePath('deno-abort');
  const total = 64 << 20;
  let produced = 0;
  const source = new ReadableStream({
    pull(c) {
      if (produced >= total) return c.close();
      c.enqueue(new Uint8Array(65536));
      produced += 65536;
    },
  });
  const sent = sdk.send(source, { relay: relay.http, path: p }).then(() => 'resolved', (e) => e.code);
  const script = path.join(dir, 'abort.mjs');
  fs.writeFileSync(script, `
    import * as sdk from ${JSON.stringify(new URL(`file://${PKG}`).href)};
    await sdk.init();
    const ac = new AbortController();
    const { stream } = await sdk.receive({ relay: ${JSON.stringify(relay.http)}, path: ${JSON.stringify(p)}, signal: ac.signal });
    gc(); // what collected the response before, whenever it came
    let n = 0, after = 0, outcome = 'clean end';
    try {
      for await (const c of stream) {
        n += c.length;
        if (ac.signal.aborted) after += c.length;
        if (n >= 4 << 20 && !ac.signal.aborted) ac.abort();
      }
    } catch (e) { outcome = e.code; }
    console.log(JSON.stringify({ outcome, n, after }));
  `);
  const res = await deno(['--v8-flags=--expose-gc', script]).done;
  assert.equal(res.code, 0, res.err);
  const got = JSON.parse(res.out.trim().split('\n').at(-1));
  assert.equal(got.outcome, 'ABORTED', `the consumer got ${got.outcome} after ${got.n} bytes`);
  assert.ok(got.after <= 1 << 20, `${got.after} bytes released after the abort`);
  assert.equal(await sent, 'PEER_DISCONNECTED');
});
