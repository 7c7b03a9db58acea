// Pipeline sources: SDK byte sources, (async) iterables of records, replayable functions,
// and fromPipe(). Each becomes an async iterable of record chunks.
import { HttpipeError, receive } from '../api.js';
import { SOURCE } from './core.js';

const CHUNK = 1024; // records per chunk pulled from a synchronous iterable
const consumed = new WeakSet();

const isAsyncIterable = (x) => x != null && typeof x[Symbol.asyncIterator] === 'function';
const isIterable = (x) => x != null && typeof x !== 'string' && typeof x[Symbol.iterator] === 'function';
const isBytes = (x) => x instanceof Uint8Array || x instanceof ArrayBuffer || ArrayBuffer.isView(x);

/** A source from a factory: `open(ctx)` returns an async iterable of chunks, per run. */
export function defineSource(name, open) {
  return Object.freeze({ [SOURCE]: true, name, open });
}

/**
 * Records from the stream at `options.path` (the SDK's `receive` options): byte chunks
 * (Uint8Array records); decode them with ndjson.decode(), csv.decode(), lines(), ...
 * A producer that fails mid-stream ends the run with TRUNCATED.
 */
export function fromPipe(options) {
  if (!options || !options.relay || !options.path) {
    throw new HttpipeError('fromPipe({ relay, path, ... }): relay and path are required', 'UNSUPPORTED');
  }
  return defineSource('fromPipe', (ctx) => {
    const signal = options.signal ? AbortSignal.any([options.signal, ctx.signal]) : ctx.signal;
    return (async function* pull() {
      const got = await receive({ ...options, signal });
      yield* readStream(got.stream);
    })();
  });
}

async function* readStream(stream) {
  const reader = stream.getReader();
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) { finished = true; return; }
      yield [value];
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function bytesStream(x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
}

async function* fromBytes(b) {
  const STEP = 1 << 20;
  for (let at = 0; at < b.byteLength; at += STEP) yield [b.subarray(at, Math.min(at + STEP, b.byteLength))];
}

function* syncChunks(iterable) {
  const it = iterable[Symbol.iterator]();
  let ok = false;
  try {
    for (;;) {
      const chunk = [];
      let r;
      while (chunk.length < CHUNK && !(r = it.next()).done) chunk.push(r.value);
      if (chunk.length) yield chunk;
      if (r && r.done) { ok = true; return; }
    }
  } finally {
    if (!ok && typeof it.return === 'function') it.return();
  }
}

// Records from an async iterable, grouped into chunks: whatever arrives before the next
// macrotask goes in one chunk (so a fast generator moves in chunks and a slow one, e.g. a
// log tail, passes each record on at once).
async function* asyncChunks(iterable) {
  const it = iterable[Symbol.asyncIterator]();
  let ok = false;
  try {
    let next = it.next();
    for (;;) {
      const first = await next;
      if (first.done) { ok = true; return; }
      const chunk = [first.value];
      let tick = null;
      let ticked = false;
      for (;;) {
        next = it.next();
        if (chunk.length >= CHUNK) break;
        if (!tick) tick = new Promise((r) => setTimeout(() => { ticked = true; r(); }, 0));
        const r = await Promise.race([next, tick]);
        if (ticked || r === undefined) break;
        if (r.done) { yield chunk; ok = true; return; }
        chunk.push(r.value);
      }
      yield chunk;
    }
  } finally {
    if (!ok && typeof it.return === 'function') await it.return();
  }
}

function once(x, what) {
  if (consumed.has(x)) {
    throw new HttpipeError(`pipeline: this ${what} was consumed by an earlier run; pass a function that returns a fresh one (e.g. () => generate()) to run the pipeline again`, 'UNSUPPORTED');
  }
  consumed.add(x);
}

/** The run's record chunks from any accepted source (docs/js-api.md "Sources"). */
export function openSource(source, ctx, depth = 0) {
  if (source != null && source[SOURCE] === true) return source.open(ctx);
  if (typeof source === 'function' && depth === 0) return openSource(source(ctx), ctx, 1);
  if (typeof ReadableStream !== 'undefined' && source instanceof ReadableStream) { once(source, 'ReadableStream'); return readStream(source); }
  if (typeof Blob !== 'undefined' && source instanceof Blob) return readStream(source.stream());
  if (typeof source === 'string') return fromBytes(new TextEncoder().encode(source));
  if (isBytes(source)) return fromBytes(bytesStream(source));
  if (source != null && typeof source.then === 'function' && depth < 2) {
    return (async function* awaited() { yield* openSource(await source, ctx, depth + 1); })();
  }
  if (isAsyncIterable(source)) {
    if (source[Symbol.asyncIterator]() === source) once(source, 'async iterator');
    return asyncChunks(source);
  }
  if (isIterable(source)) {
    if (source[Symbol.iterator]() === source) once(source, 'iterator');
    return syncChunks(source);
  }
  throw new HttpipeError('pipeline: the source must be an SDK Source (Blob, ReadableStream, bytes, string), an (async) iterable of records, a function returning one, or fromPipe()', 'UNSUPPORTED');
}
