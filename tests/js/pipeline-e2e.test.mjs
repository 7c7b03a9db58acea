// Record pipelines (js/pipeline/) end to end, across processes, through the real relay:
// supplier → buyer (Node and Deno suppliers, age-rt, retries and a dead letter), serve()
// answering consecutive pulls, partition() over 4 worker processes, shared fate both ways,
// aborts on either side, a producer killed mid-run. The other side runs in
// tests/js/lib/pipeline-child.mjs (JSON args, JSON-lines events, commands on stdin).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath, rejection } from './lib/sdk.mjs';
import { runChild } from './lib/child.mjs';
import { inventory, inventoryQtySum, fnv1a } from './lib/pipeline-records.mjs';

const sdk = await import(PKG);
const { pipeline, fromPipe, toPipe, ndjson, batch, sink, collect, partition, defineStep, defineSink, HttpipeError } = sdk;
const CHILD = path.join(ROOT, 'tests/js/lib/pipeline-child.mjs');
const DENO = path.join(ROOT, 'node_modules/.bin/deno');

let relay;
const children = new Set();
before(async () => { relay = await startRelay(); });
after(async () => {
  for (const c of children) c.kill();
  await Promise.all([...children].map((c) => c.exited));
  await relay?.stop();
});

/** The child process for `args` (Node, or Deno with `deno: true`), killed in `after`. */
function child(args, { deno = false, stdin = false } = {}) {
  const json = JSON.stringify({ relay: relay.http, ...args });
  const c = deno
    ? runChild(['run', '--no-prompt', '--allow-net', '--allow-read', CHILD, json],
      { command: DENO, cwd: ROOT, stdin, env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } })
    : runChild([CHILD, json], { stdin });
  children.add(c);
  return c;
}

const final = (c, ms = 60_000) => c.waitFor((e) => e.event === 'done' || e.event === 'error', ms);
const tornDown = (c, ms = 15_000) => c.waitFor((e) => e.event === 'torn-down', ms);

