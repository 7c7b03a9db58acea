// Unit tests of the pipeline steps, sinks and runner (js/pipeline/), in memory, with a fake
// clock for batch timing and retry backoff. The cross-process tests are pipeline-e2e.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PKG } from './lib/sdk.mjs';
import { FakeClock, settle } from './lib/fake-clock.mjs';

const sdk = await import(PKG);
const { pipeline, map, filter, flatMap, tap, batch, meter, gzip, gunzip, encrypt, decrypt, ndjson, csv, lines, collect, sink, defineSource, HttpipeError } = sdk;
const enc = new TextEncoder();
const dec = new TextDecoder();

async function run(source, ...rest) { return (await pipeline(source, ...rest).done); }
async function collected(source, ...steps) { return (await run(source, ...steps, collect())).result; }
const range = (n) => Array.from({ length: n }, (_, i) => i);
const sleepReal = (ms) => new Promise((r) => setTimeout(r, ms));

test('map keeps order, passes the index, and accepts sync and async functions', async () => {
  assert.deepEqual(await collected(range(5), map((x, i) => x * 10 + i)), [0, 11, 22, 33, 44]);
  assert.deepEqual(await collected(range(5), map(async (x) => x + 1)), [1, 2, 3, 4, 5]);
});

test('map with concurrency runs that many at once and keeps input order by default', async () => {
  let running = 0;
  let peak = 0;
  const out = await collected(range(40), map(async (x) => {
    running++; peak = Math.max(peak, running);
    await sleepReal(x % 3 === 0 ? 6 : 1);
    running--;
    return x;
  }, { concurrency: 4 }));
  assert.deepEqual(out, range(40));
  assert.equal(peak, 4);
});

test('map with ordered: false passes results on as they finish, none lost', async () => {
  const out = await collected(range(20), map(async (x) => { await sleepReal(x % 2 ? 8 : 1); return x; }, { concurrency: 5, ordered: false }));
  assert.notDeepEqual(out, range(20));
  assert.deepEqual([...out].sort((a, b) => a - b), range(20));
});

test('a throwing callback fails the run with STEP_FAILED naming the step and record; its error is the cause', async () => {
  const boom = new Error('bad sku');
  for (const step of [map((x) => { if (x === 7) throw boom; return x; }), map(async (x) => { if (x === 7) throw boom; return x; }, { concurrency: 3 }),
    filter((x) => { if (x === 7) throw boom; return true; }), flatMap((x) => { if (x === 7) throw boom; return [x]; })]) {
    await assert.rejects(run(range(10), step, collect()), (e) => {
      assert.ok(e instanceof HttpipeError);
      assert.equal(e.code, 'STEP_FAILED');
      assert.match(e.message, /step 1 \((map|filter|flatMap)\) on record 7: bad sku/);
      assert.equal(e.cause, boom);
      return true;
    });
  }
});

test('filter and flatMap (arrays, iterables, async iterables, null)', async () => {
  assert.deepEqual(await collected(range(10), filter((x) => x % 3 === 0)), [0, 3, 6, 9]);
  assert.deepEqual(await collected(range(10), filter(async (x) => x > 7)), [8, 9]);
  assert.deepEqual(await collected([1, 2, 3], flatMap((x) => (x === 2 ? null : [x, x]))), [1, 1, 3, 3]);
  assert.deepEqual(await collected([1, 2], flatMap(function* g(x) { yield x; yield -x; })), [1, -1, 2, -2]);
  assert.deepEqual(await collected([1, 2], flatMap(async function* g(x) { yield x * 100; })), [100, 200]);
});

test('tap sees every record in order (block) and can hold the main line', async () => {
  const seen = [];
  const out = await collected(range(3000), tap(async (x) => { if (x % 500 === 0) await sleepReal(1); seen.push(x); }, { buffer: 16 }));
  assert.deepEqual(out, range(3000));
  assert.deepEqual(seen, range(3000));
});

