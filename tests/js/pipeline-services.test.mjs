// Steps as services (issue #9): the runnable example examples/pipeline/ as a three-hop chain
// over the real relay — a Deno producer (producer.ts) → /raw → a Cloudflare Worker under
// `wrangler dev` (local workerd) that anonymises → /clean → a Node consumer (consumer.mjs).
// Checksums of the record set on both ends, the pseudonyms recomputed here, the worker's
// report counts; then shared fate across the service, both ways.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { runCollected } from './lib/child.mjs';
import { startWrangler } from './lib/wrangler.mjs';

const sdk = await import(PKG);
const EX = path.join(ROOT, 'examples/pipeline');
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
// The worker's environment (wrangler.toml [vars], overridden here so the test knows them).
const RAW = 'raw passphrase (test)';
const CLEAN = 'clean passphrase (test)';
const KEY = 'pseudonym key (test)';
let relay;
let worker;
let workerUrl;
const children = new Set();

/** A child process with its output collected; `done` resolves on exit, bounded by `ms`. */
const child = (name, cmd, args, ms) => runCollected(name, cmd, args, { ms, env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' }, children });

const producer = (p, n, ms = 90_000) => child('producer.ts', DENO, ['run', '--no-prompt', '--allow-net', '--allow-read', path.join(EX, 'producer.ts'), relay.http, p, RAW, String(n)], ms);
const consumer = (p, ms = 90_000) => child('consumer.mjs', process.execPath, [path.join(EX, 'consumer.mjs'), relay.http, p, CLEAN], ms);
/** GET /run on the worker: its JSON answer and status, bounded by `ms`. */
const runWorker = (inPath, outPath, ms = 90_000) => fetch(`${workerUrl}/run?${new URLSearchParams({ relay: relay.http, in: inPath, out: outPath })}`, { signal: AbortSignal.timeout(ms) })
  .then(async (r) => ({ status: r.status, body: await r.json() }));
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref())]);

before(async () => {
  relay = await startRelay();
  worker = await startWrangler(path.join(EX, 'worker'),
    ['--var', `RAW_PASSPHRASE:${RAW}`, '--var', `CLEAN_PASSPHRASE:${CLEAN}`, '--var', `PSEUDONYM_KEY:${KEY}`]);
  workerUrl = worker.url;
});

after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await worker?.stop();
  await relay?.stop();
});

const sortedSha256 = (xs) => createHash('sha256').update(xs.sort().join('\n')).digest('hex');

test('Deno producer → Worker (anonymise) → Node consumer: 20 000 records, the same set on both ends, no personal field left', { timeout: 120_000 }, async () => {
  const N = 20_000;
  const raw = uniquePath('raw');
  const clean = uniquePath('clean');
  // All three start at once, in no particular order: each waits for its peer (Connect API).
  const c = consumer(clean);
  const w = runWorker(raw, clean);
  const p = producer(raw, N);
  const [pr, cr, wr] = await Promise.all([p.done, c.done, w]);
  assert.equal(pr.code, 0, pr.err);
  assert.equal(cr.code, 0, cr.err);
  assert.equal(wr.status, 200, JSON.stringify(wr.body));
  const sent = JSON.parse(pr.out);
  const got = JSON.parse(cr.out);

  // The record set, order-independent: the same ids on both ends, and the ones generated.
  const ids = Array.from({ length: N }, (_, i) => `ADM-${String(i).padStart(7, '0')}`);
  assert.equal(sent.records, N);
  assert.equal(got.records, N);
  assert.equal(sent.idsSha256, sortedSha256(ids));
  assert.equal(got.idsSha256, sent.idsSha256);
  // Anonymised as the worker says: personal fields gone, the NHS number a keyed pseudonym
  // (HMAC-SHA256 with PSEUDONYM_KEY, 32 hex digits), recomputed here independently.
  assert.equal(got.personal, 0);
  assert.deepEqual(got.fields, ['area', 'birthYear', 'id', 'patient', 'stayDays', 'ward']);
  const pseudonyms = Array.from({ length: N }, (_, i) => createHmac('sha256', KEY).update(String(9_000_000_000 + i)).digest('hex').slice(0, 32));
  assert.equal(got.patientsSha256, sortedSha256(pseudonyms));
  assert.equal(got.distinctPatients, N);

  // The worker's report: every record through each step, the bytes of both hops.
  const r = wr.body;
  assert.equal(r.state, 'done');
  assert.deepEqual(r.steps.map((s) => s.name), ['ndjson.decode', 'map', 'ndjson.encode']);
  assert.equal(r.steps[0].recordsOut, N);
  assert.equal(r.steps[1].recordsIn, N);
  assert.equal(r.steps[1].recordsOut, N);
  assert.equal(r.steps[2].recordsIn, N);
  assert.equal(r.bytes.in, sent.bytes, 'the worker read what the producer sent');
  assert.equal(r.bytes.out, got.bytes, 'the consumer read what the worker sent');
  assert.equal(r.sink.delivered, r.sink.recordsIn);
  assert.equal(r.deadLettered, 0);
  assert.equal(r.sink.transfers.length, 1);
  assert.equal(r.sink.transfers[0].path, clean);
  assert.equal(r.sink.transfers[0].bytes, got.bytes);
  assert.equal(r.sink.transfers[0].transport, 'stream');
  assert.equal(r.sink.transfers[0].relayState, '[STATE:TRANSFER_SUCCESSFUL]');
});

