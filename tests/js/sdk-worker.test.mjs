// The Cloudflare Worker example (examples/worker) under `wrangler dev` (local workerd from npm):
// it produces an age-rt encrypted NDJSON feed into the real relay; a Node consumer decrypts it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { startWrangler } from './lib/wrangler.mjs';

const sdk = await import(PKG);
let relay;
let worker;
let workerUrl;

before(async () => {
  relay = await startRelay();
  worker = await startWrangler(path.join(ROOT, 'examples/worker'));
  workerUrl = worker.url;
});

after(async () => {
  await worker?.stop();
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
  // workerd with nodejs_compat: the payload was sealed by node:crypto (issue #13)
  assert.equal(report.cryptoBackend, 'node:crypto');
  // the Worker's send() resolved on the Node consumer's signed receipt (PROTOCOL.md §12)
  assert.equal(report.receipt.bytes, report.bytes);
  assert.equal(report.receipt.authenticated, true);
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