test("tap with policy 'drop' never stalls the main line and counts what it skipped", async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const seen = [];
  const r = pipeline(range(100), tap(async (x) => { seen.push(x); await gate; }, { policy: 'drop', buffer: 10 }), collect());
  const timer = setTimeout(() => release(), 200);
  const rep = await r.done;
  clearTimeout(timer); release();
  assert.deepEqual(rep.result, range(100));
  assert.ok(rep.steps[0].dropped >= 80, `dropped ${rep.steps[0].dropped}`);
  assert.equal(seen.length + rep.steps[0].dropped, 100);
});

test('a failing tap fails the run', async () => {
  await assert.rejects(run(range(10), tap((x) => { if (x === 3) throw new Error('side'); }), collect()), (e) => e.code === 'STEP_FAILED' && /on record 3: side/.test(e.message));
});

test('batch by items, by bytes, and at the end', async () => {
  assert.deepEqual(await collected(range(7), batch({ maxItems: 3 })), [[0, 1, 2], [3, 4, 5], [6]]);
  const parts = ['aaaa', 'bb', 'cccccc', 'd', 'e'];
  assert.deepEqual(await collected(parts, batch({ maxBytes: 6 })), [['aaaa', 'bb'], ['cccccc'], ['d', 'e']]);
  assert.deepEqual(await collected([], batch({ maxItems: 3 })), []);
});

test('batch flushes on time (maxWaitMs, fake clock) while the input is idle', async () => {
  const clock = new FakeClock();
  let push;
  const queue = [];
  const source = defineSource('manual', () => (async function* g() {
    for (;;) {
      const item = queue.length ? queue.shift() : await new Promise((r) => { push = r; });
      if (item === 'end') return;
      yield [item];
    }
  })());
  const give = (x) => { if (push) { const p = push; push = null; p(x); } else queue.push(x); };
  const got = [];
  const r = pipeline(source, batch({ maxItems: 100, maxWaitMs: 1000 }), sink((b) => { got.push(b); }), { clock });
  give(1); give(2);
  await settle();
  assert.deepEqual(got, []);
  await clock.advance(999);
  assert.deepEqual(got, []);
  await clock.advance(1);
  assert.deepEqual(got, [[1, 2]]);
  give(3);
  await settle();
  await clock.advance(500);
  give(4);
  await settle();
  await clock.advance(500); // 1000 ms after 3 arrived
  assert.deepEqual(got, [[1, 2], [3, 4]]);
  give('end');
  const rep = await r.done;
  assert.equal(rep.sink.delivered, 2);
  assert.equal(clock.pending, 0, 'no timer left behind');
});

test('ndjson decode/encode: lines split anywhere, CRLF, blank lines, unicode; bad line is INVALID_RECORD with its number', async () => {
  const text = '{"a":1}\r\n\n{"b":"é😀"}\n  \n[1,2]\n3';
  const bytes = enc.encode(text);
  const oneByOne = Array.from(bytes, (b) => new Uint8Array([b]));
  assert.deepEqual(await collected(oneByOne, ndjson.decode()), [{ a: 1 }, { b: 'é😀' }, [1, 2], 3]);
  const out = await collected([{ a: 1 }, 'x', [2]], ndjson.encode());
  assert.equal(dec.decode(out[0]), '{"a":1}\n"x"\n[2]\n');
  await assert.rejects(collected([enc.encode('{"a":1}\n{"a":\n')], ndjson.decode()), (e) => e.code === 'INVALID_RECORD' && /line 2/.test(e.message));
  await assert.rejects(collected([new Uint8Array([0x7b, 0xff, 0x7d, 10])], ndjson.decode()), (e) => e.code === 'INVALID_RECORD' && /UTF-8/.test(e.message));
  await assert.rejects(collected([enc.encode('"unterminated'), new Uint8Array([0xe2, 0x82])], ndjson.decode()), (e) => e.code === 'INVALID_RECORD');
  await assert.rejects(collected([() => 1], ndjson.encode()), (e) => e.code === 'INVALID_RECORD' && /record 1/.test(e.message));
  const cyclic = {}; cyclic.self = cyclic;
  await assert.rejects(collected([cyclic], ndjson.encode()), (e) => e.code === 'INVALID_RECORD' && !e.message.includes('\n')); // one line (V8 says it in three)
});

