// Pipeline sinks (docs/js-api.md "Sinks"): where records leave the run. Only sinks touch the
// world, so only sinks retry: a failed delivery is tried again without re-running anything
// upstream, a record that keeps failing goes to the dead letter, and none loops forever.
import { HttpipeError, send } from '../api.js';
import { defineSink, isSink, sleep, orAbort } from './core.js';
import { Channel } from './channel.js';
import { ndjson } from './codecs.js';

const enc = new TextEncoder();
const toBytes = (x) => (typeof x === 'string' ? enc.encode(x) : x);

/** Byte chunks (Uint8Array or string records) as a ReadableStream that errors when the input does. */
function byteStream(it, what) {
  const iter = it[Symbol.asyncIterator]();
  let queue = [];
  return new ReadableStream({
    async pull(ctrl) {
      while (queue.length === 0) {
        const r = await iter.next();
        if (r.done) { ctrl.close(); return; }
        queue = r.value;
      }
      const c = toBytes(queue[0]);
      queue = queue.length === 1 ? [] : queue.slice(1);
      if (!(c instanceof Uint8Array)) throw new HttpipeError(`${what}: records must be Uint8Array or string (encode them first, e.g. ndjson.encode())`, 'UNSUPPORTED');
      ctrl.enqueue(c);
    },
    async cancel(reason) { if (typeof iter.return === 'function') await iter.return(reason); },
  }, { highWaterMark: 0 });
}

/**
 * Sends the byte chunks to `options.path` (the SDK's `send` options). The run resolves when
 * the relay reports the transfer complete (`report.sink.transfers[0]`); an error upstream
 * cuts the stream, so the consumer sees TRUNCATED, never a short but clean end.
 */
export function toPipe(options) {
  if (!options || !options.relay || !options.path) {
    throw new HttpipeError('toPipe({ relay, path, ... }): relay and path are required', 'UNSUPPORTED');
  }
  return defineSink('toPipe', async (input, ctx) => {
    const report = await sendChunks(input, options, ctx, 'toPipe');
    ctx.counters.delivered = ctx.counters.recordsIn;
    ctx.counters.transfers.push({ path: options.path, ...report });
    return undefined;
  });
}

async function sendChunks(input, options, ctx, what) {
  // An error upstream makes the body stream error, and `send` then cuts the upload (never ends
  // it: PROTOCOL.md §11.2 step 5), so the consumer gets TRUNCATED. `cut` follows both signals.
  const cut = new AbortController();
  const follow = [ctx.signal, options.signal].filter(Boolean).map((s) => {
    const onAbort = () => cut.abort(s.reason);
    if (s.aborted) onAbort(); else s.addEventListener('abort', onAbort, { once: true });
    return () => s.removeEventListener('abort', onAbort);
  });
  let upstream = null;
  async function* watched() {
    try { yield* input; } catch (e) { upstream = e; throw e; }
  }
  let report;
  try {
    // Pipes don't resume unless asked (`resume: N`): a run with retries and dead letters
    // should fail at once when its peer dies, not wait for it to come back (PROTOCOL.md §12.3).
    report = await send(byteStream(watched(), what), { resume: false, ...options, signal: cut.signal });
  } catch (e) {
    throw upstream || (ctx.signal.aborted && ctx.signal.reason) || e;
  } finally {
    for (const off of follow) off();
  }
  if (upstream) throw upstream; // belt and braces: an upstream error never makes the run succeed
  return report;
}

/** Everything, in order, as `report.result` (for tests and small runs). */
export function collect() {
  return defineSink('collect', async (input, ctx) => {
    const all = [];
    for await (const chunk of input) {
      if (ctx.signal.aborted) break;
      for (const x of chunk) all.push(x);
      ctx.counters.delivered += chunk.length;
    }
    return all;
  });
}

const DEFAULT_RETRY = Object.freeze({ attempts: 3, backoff: 'exponential', baseDelayMs: 100, maxDelayMs: 30_000, jitter: true });