function isCode(code) {
  return (e) => {
    assert.ok(e instanceof HttpipeError, `expected an HttpipeError, got ${e && e.stack}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

/** A pass-through step whose `torn` promise resolves when its generator finished (finally). */
function probe() {
  let set;
  const torn = new Promise((r) => { set = r; });
  const step = defineStep('probe', async function* probeRun(input) {
    try { yield* input; } finally { set(true); }
  });
  return { step, torn };
}

/** Resolves with true if `p` settles within `ms`, false otherwise (a bound, not a sync point). */
const within = (p, ms) => Promise.race([p.then(() => true, () => true), new Promise((r) => { setTimeout(() => r(false), ms).unref(); })]);

/**
 * Counts in a report: each step's input is the previous stage's output; `records.in` is the
 * source's records, or for a byte source those of the step that decodes them (`decoder`).
 */
function assertChained(report, decoder) {
  let prev = report.source.recordsOut;
  report.steps.forEach((s, i) => {
    assert.equal(s.recordsIn, prev, `step ${i + 1} (${s.name}) records in`);
    prev = s.recordsOut;
  });
  assert.equal(report.sink.recordsIn, prev, 'sink records in');
  const from = decoder === undefined ? report.source : report.steps.find((s) => s.name === decoder);
  assert.equal(report.records.in, from.recordsOut);
}

// ---- 1. supplier → buyer ------------------------------------------------------------------

const N_INVENTORY = 200_000;
const BATCH = 500;
const POISON = '246'; // the idempotency key (sink input position) of the batch that always fails

// The dead letter: a function with the Node supplier, another pipe (read by a third pipeline)
// with the Deno supplier.
for (const [runtime, dlKind] of [['Node', 'function'], ['Deno', 'pipe']]) {
  test(`supplier → buyer: ${runtime} supplier, Node buyer, ${N_INVENTORY} inventory records, NDJSON age-rt, transient failures, a poison batch in the dead letter (${dlKind})`, { timeout: 120_000 }, async () => {
    const p = uniquePath('supply');
    const passphrase = 'inventory sync 2026';
    const supplier = child({ role: 'produce', path: p, passphrase, n: N_INVENTORY }, { deno: runtime === 'Deno' });
    const dlPath = uniquePath('dead-letter');
    const dlRun = dlKind === 'pipe' ? pipeline(fromPipe({ relay: relay.http, path: dlPath, passphrase }), ndjson.decode(), collect()) : null;

    const batches = N_INVENTORY / BATCH;
    const transient = (key) => key !== POISON && fnv1a(key) % 20 === 0;
    const appliedKeys = new Set();
    const appliedSeqs = new Uint8Array(N_INVENTORY);
    const firstSeqOfKey = new Map();
    let duplicateKeys = 0;
    let duplicateSeqs = 0;
    let unstableKeys = 0;
    let transientFailures = 0;
    let poisonAttempts = 0;
    let qty = 0;
    const deadLetters = [];
    const run = pipeline(
      fromPipe({ relay: relay.http, path: p, passphrase }),
      ndjson.decode(),
      batch({ maxItems: BATCH }),
      sink(async (items, { key, attempt }) => {
        // The key is stable for the same batch across attempts.
        const first = firstSeqOfKey.get(key);
        if (first === undefined) firstSeqOfKey.set(key, items[0].seq); else if (first !== items[0].seq) unstableKeys++;
        await null; // an async "database"
        if (key === POISON) { poisonAttempts++; throw new Error(`batch ${key}: constraint violation on sku ${items[0].sku}`); }
        if (attempt === 1 && transient(key)) { transientFailures++; throw new Error(`batch ${key}: deadlock detected, try again`); }
        // Applied (the transaction commits): the key must be new, and so must every record.
        if (appliedKeys.has(key)) duplicateKeys++;
        appliedKeys.add(key);
        for (const r of items) {
          if (appliedSeqs[r.seq]) duplicateSeqs++;
          appliedSeqs[r.seq] = 1;
          qty += r.qty;
        }
      }, {
        retry: { attempts: 4, baseDelayMs: 1 },
        deadLetter: dlKind === 'pipe'
          ? toPipe({ relay: relay.http, path: dlPath, passphrase })
          : (items, info) => { deadLetters.push({ key: info.key, attempts: info.attempts, record: items, error: info.error.message }); },
      }),
    );
    const report = await run.done;
    if (dlRun) {
      // One NDJSON entry per dead letter: { key, attempts, error, code, record }.
      const dl = await dlRun.done;
      deadLetters.push(...dl.result);
      const t = report.sink.transfers.filter((x) => x.deadLetter);
      assert.equal(t.length, 1);
      assert.equal(t[0].path, dlPath);
      assert.equal(t[0].relayState, '[STATE:TRANSFER_SUCCESSFUL]');
    }
    const sent = await final(supplier);
    assert.equal(sent.event, 'done', JSON.stringify(sent));

    // The supplier sent every record, and the relay handed it all over.
    assert.equal(sent.report.records.in, N_INVENTORY);
    assertChained(sent.report);
    assert.equal(sent.report.sink.transfers.length, 1);
    assert.equal(sent.report.sink.transfers[0].relayState, '[STATE:TRANSFER_SUCCESSFUL]');

    // Every good record landed exactly once; the poison batch is the rest.
    const expectTransient = [...Array(batches).keys()].map(String).filter(transient).length;
    assert.ok(expectTransient > 5, `the test should fail some batches transiently (${expectTransient})`);
    assert.equal(unstableKeys, 0, 'a key named another batch on a retry');
    assert.equal(duplicateKeys, 0);
    assert.equal(duplicateSeqs, 0);
    assert.equal(appliedKeys.size, batches - 1);
    assert.equal(transientFailures, expectTransient);
    assert.equal(poisonAttempts, 4);
    assert.equal(deadLetters.length, 1);
    const dead = deadLetters[0];
    assert.equal(dead.key, POISON);
    assert.equal(dead.attempts, 4);
    assert.match(dead.error, /constraint violation/);
    const poisonStart = Number(POISON) * BATCH;
    assert.deepEqual(dead.record.map((r) => r.seq), Array.from({ length: BATCH }, (_, i) => poisonStart + i));
    assert.deepEqual(dead.record[7], inventory(poisonStart + 7));
    const deadQty = dead.record.reduce((sum, r) => sum + r.qty, 0);
    let missing = 0;
    for (let s = 0; s < N_INVENTORY; s++) {
      const inPoison = s >= poisonStart && s < poisonStart + BATCH;
      if (!appliedSeqs[s] && !inPoison) missing++;
      if (appliedSeqs[s] && inPoison) assert.fail(`poison record ${s} was applied`);
    }
    assert.equal(missing, 0);
    assert.equal(qty + deadQty, inventoryQtySum(N_INVENTORY), 'qty checksum');

    // The buyer's report adds up; its records are the decoded ones, not the byte chunks.
    assertChained(report, 'ndjson.decode');
    assert.equal(report.records.in, N_INVENTORY);
    assert.equal(report.state, 'done');
    assert.equal(report.source.bytesOut, sent.report.sink.bytesIn, 'plaintext bytes in = bytes the supplier encoded');
    assert.equal(report.steps[0].name, 'ndjson.decode');
    assert.equal(report.steps[0].recordsOut, N_INVENTORY);
    assert.equal(report.steps[1].name, 'batch');
    assert.equal(report.steps[1].recordsOut, batches);
    assert.equal(report.sink.delivered, batches - 1);
    assert.equal(report.deadLettered, 1);
    assert.equal(report.sink.delivered + report.sink.deadLettered, batches);
    assert.equal(report.retries, transientFailures + 3, 'one retry per transient failure, three for the poison batch');
    assert.equal(report.sink.attempts, batches + report.retries);
    assert.equal(report.records.out, report.sink.delivered);
  });
}

// ---- 2. serve() ---------------------------------------------------------------------------

test('serve() answers three consecutive pulls with a fresh full export each, then stops on abort', { timeout: 90_000 }, async () => {
  const p = uniquePath('serve');
  const passphrase = 'export passphrase';
  const N = 1000;
  const producer = child({ role: 'serve', path: p, passphrase, n: N }, { stdin: true });
  await producer.waitFor((e) => e.event === 'started');
  for (let round = 1; round <= 3; round++) {
    const report = await pipeline(fromPipe({ relay: relay.http, path: p, passphrase }), ndjson.decode(), collect()).done;
    const rows = report.result;
    assert.equal(rows.length, N, `pull ${round}`);
    assert.ok(rows.every((r, i) => r.round === round && r.seq === i), `pull ${round}: one full export of round ${round}, in order`);
    const sent = await producer.waitFor((e) => (e.event === 'round' || e.event === 'round-error') && e.round === round);
    assert.equal(sent.event, 'round', JSON.stringify(sent));
    assert.equal(sent.records, N);
  }
  producer.send({ cmd: 'abort' });
  const served = await producer.waitFor((e) => e.event === 'served' || e.event === 'error');
  assert.deepEqual(served, { event: 'served', rounds: 3, completed: 3, failed: 0, aborted: true });
});

// ---- 3. partition() -----------------------------------------------------------------------

function bitmapOr(acc, b64) {
  const b = Buffer.from(b64, 'base64');
  let overlap = 0;
  for (let i = 0; i < b.length; i++) { if (acc[i] & b[i]) overlap++; acc[i] |= b[i]; }
  return overlap;
}

function popcount(bytes) {
  let n = 0;
  for (let i = 0; i < bytes.length; i++) { let x = bytes[i]; while (x) { x &= x - 1; n++; } }
  return n;
}

async function partitionRun({ n, byKey }) {
  const paths = [0, 1, 2, 3].map((i) => uniquePath(`lane${i}`));
  const workers = paths.map((lane) => child({ role: 'worker', path: lane, n, byKey }));
  const KEYS = 1009;
  const run = pipeline(
    byKey
      ? function* keyed() { for (let id = 0; id < n; id++) yield { id, k: `acct-${id % KEYS}` }; }
      : function* ids() { for (let id = 0; id < n; id++) yield { id }; },
    partition({ relay: relay.http, paths, ...(byKey ? { key: (r) => r.k } : {}) }),
  );
  const report = await run.done;
  const results = await Promise.all(workers.map((w) => final(w, 90_000)));
  for (const r of results) assert.equal(r.event, 'done', JSON.stringify(r).slice(0, 2000));

  // None lost, none duplicated: the workers' id sets are disjoint and their union is 0..n-1.
  const union = new Uint8Array(Math.ceil(n / 8));
  let overlap = 0;
  results.forEach((r) => {
    assert.equal(r.dup, 0);
    assert.equal(r.outOfRange, 0);
    overlap += bitmapOr(union, r.bitmap);
  });
  assert.equal(overlap, 0, 'an id reached two workers');
  assert.equal(popcount(union), n);
  assert.equal(results.reduce((s, r) => s + r.count, 0), n);

  // The producer's report: every lane's transfer completed, with the worker's count.
  assert.equal(report.records.in, n);
  assert.equal(report.sink.delivered, n);
  assert.deepEqual(report.sink.transfers.map((t) => t.path), paths);
  report.sink.transfers.forEach((t, i) => {
    assert.equal(t.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
    assert.equal(t.records, results[i].count, `lane ${i}`);
  });
  return { report, results, KEYS };
}

test('partition(): 1 000 000 records round-robin over 4 worker processes, none lost or duplicated', { timeout: 120_000 }, async () => {
  const n = 1_000_000;
  const { results } = await partitionRun({ n, byKey: false });
  for (const r of results) assert.equal(r.count, n / 4);
});

test('partition({ key }): 200 000 records over 4 worker processes, each key on one worker, in order', { timeout: 120_000 }, async () => {
  const n = 200_000;
  const { results, KEYS } = await partitionRun({ n, byKey: true });
  const owner = new Map();
  results.forEach((r, lane) => {
    assert.equal(r.outOfOrder, 0, `lane ${lane}: records of one key out of order`);
    for (const k of r.keys) {
      assert.ok(!owner.has(k), `key ${k} on lanes ${owner.get(k)} and ${lane}`);
      owner.set(k, lane);
      assert.equal(fnv1a(k) % 4, lane, `key ${k}: the lane of its FNV-1a hash`);
    }
  });
  assert.equal(owner.size, KEYS);
  assert.ok(results.every((r) => r.count > 0), 'every lane got records');
});

test('partition(): a worker process killed mid-run → the producer\'s done rejects PEER_DISCONNECTED, the other lanes are cut (TRUNCATED)', { timeout: 60_000 }, async () => {
  const paths = [0, 1, 2, 3].map((i) => uniquePath(`cut${i}`));
  const workers = paths.map((lane) => child({ role: 'worker', path: lane, n: 1 << 24, progressEvery: 2000 }));
  let sourceEnded;
  const sourceTorn = new Promise((r) => { sourceEnded = r; });
  const pr = probe();
  const run = pipeline(async function* paced() {
    try {
      for (let id = 0; id < 1 << 24; id++) { yield { id }; if (id % 200 === 199) await new Promise((r) => { setTimeout(r, 1); }); }
    } finally { sourceEnded(true); }
  }, pr.step, partition({ relay: relay.http, paths }));
  await workers[1].waitFor((e) => e.event === 'progress' || e.event === 'error');
  workers[1].kill('SIGKILL');
  const err = await rejection(run.done);
  isCode('PEER_DISCONNECTED')(err);
  for (const i of [0, 2, 3]) {
    const r = await final(workers[i]);
    assert.equal(r.event, 'error', `lane ${i} ended cleanly: ${JSON.stringify(r).slice(0, 300)}`);
    assert.equal(r.code, 'TRUNCATED', r.message);
    assert.ok(r.count > 0);
  }
  assert.equal(await within(sourceTorn, 5000), true, 'the source generator got its return()');
  assert.equal(await within(pr.torn, 5000), true, 'the steps were torn down');
});

// ---- 4. shared fate -----------------------------------------------------------------------

/**
 * A consumer pipeline on `p`: fromPipe → ndjson.decode() → probe → sink counting records,
 * calling `onRecord(record, count)` after each one (or `sinkFn` on batches of 100). Returns the
 * run, the probe's teardown and the count.
 */
function consumer(p, { passphrase, timeout, onRecord, sinkFn, sinkOptions } = {}) {
  const pr = probe();
  let count = 0;
  const steps = sinkFn ? [batch({ maxItems: 100 })] : [];
  const run = pipeline(fromPipe({ relay: relay.http, path: p, passphrase, timeout }), ndjson.decode(), pr.step, ...steps,
    sink(sinkFn || ((r) => { count++; if (onRecord) onRecord(r, count); }), sinkOptions));
  return { run, torn: pr.torn, count: () => count };
}

/** A promise resolved by the first call of the returned function. */
function trigger() { let fire; const fired = new Promise((r) => { fire = r; }); return { fired, fire }; }

// Where the producer fails: a map() callback (plain and age-rt), and (plain) its source
// generator and a custom step (defineStep), whose own errors are STEP_FAILED too.
for (const [failIn, passphrase, what, message] of [
  ['map', undefined, 'a step (map) throws', /^step 1 \(map\) on record \d+: refusing record \d+$/],
  ['map', 'shared fate', 'a step (map) throws', /^step 1 \(map\) on record \d+: refusing record \d+$/],
  ['source', undefined, 'the source generator throws', /^source: refusing record \d+$/],
  ['guard', undefined, 'a custom step (defineStep) throws', /^step 2 \(guard\): refusing record \d+$/],
]) {
  const kind = passphrase ? 'age-rt' : 'plain';
  test(`shared fate: ${what} mid-run → producer STEP_FAILED, the consumer's done rejects TRUNCATED (${kind})`, { timeout: 60_000 }, async () => {
    const p = uniquePath('stepfails');
    const producer = child({ role: 'produce', path: p, passphrase, n: null, pace: 200, commands: true, failIn }, { stdin: true });
    let sentFail = false;
    const c = consumer(p, { passphrase, onRecord: (r, n) => { if (n === 5000 && !sentFail) { sentFail = true; producer.send({ cmd: 'fail' }); } } });
    const err = await rejection(c.run.done);
    isCode('TRUNCATED')(err);
    assert.ok(sentFail && c.count() >= 5000, `the consumer got records before the cut (${c.count()})`);
    const failed = await final(producer);
    assert.equal(failed.event, 'error');
    assert.equal(failed.code, 'STEP_FAILED', failed.message);
    assert.match(failed.message, message);
    const torn = await tornDown(producer);
    assert.deepEqual(torn, { event: 'torn-down', source: true, step: true });
    assert.equal(await within(c.torn, 5000), true, 'the consumer\'s steps were torn down');
  });
}