test('lines: LF and CRLF, a last line without newline, skipEmpty', async () => {
  assert.deepEqual(await collected(['a\r\nb\n\nc'], lines()), ['a', 'b', '', 'c']);
  assert.deepEqual(await collected([enc.encode('a\n\nb\n')], lines({ skipEmpty: true })), ['a', 'b']);
});

test('gzip → gunzip and encrypt → decrypt round-trip bytes; corrupt gzip is INVALID_RECORD; wrong passphrase is WRONG_KEY', async () => {
  const data = enc.encode('x'.repeat(100_000) + 'end');
  const back = await collected([data.subarray(0, 10), data.subarray(10)], gzip(), gunzip());
  assert.equal(dec.decode(Buffer.concat(back)), dec.decode(data));
  const zipped = Buffer.concat(await collected([data], gzip()));
  assert.ok(zipped.length < 2000);
  zipped[zipped.length - 6] ^= 0xff;
  await assert.rejects(collected([zipped], gunzip()), (e) => e.code === 'INVALID_RECORD');
  const secret = await collected([data], encrypt({ passphrase: 'pw' }));
  assert.equal(dec.decode(Buffer.concat(await collected(secret, decrypt({ passphrase: 'pw' })))), dec.decode(data));
  await assert.rejects(collected(secret, decrypt({ passphrase: 'other' })), (e) => e.code === 'WRONG_KEY');
  await assert.rejects(collected([{ not: 'bytes' }], gzip()), (e) => e.code === 'UNSUPPORTED' && /encode them first/.test(e.message));
});

test('records.in of a byte source counts the decoded records, not the byte chunks', async () => {
  // issue 29: 2 500 CSV rows from a Blob were reported as 2 records (its chunks).
  const csvText = 'sku,qty\n' + Array.from({ length: 2500 }, (_, i) => `SKU-${i},${i}`).join('\n') + '\n';
  const rep = await pipeline(new Blob([csvText]), csv.decode(), collect()).done;
  assert.equal(rep.result.length, 2500);
  assert.equal(rep.records.in, 2500);
  assert.ok(rep.source.recordsOut < 2500, 'the source itself yields byte chunks');
  // ...through byte steps first (gzip, gunzip), and by lines()
  const lined = await pipeline(new Blob([csvText]), gzip(), gunzip(), lines({ skipEmpty: true }), collect()).done;
  assert.equal(lined.records.in, 2501);
  // A byte pipeline without a decoder counts byte chunks, as before.
  const bytes = await pipeline(new Blob([csvText]), gzip(), collect()).done;
  assert.equal(bytes.records.in, bytes.source.recordsOut);
  // A record source is unchanged.
  assert.equal((await pipeline([1, 2, 3], collect()).done).records.in, 3);
});

test('the report counts records and bytes per step, and stats() is live', async () => {
  const r = pipeline(range(2500), map((x) => ({ x })), ndjson.encode(), ndjson.decode(), filter((o) => o.x % 2 === 0), meter('even'), batch({ maxItems: 100 }), collect());
  const rep = await r.done;
  assert.equal(rep.records.in, 2500);
  assert.equal(rep.records.out, 13);
  assert.deepEqual(rep.steps.map((s) => [s.name, s.recordsIn, s.recordsOut]), [
    ['map', 2500, 2500], ['ndjson.encode', 2500, 3], ['ndjson.decode', 3, 2500], ['filter', 2500, 1250], ['even', 1250, 1250], ['batch', 1250, 13]]);
  const encoded = rep.steps[1];
  assert.equal(encoded.bytesOut, rep.steps[2].bytesIn);
  assert.ok(encoded.bytesOut > 2500 * 8);
  assert.equal(rep.state, 'done');
  assert.equal(r.stats().state, 'done');
});

test('a generator function source is replayable; a generator object can run once, then a clear error', async () => {
  function* gen() { yield 1; yield 2; }
  const steps = [map((x) => x + 1)];
  assert.deepEqual(await collected(gen, ...steps), [2, 3]);
  assert.deepEqual(await collected(gen, ...steps), [2, 3]);
  const once = gen();
  assert.deepEqual(await collected(once), [1, 2]);
  await assert.rejects(collected(once), (e) => e.code === 'UNSUPPORTED' && /pass a function/.test(e.message));
});

