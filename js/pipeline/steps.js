// Record steps (docs/js-api.md "Steps"). User callbacks run here, in JS; a callback that
// throws fails the run with STEP_FAILED naming the step (its error is the `cause`).
import { HttpipeError, encryptStream, decryptStream } from '../api.js';
import { defineStep, stepError, orAbort } from './core.js';
import { Channel } from './channel.js';

const isThenable = (x) => x != null && typeof x.then === 'function';

function positive(n, what, dflt) {
  if (n === undefined) return dflt;
  if (!(Number.isInteger(n) && n > 0)) throw new HttpipeError(`${what} must be a positive integer (got ${n})`, 'UNSUPPORTED');
  return n;
}

function callable(fn, what) {
  if (typeof fn !== 'function') throw new HttpipeError(`${what}(fn): fn must be a function`, 'UNSUPPORTED');
}

/**
 * `fn(record, index)` for every record; async functions run up to `concurrency` at once,
 * results in input order unless `ordered: false`.
 */
export function map(fn, { concurrency, ordered = true } = {}) {
  callable(fn, 'map');
  const n = positive(concurrency, 'map: concurrency', 1);
  return defineStep('map', n === 1
    ? (input, ctx) => mapSerial(input, fn, ctx)
    : (input, ctx) => mapConcurrent(input, fn, n, ordered, ctx));
}

async function* mapSerial(input, fn, ctx) {
  let i = 0;
  for await (const chunk of input) {
    const out = new Array(chunk.length);
    for (let k = 0; k < chunk.length; k++, i++) {
      let r;
      try {
        r = fn(chunk[k], i);
        if (isThenable(r)) r = await r;
      } catch (e) { throw stepError(`${ctx.label} on record ${i}`, e); }
      out[k] = r;
    }
    yield out;
  }
}

async function* mapConcurrent(input, fn, n, ordered, ctx) {
  const inflight = []; // ordered: promises in input order
  const settled = []; // unordered: results in completion order
  let running = 0;
  let failure = null;
  let wake = null;
  let i = 0;
  const start = (item) => {
    const at = i++;
    let p;
    try { p = Promise.resolve(fn(item, at)); } catch (e) { p = Promise.reject(e); }
    p = p.catch((e) => { throw stepError(`${ctx.label} on record ${at}`, e); });
    if (ordered) { p.catch(() => {}); inflight.push(p); return; }
    running++;
    p.then((v) => { settled.push(v); }, (e) => { failure = failure || e; })
      .finally(() => { running--; if (wake) { const w = wake; wake = null; w(); } });
  };
  const takeOne = async () => {
    if (ordered) return inflight.shift();
    while (settled.length === 0 && !failure) await new Promise((r) => { wake = r; });
    if (failure) throw failure;
    return settled.shift();
  };
  const busy = () => (ordered ? inflight.length : running + settled.length);
  let out = [];
  for await (const chunk of input) {
    for (const item of chunk) {
      while (busy() >= n) out.push(await takeOne());
      start(item);
    }
    if (!ordered) { if (failure) throw failure; while (settled.length) out.push(settled.shift()); }
    if (out.length) { yield out; out = []; }
  }
  while (busy() > 0) out.push(await takeOne());
  if (failure) throw failure;
  if (out.length) yield out;
}

/** Keeps the records for which `fn(record, index)` is (or resolves to) truthy. */
export function filter(fn) {
  callable(fn, 'filter');
  return defineStep('filter', async function* run(input, ctx) {
    let i = 0;
    for await (const chunk of input) {
      const out = [];
      for (let k = 0; k < chunk.length; k++, i++) {
        let keep;
        try { keep = fn(chunk[k], i); if (isThenable(keep)) keep = await keep; } catch (e) { throw stepError(`${ctx.label} on record ${i}`, e); }
        if (keep) out.push(chunk[k]);
      }
      if (out.length) yield out;
    }
  });
}

/** `fn(record, index)` returns an array or (async) iterable of records (or a promise of one). */
export function flatMap(fn) {
  callable(fn, 'flatMap');
  return defineStep('flatMap', async function* run(input, ctx) {
    let i = 0;
    for await (const chunk of input) {
      let out = [];
      for (let k = 0; k < chunk.length; k++, i++) {
        try {
          let r = fn(chunk[k], i);
          if (isThenable(r)) r = await r;
          if (r == null) continue;
          if (Array.isArray(r)) { for (const x of r) out.push(x); } else if (typeof r[Symbol.asyncIterator] === 'function') {
            for await (const x of r) { out.push(x); if (out.length >= 1024) { yield out; out = []; } }
          } else if (typeof r[Symbol.iterator] === 'function' && typeof r !== 'string') { for (const x of r) out.push(x); } else {
            throw new TypeError('flatMap: fn must return an array or an (async) iterable');
          }
        } catch (e) { throw stepError(`${ctx.label} on record ${i}`, e); }
        if (out.length >= 1024) { yield out; out = []; }
      }
      if (out.length) yield out;
    }
  });
}

/**
 * A side branch: `fn(record)` sees every record (in order, one at a time) while the main
 * line goes on. At most `buffer` records wait for it; when full, `policy: 'block'` (default)
 * holds the main line, `'drop'` skips the side branch for that record (counted as `dropped`).
 * The run ends after the side branch has seen everything it was given; its error fails the run.
 */