test('shared fate: a consumer sink that fails permanently (no dead letter) → SINK_FAILED, the producer\'s done rejects PEER_DISCONNECTED', { timeout: 60_000 }, async () => {
  const p = uniquePath('sinkfails');
  const producer = child({ role: 'produce', path: p, n: null, pace: 200 });
  let calls = 0;
  const c = consumer(p, {
    sinkFn: (items, { key }) => { calls++; if (key === '30') throw new Error('warehouse DB rejected the batch'); },
    sinkOptions: { retry: { attempts: 2, baseDelayMs: 1 } },
  });
  const err = await rejection(c.run.done);
  isCode('SINK_FAILED')(err);
  assert.match(err.message, /item 30 failed after 2 attempts/);
  assert.equal(calls, 32, '30 good batches and 2 attempts of the failing one');
  const failed = await final(producer);
  assert.equal(failed.event, 'error', JSON.stringify(failed));
  assert.equal(failed.code, 'PEER_DISCONNECTED', failed.message);
  assert.deepEqual(await tornDown(producer), { event: 'torn-down', source: true, step: true });
  assert.equal(await within(c.torn, 5000), true, 'the consumer\'s steps were torn down');
});

test('shared fate: a custom sink (defineSink) that throws → SINK_FAILED naming it, the producer\'s done rejects PEER_DISCONNECTED', { timeout: 60_000 }, async () => {
  const p = uniquePath('customsinkfails');
  const producer = child({ role: 'produce', path: p, n: null, pace: 200 });
  const pr = probe();
  const run = pipeline(fromPipe({ relay: relay.http, path: p }), ndjson.decode(), pr.step, defineSink('warehouse', async (input) => {
    let n = 0;
    for await (const chunk of input) { n += chunk.length; if (n >= 3000) throw new Error('warehouse DB rejected the insert'); }
  }));
  const err = await rejection(run.done);
  isCode('SINK_FAILED')(err);
  assert.equal(err.message, 'sink (warehouse): warehouse DB rejected the insert');
  assert.equal(err.cause.message, 'warehouse DB rejected the insert');
  const failed = await final(producer);
  assert.equal(failed.code, 'PEER_DISCONNECTED', failed.message);
  assert.deepEqual(await tornDown(producer), { event: 'torn-down', source: true, step: true });
  assert.equal(await within(pr.torn, 5000), true, 'the consumer\'s steps were torn down');
});