test('byte sources (string, Uint8Array, Blob, ReadableStream) become Uint8Array records', async () => {
  for (const src of ['a\nb\n', enc.encode('a\nb\n'), new Blob(['a\nb\n']), new Blob(['a\nb\n']).stream()]) {
    assert.deepEqual(await collected(src, lines()), ['a', 'b']);
  }
});

test('abort tears down the source and every step; done rejects ABORTED with the reason as cause', async () => {
  let closed = false;
  async function* endless() { try { for (let i = 0; ; i++) { await sleepReal(1); yield i; } } finally { closed = true; } }
  const r = pipeline(endless, map((x) => x), batch({ maxItems: 5 }), sink(() => {}));
  await sleepReal(30);
  const reason = new Error('operator stop');
  r.abort(reason);
  await assert.rejects(r.done, (e) => e.code === 'ABORTED' && e.cause === reason);
  for (let i = 0; i < 50 && !closed; i++) await sleepReal(5);
  assert.ok(closed, "the source generator's finally ran");
  const ac = new AbortController();
  const r2 = pipeline(endless, sink(() => {}), { signal: ac.signal });
  ac.abort('bye');
  await assert.rejects(r2.done, (e) => e.code === 'ABORTED');
});

test('a step error upstream closes the source (finally runs), and the error is the run\'s', async () => {
  let closed = false;
  function* src() { try { for (let i = 0; i < 1e9; i++) yield i; } finally { closed = true; } }
  await assert.rejects(run(src, map((x) => { if (x === 5000) throw new Error('x'); return x; }), collect()), (e) => e.code === 'STEP_FAILED');
  assert.ok(closed);
});

test('pipeline() refuses a missing sink or a non-step argument, clearly', () => {
  assert.throws(() => pipeline([1], map((x) => x)), (e) => e.code === 'UNSUPPORTED' && /last argument must be a sink/.test(e.message));
  assert.throws(() => pipeline([1], (x) => x, collect()), (e) => e.code === 'UNSUPPORTED' && /argument 2 is not a step/.test(e.message));
  assert.throws(() => map(1), (e) => e.code === 'UNSUPPORTED');
  assert.throws(() => batch({ maxItems: 0 }), (e) => e.code === 'UNSUPPORTED');
  assert.throws(() => tap(() => {}, { policy: 'queue' }), (e) => e.code === 'UNSUPPORTED');
});

// ---- sinks: retries, dead letters, idempotency keys -------------------------------------

test('sink retries a transient failure with exponential backoff (fake clock), same key on every attempt', async () => {
  const clock = new FakeClock();
  const calls = [];
  const s = sink(async (item, { key, attempt }) => {
    calls.push([item, key, attempt, clock.now()]);
    if (item === 'b' && attempt < 3) throw new Error('503 from the database');
  }, { retry: { attempts: 4, baseDelayMs: 100, jitter: false } });
  const r = pipeline(['a', 'b', 'c'], s, { clock });
  await settle();
  await clock.advance(100);
  await clock.advance(200);
  const rep = await r.done;
  assert.deepEqual(calls, [['a', '0', 1, 0], ['b', '1', 1, 0], ['b', '1', 2, 100], ['b', '1', 3, 300], ['c', '2', 1, 300]]);
  assert.equal(rep.sink.delivered, 3);
  assert.equal(rep.retries, 2);
  assert.equal(rep.sink.attempts, 5);
  assert.equal(rep.deadLettered, 0);
});