function retryPolicy(r) {
  const p = { ...DEFAULT_RETRY, ...(r || {}) };
  if (!(Number.isInteger(p.attempts) && p.attempts >= 1)) throw new HttpipeError(`sink: retry.attempts must be an integer >= 1 (got ${p.attempts})`, 'UNSUPPORTED');
  if (typeof p.backoff !== 'function' && p.backoff !== 'exponential' && p.backoff !== 'fixed') {
    throw new HttpipeError(`sink: retry.backoff must be 'exponential', 'fixed' or (attempt) => ms (got ${p.backoff})`, 'UNSUPPORTED');
  }
  const retryOn = p.retryOn || ((e) => !(e && e.retryable === false));
  const delay = (attempt, random) => {
    let d = typeof p.backoff === 'function' ? p.backoff(attempt)
      : p.backoff === 'fixed' ? p.baseDelayMs : p.baseDelayMs * 2 ** (attempt - 1);
    d = Math.min(d, p.maxDelayMs);
    if (p.jitter === true) d = d / 2 + (random() * d) / 2;
    else if (typeof p.jitter === 'number' && p.jitter > 0) d *= 1 - Math.min(p.jitter, 1) * random();
    return Math.max(0, d);
  };
  return { attempts: p.attempts, retryOn, delay };
}

/** The dead letter as a function `(item, info) => ...`: a function as is, a sink via a side run. */
function deadLetterFn(deadLetter, ctx) {
  if (deadLetter === undefined || deadLetter === null) return { put: null, close: async () => {} };
  if (typeof deadLetter === 'function') return { put: deadLetter, close: async () => {} };
  if (!isSink(deadLetter)) throw new HttpipeError('sink: deadLetter must be a function or a sink such as toPipe({ relay, path })', 'UNSUPPORTED');
  // Dead letters as NDJSON entries { key, attempts, error, code, record } into the sink.
  const ch = new Channel(64);
  const source = (async function* entries() {
    for (;;) { const x = await ch.take(); if (x === Channel.END) return; yield [x]; }
  })();
  const encode = ndjson.encode();
  const counters = { name: deadLetter.name, recordsIn: 0, bytesIn: 0, delivered: 0, transfers: [] };
  const done = deadLetter.run(encode.run(source, { ...ctx, counters: {} }), { ...ctx, counters, label: `dead letter (${deadLetter.name})` });
  done.catch(() => {});
  return {
    put: (item, info) => orAbort(ch.put({ key: info.key, attempts: info.attempts, code: info.error && info.error.code, error: info.error && info.error.message ? info.error.message : String(info.error), record: item }), ctx.signal),
    close: async () => { ch.close(); await done; },
    counters,
  };
}

/**
 * Delivers each record (or each batch, after batch()) with `fn(item, { key, attempt, signal })`.
 * `key` is the idempotency key: the item's position in the sink's input (or `key(item, seq)`),
 * the same on every attempt and on a re-run over the same input. Failures are retried per
 * `retry`; after the last attempt the item goes to `deadLetter` and the run goes on, or, with
 * no dead letter, the run fails with SINK_FAILED.
 */