// Node's fetch sends nothing before the first body byte, so a plain producer that fails
// before its first byte, after the rendezvous paired it with the consumer, never reaches the
// relay: the consumer waited on without end (this test was a todo). The producer now withdraws
// (PROTOCOL.md §3.10): the consumer gets `producer-withdrew` → TRUNCATED.
test('shared fate: a plain producer whose step fails on its first record → the consumer rejects (not a wait without end)', {
  timeout: 30_000,
}, async () => {
  const p = uniquePath('firstfails');
  const producer = child({ role: 'produce', path: p, n: 1000, failAt: 0 });
  const c = consumer(p, { timeout: 5 });
  const failed = await final(producer);
  assert.equal(failed.code, 'STEP_FAILED', failed.message);
  const settled = await within(c.run.done, 5000);
  c.run.abort();
  assert.equal(settled, true, 'the consumer still waits 5 s after the producer failed');
  isCode('TRUNCATED')(await rejection(c.run.done));
});

// ---- 5. abort on either side --------------------------------------------------------------

test('abort: producer run.abort() → producer ABORTED, consumer TRUNCATED, every step torn down on both sides', { timeout: 60_000 }, async () => {
  const p = uniquePath('abortp');
  const producer = child({ role: 'produce', path: p, n: null, pace: 200, commands: true }, { stdin: true });
  const t = trigger();
  const c = consumer(p, { onRecord: (r, n) => { if (n === 5000) t.fire(); } });
  await t.fired;
  producer.send({ cmd: 'abort' });
  isCode('TRUNCATED')(await rejection(c.run.done));
  const failed = await final(producer);
  assert.equal(failed.event, 'error');
  assert.equal(failed.code, 'ABORTED', failed.message);
  assert.deepEqual(await tornDown(producer), { event: 'torn-down', source: true, step: true });
  assert.equal(await within(c.torn, 5000), true, 'the consumer\'s steps were torn down');
});