test('backoff: fixed, a function, maxDelayMs cap, jitter within [d/2, d]', async () => {
  for (const [retry, want] of [
    [{ attempts: 4, backoff: 'fixed', baseDelayMs: 50, jitter: false }, [50, 50, 50]],
    [{ attempts: 4, backoff: (n) => n * 7, jitter: false }, [7, 14, 21]],
    [{ attempts: 5, baseDelayMs: 100, maxDelayMs: 250, jitter: false }, [100, 200, 250, 250]],
    [{ attempts: 3, baseDelayMs: 100, jitter: true }, [50, 100]], // random() = 0 → d/2
  ]) {
    const clock = new FakeClock();
    const at = [];
    const r = pipeline(['x'], sink(() => { at.push(clock.now()); throw new Error('down'); }, { retry, deadLetter: () => {}, random: () => 0 }), { clock });
    for (let i = 0; i < 10; i++) await clock.advance(1000);
    await r.done;
    assert.deepEqual(at.slice(1).map((t, i) => t - at[i]), want, JSON.stringify(retry));
  }
});

test('a poison record goes to the dead letter after its last attempt and the run goes on; the counts add up', async () => {
  const clock = new FakeClock();
  const dead = [];
  const applied = new Map();
  const r = pipeline(range(10), batch({ maxItems: 2 }), sink(async (b, { key, attempt }) => {
    if (b.includes(6)) throw new Error('constraint violation');
    if (key === '1' && attempt === 1) throw new Error('timeout');
    assert.ok(!applied.has(key), `batch ${key} applied twice`);
    applied.set(key, b);
  }, { retry: { attempts: 3, baseDelayMs: 10 }, deadLetter: (b, info) => { dead.push({ b, key: info.key, attempts: info.attempts, msg: info.error.message }); } }), { clock });
  for (let i = 0; i < 20; i++) await clock.advance(100);
  const rep = await r.done;
  assert.deepEqual(dead, [{ b: [6, 7], key: '3', attempts: 3, msg: 'constraint violation' }]);
  assert.deepEqual([...applied.keys()], ['0', '1', '2', '4']);
  assert.equal(rep.sink.delivered, 4);
  assert.equal(rep.deadLettered, 1);
  assert.equal(rep.retries, 1 + 2);
  assert.equal(rep.sink.delivered + rep.deadLettered, rep.sink.recordsIn);
});

test('without a dead letter, the last failure fails the run with SINK_FAILED (cause: the error); never loops', async () => {
  let calls = 0;
  const boom = new Error('disk full');
  await assert.rejects(run(['a', 'b'], sink(() => { calls++; throw boom; }, { retry: { attempts: 2, baseDelayMs: 1 } })), (e) => {
    assert.equal(e.code, 'SINK_FAILED');
    assert.match(e.message, /item 0 failed after 2 attempts.*disk full/);
    assert.equal(e.cause, boom);
    return true;
  });
  assert.equal(calls, 2);
});

test('retryOn decides; errors marked retryable: false are not retried by default', async () => {
  let calls = 0;
  const permanent = Object.assign(new Error('400 bad row'), { retryable: false });
  const dead = [];
  await run(['a'], sink(() => { calls++; throw permanent; }, { retry: { attempts: 5, baseDelayMs: 1 }, deadLetter: (x) => dead.push(x) }));
  assert.equal(calls, 1);
  assert.deepEqual(dead, ['a']);
  calls = 0;
  await run(['a'], sink(() => { calls++; throw new Error('x'); }, { retry: { attempts: 5, baseDelayMs: 1, retryOn: (e, attempt) => attempt < 2 }, deadLetter: () => {} }));
  assert.equal(calls, 2);
});

test('sink concurrency delivers up to N at once; a custom key function is used for idempotency', async () => {
  let running = 0;
  let peak = 0;
  const keys = [];
  await run(range(30), sink(async (x, { key }) => { running++; peak = Math.max(peak, running); keys.push(key); await sleepReal(2); running--; }, { concurrency: 5, key: (x) => `sku-${x}` }));
  assert.equal(peak, 5);
  assert.deepEqual(keys.sort(), range(30).map((x) => `sku-${x}`).sort());
});

test('abort during a backoff wait ends the run promptly', async () => {
  const clock = new FakeClock();
  const r = pipeline(['a'], sink(() => { throw new Error('down'); }, { retry: { attempts: 10, baseDelayMs: 60_000 } }), { clock });
  await settle();
  r.abort('shutdown');
  await assert.rejects(r.done, (e) => e.code === 'ABORTED');
});