/** A consumer pipeline in this process on `p`, resolving `first` with the first record. */
function watchClean(p) {
  let seen = 0;
  let onFirst;
  const first = new Promise((r) => { onFirst = r; });
  const run = sdk.pipeline(sdk.fromPipe({ relay: relay.http, path: p, passphrase: CLEAN, timeout: 60 }), sdk.ndjson.decode(),
    sdk.sink((rec) => { if (seen++ === 0) onFirst(rec); }));
  return { run, first, seen: () => seen };
}

test('shared fate, downstream: the producer killed mid-run → the worker answers TRUNCATED and the consumer fails TRUNCATED, never a short clean end', { timeout: 90_000 }, async () => {
  const raw = uniquePath('raw-kill');
  const clean = uniquePath('clean-kill');
  const c = watchClean(clean);
  const w = runWorker(raw, clean);
  const p = producer(raw, 5_000_000);
  const rec = await within(c.first, 60_000, 'the first clean record');
  assert.equal(typeof rec.patient, 'string');
  p.proc.kill('SIGKILL');
  const pr = await p.done;
  assert.equal(pr.signal, 'SIGKILL');
  await assert.rejects(within(c.run.done, 30_000, 'the consumer run'), (e) => e.code === 'TRUNCATED');
  const wr = await w;
  assert.equal(wr.status, 502);
  assert.equal(wr.body.error, 'TRUNCATED', wr.body.message);
  assert.ok(c.seen() < 5_000_000);
});

test('shared fate, upstream: the consumer aborts → the upload of the worker fails and the Deno producer fails PEER_DISCONNECTED', { timeout: 90_000 }, async () => {
  const raw = uniquePath('raw-abort');
  const clean = uniquePath('clean-abort');
  const c = watchClean(clean);
  const w = runWorker(raw, clean);
  const p = producer(raw, 5_000_000, 60_000);
  await within(c.first, 60_000, 'the first clean record');
  c.run.abort(new Error('enough'));
  await assert.rejects(within(c.run.done, 10_000, 'the consumer run'), (e) => e.code === 'ABORTED');
  const wr = await w;
  // The worker's upload failed. workerd delivers a fetch response only after the request body
  // is complete, so the relay's "consumer left" status line never reaches it and the cut
  // connection is all it sees: NETWORK there (PEER_DISCONNECTED in Node and Deno).
  assert.equal(wr.status, 502);
  assert.ok(['PEER_DISCONNECTED', 'NETWORK'].includes(wr.body.error), JSON.stringify(wr.body));
  // ...and its source was torn down with it: the producer at the start of the chain fails.
  const pr = await p.done;
  assert.equal(pr.code, 1);
  assert.match(pr.err, /failed: PEER_DISCONNECTED: /);
});

test('toPipe in Node: a step failing mid-run cuts the plain pipe: the consumer fails TRUNCATED, the run rejects with the step error (not the abort that cut it)', { timeout: 60_000 }, async () => {
  const p = uniquePath('cut');
  const c = sdk.pipeline(sdk.fromPipe({ relay: relay.http, path: p, timeout: 30 }), sdk.ndjson.decode(), sdk.collect());
  const boom = new Error('record 50000 is bad');
  const run = sdk.pipeline(function* records() { for (let i = 0; ; i++) yield { i, pad: 'x'.repeat(100) }; },
    sdk.map((r) => { if (r.i === 50_000) throw boom; return r; }), sdk.ndjson.encode(), sdk.toPipe({ relay: relay.http, path: p, timeout: 30 }));
  await assert.rejects(within(run.done, 30_000, 'the producer run'), (e) => e.code === 'STEP_FAILED' && e.cause === boom);
  await assert.rejects(within(c.done, 30_000, 'the consumer run'), (e) => e.code === 'TRUNCATED');
});