test('abort: consumer run.abort() → consumer ABORTED, producer PEER_DISCONNECTED, every step torn down on both sides', { timeout: 60_000 }, async () => {
  const p = uniquePath('abortc');
  const producer = child({ role: 'produce', path: p, n: null, pace: 200 });
  const t = trigger();
  const c = consumer(p, { onRecord: (r, n) => { if (n === 5000) t.fire(); } });
  await t.fired;
  c.run.abort(new Error('buyer cancelled'));
  const err = await rejection(c.run.done);
  isCode('ABORTED')(err);
  assert.match(err.message, /buyer cancelled/);
  const failed = await final(producer);
  assert.equal(failed.event, 'error');
  assert.equal(failed.code, 'PEER_DISCONNECTED', failed.message);
  assert.deepEqual(await tornDown(producer), { event: 'torn-down', source: true, step: true });
  assert.equal(await within(c.torn, 5000), true, 'the consumer\'s steps were torn down');
});

// ---- 6. a producer killed -----------------------------------------------------------------

test('a producer process killed (SIGKILL) mid-run → the consumer pipeline rejects TRUNCATED within seconds', { timeout: 60_000 }, async () => {
  const p = uniquePath('killed');
  const producer = child({ role: 'produce', path: p, n: null, pace: 200 });
  const t = trigger();
  const c = consumer(p, { onRecord: (r, n) => { if (n === 5000) t.fire(); } });
  await t.fired;
  producer.kill('SIGKILL');
  const t0 = performance.now();
  const err = await rejection(c.run.done);
  const ms = performance.now() - t0;
  isCode('TRUNCATED')(err);
  assert.ok(ms < 5000, `TRUNCATED after ${ms} ms`);
  assert.equal(await within(c.torn, 5000), true, 'the consumer\'s steps were torn down');
});