export function sink(fn, { retry, deadLetter, concurrency = 1, key, random = Math.random } = {}) {
  if (typeof fn !== 'function') throw new HttpipeError('sink(fn): fn must be a function', 'UNSUPPORTED');
  if (!(Number.isInteger(concurrency) && concurrency > 0)) throw new HttpipeError(`sink: concurrency must be a positive integer (got ${concurrency})`, 'UNSUPPORTED');
  const policy = retryPolicy(retry);
  return defineSink('sink', async (input, ctx) => {
    const c = ctx.counters;
    const dl = deadLetterFn(deadLetter, ctx);
    // The first attempt is a plain call: a synchronous fn costs no promise or microtask
    // (undefined when delivered); a promise, or a throw, continues in `recover`.
    const first = (item, k) => {
      c.attempts++;
      let r;
      try { r = fn(item, { key: k, attempt: 1, signal: ctx.signal }); } catch (e) { return recover(item, k, 1, e); }
      if (r != null && typeof r.then === 'function') return r.then(() => { c.delivered++; }, (e) => recover(item, k, 1, e));
      c.delivered++;
      return undefined;
    };
    // Attempt `attempt` failed with `e`: try again, hand the item to the dead letter, or give up.
    const recover = async (item, k, attempt, e) => {
      for (;;) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        let again = false;
        if (attempt < policy.attempts) {
          try { again = policy.retryOn(e, attempt); } catch (re) { throw new HttpipeError(`sink: retry.retryOn threw: ${re.message}`, 'STEP_FAILED', { cause: re }); }
        }
        if (!again) {
          if (dl.put) {
            await dl.put(item, { key: k, error: e, attempts: attempt });
            c.deadLettered++;
            return;
          }
          const why = e && e.message ? e.message : String(e);
          throw new HttpipeError(`sink: item ${k} failed after ${attempt} attempt${attempt === 1 ? '' : 's'} and there is no deadLetter: ${why}`, 'SINK_FAILED', { cause: e });
        }
        c.retries++;
        await sleep(policy.delay(attempt, random), ctx.clock, ctx.signal);
        attempt++;
        c.attempts++;
        try {
          const r = fn(item, { key: k, attempt, signal: ctx.signal });
          if (r != null && typeof r.then === 'function') await r;
          c.delivered++;
          return;
        } catch (err) {
          e = err;
        }
      }
    };
    let seq = 0;
    const keyOf = (item) => { const s = seq++; return key ? String(key(item, s)) : String(s); };
    try {
      if (concurrency === 1) {
        for await (const chunk of input) {
          if (ctx.signal.aborted) throw ctx.signal.reason;
          for (const item of chunk) {
            const p = first(item, keyOf(item));
            if (p !== undefined) { await p; if (ctx.signal.aborted) throw ctx.signal.reason; }
          }
        }
      } else {
        const running = new Set();
        let failure = null;
        for await (const chunk of input) {
          for (const item of chunk) {
            if (failure) throw failure;
            while (running.size >= concurrency) { await Promise.race(running); if (failure) throw failure; }
            const p = Promise.resolve(first(item, keyOf(item))).catch((e) => { failure = failure || e; ctx.fail(e); });
            running.add(p);
            p.finally(() => running.delete(p));
          }
        }
        await Promise.all(running);
        if (failure) throw failure;
      }
    } finally {
      await dl.close().catch((e) => { ctx.fail(e); });
    }
    if (dl.counters) c.transfers.push(...dl.counters.transfers.map((t) => ({ ...t, deadLetter: true })));
    return undefined;
  });
}

function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193); }
  return h >>> 0;
}

/**
 * Spreads records over the stream paths `paths` (one producer per path, each read by its own
 * worker): round-robin, or by `key(record)` (FNV-1a hash), so equal keys go to the same
 * worker in order. Each lane's records are encoded by `encode` (default ndjson.encode()) and
 * sent with the other options (`relay`, `token`, `passphrase`, ...). The run resolves when
 * every lane's transfer completed; one failing lane aborts the others and fails the run.
 */
export function partition({ paths, key, encode = ndjson.encode(), ...options } = {}) {
  if (!Array.isArray(paths) || paths.length === 0) throw new HttpipeError('partition({ paths: [...] }): at least one stream path is required', 'UNSUPPORTED');
  if (!options.relay) throw new HttpipeError('partition({ relay, paths }): relay is required', 'UNSUPPORTED');
  return defineSink('partition', async (input, ctx) => {
    const n = paths.length;
    const lanes = paths.map(() => new Channel(4));
    const laneCounts = paths.map(() => 0);
    const sends = paths.map((path, i) => {
      const records = (async function* laneRecords() {
        for (;;) { const x = await lanes[i].take(); if (x === Channel.END) return; yield x; }
      })();
      const laneCtx = { ...ctx, counters: {}, label: `partition lane ${path}` };
      return sendChunks(encode.run(records, laneCtx), { ...options, path }, ctx, `partition ${path}`)
        .then((report) => ({ path, records: laneCounts[i], ...report }));
    });
    const failed = Promise.race(sends.map((p) => p.then(() => new Promise(() => {}))));
    failed.catch(() => {});
    let rr = 0;
    try {
      for await (const chunk of input) {
        const split = paths.map(() => []);
        for (const x of chunk) {
          const lane = key ? fnv1a(String(key(x))) % n : rr++ % n;
          split[lane].push(x);
        }
        await orAbort(Promise.race([failed, Promise.all(split.map((s, i) => {
          if (!s.length) return undefined;
          laneCounts[i] += s.length;
          return lanes[i].put(s);
        }))]), ctx.signal);
      }
      for (const l of lanes) l.close();
      const reports = await Promise.all(sends);
      ctx.counters.delivered = ctx.counters.recordsIn;
      ctx.counters.transfers.push(...reports);
    } catch (e) {
      const err = e;
      for (const l of lanes) l.fail(err);
      await Promise.allSettled(sends);
      throw err;
    }
    return undefined;
  });
}