export function tap(fn, { policy = 'block', buffer } = {}) {
  callable(fn, 'tap');
  if (policy !== 'block' && policy !== 'drop') throw new HttpipeError(`tap: policy must be 'block' or 'drop' (got ${policy})`, 'UNSUPPORTED');
  const cap = positive(buffer, 'tap: buffer', 1024);
  return defineStep('tap', async function* run(input, ctx) {
    const ch = new Channel(cap);
    ctx.counters.dropped = 0;
    let at = 0;
    const side = (async () => {
      for (;;) {
        const item = await ch.take();
        if (item === Channel.END) return;
        try { const r = fn(item, at++); if (isThenable(r)) await r; } catch (e) { throw stepError(`${ctx.label} on record ${at - 1}`, e); }
      }
    })();
    let sideError = null;
    side.catch((e) => { sideError = e; ch.fail(e); ctx.fail(e); });
    try {
      for await (const chunk of input) {
        for (const item of chunk) {
          if (sideError) throw sideError;
          if (policy === 'drop') { if (!ch.offer(item)) ctx.counters.dropped++; } else await orAbort(ch.put(item), ctx.signal);
        }
        yield chunk;
      }
      ch.close();
      await side;
    } finally {
      ch.close();
    }
  });
}

function defaultSize(x) {
  if (x instanceof Uint8Array) return x.byteLength;
  if (typeof x === 'string') return x.length;
  return JSON.stringify(x).length;
}

/**
 * Groups records into arrays: a batch is passed on when it has `maxItems` records, when its
 * size reaches `maxBytes` (`size(record)`, default: byte length / string length / JSON
 * length), `maxWaitMs` after its first record, and at the end of the input.
 */
export function batch({ maxItems, maxBytes, maxWaitMs, size = defaultSize } = {}) {
  const items = positive(maxItems, 'batch: maxItems', maxBytes === undefined ? 1000 : Infinity);
  if (maxBytes !== undefined) positive(maxBytes, 'batch: maxBytes');
  if (maxWaitMs !== undefined && !(maxWaitMs >= 0)) throw new HttpipeError(`batch: maxWaitMs must be >= 0 (got ${maxWaitMs})`, 'UNSUPPORTED');
  return defineStep('batch', async function* run(input, ctx) {
    const clock = ctx.clock;
    const it = input[Symbol.asyncIterator]();
    let cur = [];
    let bytes = 0;
    let out = [];
    let deadline = null; // promise that resolves when the current batch's maxWaitMs is up
    let timer = null;
    const close = () => {
      if (cur.length) { out.push(cur); cur = []; bytes = 0; }
      if (timer !== null) { clock.clearTimeout(timer); timer = null; }
      deadline = null;
    };
    const TIMEOUT = Symbol('timeout');
    let next = null;
    let ok = false;
    try {
      for (;;) {
        if (!next) next = it.next();
        const r = deadline ? await Promise.race([next, deadline]) : await next;
        if (r === TIMEOUT) { close(); yield out; out = []; continue; }
        next = null;
        if (r.done) break;
        for (const x of r.value) {
          cur.push(x);
          if (maxBytes !== undefined) bytes += size(x);
          if (cur.length === 1 && maxWaitMs !== undefined && deadline === null) {
            deadline = new Promise((res) => { timer = clock.setTimeout(() => res(TIMEOUT), maxWaitMs); });
          }
          if (cur.length >= items || (maxBytes !== undefined && bytes >= maxBytes)) close();
        }
        if (out.length) { yield out; out = []; }
      }
      close();
      if (out.length) yield out;
      ok = true;
    } finally {
      if (timer !== null) clock.clearTimeout(timer);
      if (!ok && typeof it.return === 'function') await it.return();
    }
  });
}

/** An identity step that names a point of the line: its counters appear in stats() / the report. */
export function meter(name = 'meter') {
  return defineStep(name, async function* run(input) { yield* input; });
}

// Runs byte chunks through a TransformStream (gzip, encryption), keeping backpressure.
function through(name, make) {
  return defineStep(name, async function* run(input, ctx) {
    const ts = make();
    const writer = ts.writable.getWriter();
    const reader = ts.readable.getReader();
    let pumpError = null;
    const pump = (async () => {
      try {
        for await (const chunk of input) {
          for (const c of chunk) {
            if (!(c instanceof Uint8Array)) throw new HttpipeError(`${ctx.label}: records must be Uint8Array byte chunks (encode them first, e.g. ndjson.encode())`, 'UNSUPPORTED');
            await writer.write(c);
          }
        }
        await writer.close();
      } catch (e) {
        pumpError = e;
        await writer.abort(e).catch(() => {});
      }
    })();
    let ok = false;
    try {
      for (;;) {
        let r;
        try { r = await reader.read(); } catch (e) { throw pumpError || e; }
        if (r.done) break;
        yield [r.value];
      }
      await pump;
      if (pumpError) throw pumpError;
      ok = true;
    } finally {
      if (!ok) { await reader.cancel().catch(() => {}); }
    }
  });
}

/** gzip (the runtime's CompressionStream). */
export function gzip() {
  return through('gzip', () => new CompressionStream('gzip'));
}

/** gunzip (the runtime's DecompressionStream); a corrupt input fails the run with INVALID_RECORD. */
export function gunzip() {
  return defineStep('gunzip', (input, ctx) => wrapErrors(through('gunzip', () => new DecompressionStream('gzip')).run(input, ctx), ctx));
}

async function* wrapErrors(it, ctx) {
  try { yield* it; } catch (e) {
    if (e instanceof HttpipeError) throw e;
    throw new HttpipeError(`${ctx.label}: ${e && e.message ? e.message : e}`, 'INVALID_RECORD', { cause: e });
  }
}

/** age-rt (default) or age encryption of byte chunks (`encryptStream` options). */
export function encrypt(options) {
  return through('encrypt', () => encryptStream(options));
}

/** Decryption of age / age-rt byte chunks (`decryptStream` options): WRONG_KEY, DECRYPT_FAILED, TRUNCATED. */
export function decrypt(options) {
  return through('decrypt', () => decryptStream(options));
}
