// The Cloudflare Worker example (examples/worker) under `wrangler dev` (local workerd from npm):
// it produces an age-rt encrypted NDJSON feed into the real relay; a Node consumer decrypts it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';

const sdk = await import(PKG);
const WRANGLER = path.join(ROOT, 'node_modules/.bin/wrangler');
let relay;
let worker;
let workerUrl;

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

before(async () => {
  relay = await startRelay();
  const port = await freePort();
  worker = spawn(WRANGLER, ['dev', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(await freePort())], {
    cwd: path.join(ROOT, 'examples/worker'),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', CI: 'true', NO_COLOR: '1' },
    detached: true,
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${out}`)), 90_000);
    const onData = (d) => {
      out += d;
      if (/Ready on http/.test(out)) { clearTimeout(timer); resolve(); }
    };
    worker.stdout.on('data', onData);
    worker.stderr.on('data', onData);
    worker.on('exit', (code) => { clearTimeout(timer); reject(new Error(`wrangler exited ${code}:\n${out}`)); });
  });
  workerUrl = `http://127.0.0.1:${port}`;
});

after(async () => {
  if (worker && worker.exitCode === null) {
    // wrangler starts workerd as a child: end the whole process group we started.
    try { process.kill(-worker.pid, 'SIGTERM'); } catch { /* gone */ }
    await new Promise((r) => { worker.once('exit', r); setTimeout(r, 5000).unref(); });
  }
  await relay?.stop();
});

test('Worker produces an encrypted NDJSON feed; a Node consumer decrypts every line', { timeout: 120_000 }, async () => {
  const p = uniquePath('worker');
  const passphrase = 'worker passphrase';
  const lines = 5000;
  const q = new URLSearchParams({ relay: relay.http, path: p, lines: String(lines), passphrase });
  const produced = fetch(`${workerUrl}/produce?${q}`).then((r) => r.json());
  const r = await sdk.receive({ relay: relay.http, path: p, passphrase, timeout: 60 });
  const text = await new Response(r.stream).text();
  const report = await produced;
  const got = text.trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.equal(got.length, lines);
  got.forEach((rec, i) => assert.equal(rec.seq, i));
  assert.equal(report.bytes, Buffer.byteLength(text));
  assert.equal(report.transport, 'stream');
  assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
});

test('Worker: errors come back as HttpipeError codes', { timeout: 60_000 }, async () => {
  const res = await fetch(`${workerUrl}/produce?${new URLSearchParams({ relay: 'ftp://x', path: '/p' })}`);
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.error, 'UNSUPPORTED');
  assert.match(body.message, /http:\/\/ or https:\/\//);
});

for (const passphrase of [undefined, 'worker passphrase']) {
  test(`Worker: a feed that fails midway cuts the stream: the consumer gets TRUNCATED, the Worker the source's error (${passphrase ? 'age-rt' : 'plain'})`, { timeout: 60_000 }, async () => {
    // Regression: workerd ended a request whose body stream errored as if it were complete, so
    // the relay reported success and a plain consumer got the first lines as a clean end.
    // The feed fails after ~5 MB, when the consumer is surely connected (a producer that fails
    // before its consumer reaches the relay leaves that consumer waiting: README, known limits).
    const p = uniquePath('worker-fail');
    const q = new URLSearchParams({ relay: relay.http, path: p, lines: '200000', failAt: '50000', ...(passphrase ? { passphrase } : {}) });
    const produced = fetch(`${workerUrl}/produce?${q}`).then(async (r) => ({ status: r.status, body: await r.json() }));
    const r = await sdk.receive({ relay: relay.http, path: p, passphrase, timeout: 60 });
    await assert.rejects(new Response(r.stream).text(), (e) => e.code === 'TRUNCATED');
    const { status, body } = await produced;
    assert.equal(status, 502);
    assert.match(body.message, /the feed failed at line 50000/);
  });
}
