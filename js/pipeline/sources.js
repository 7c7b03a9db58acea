// Pipeline sources: SDK byte sources, (async) iterables of records, replayable functions,
// and fromPipe(). Each becomes an async iterable of record chunks.
import { HttpipeError, receive } from '../api.js';
import { chunksOf } from '../streams.js';

/** Marks a pipeline source (`defineSource`); `core.js` tells sources from steps and sinks by it. */
export const SOURCE = Symbol.for('httpipe.pipeline.source');

const CHUNK = 1024; // records per chunk pulled from an iterable, at most
const CHUNK_BYTES = 1 << 20; // ... and bytes, when the records are byte chunks
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
      // No resume unless asked (`resume: N`), as toPipe (PROTOCOL.md §12.3).
      const got = await receive({ resume: false, ...options, signal });
      yield* readStream(got.stream);
    })();
  });
}

async function* readStream(stream) {
  for await (const value of chunksOf(stream)) yield [value];
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

// Records from an async iterable, grouped into chunks without a timer or a race per record:
// a pump reads ahead (at most CHUNK records) while the run works on the previous chunk, and
// the run takes whatever has arrived. A fast generator moves in full chunks; a slow one
// (a log tail) passes each record on as soon as it comes.
async function* asyncChunks(iterable) {
  const it = iterable[Symbol.asyncIterator]();
  let buf = [];
  let bytes = 0;
  let ended = false;
  let error = null;
  let stopped = false;
  let wake = null;
  let resume = null;
  const notify = () => { if (wake) { const w = wake; wake = null; w(); } };
  const pump = (async () => {
    try {
      while (!stopped) {
        const r = await it.next();
        if (r.done) break;
        buf.push(r.value);
        if (r.value instanceof Uint8Array) bytes += r.value.byteLength;
        notify();
        if ((buf.length >= CHUNK || bytes >= CHUNK_BYTES) && !stopped) await new Promise((res) => { resume = res; });
      }
    } catch (e) {
      error = e;
    } finally {
      ended = true;
      notify();
    }
  })();
  try {
    for (;;) {
      if (buf.length === 0 && !ended) await new Promise((r) => { wake = r; });
      if (buf.length) {
        const chunk = buf;
        buf = [];
        bytes = 0;
        if (resume) { const r = resume; resume = null; r(); }
        yield chunk;
        continue;
      }
      if (error) throw error;
      if (ended) return;
    }
  } finally {
    stopped = true;
    if (resume) { const r = resume; resume = null; r(); }
    if (!ended && typeof it.return === 'function') {
      // The pump is inside it.next(); return() queues behind it on async generators.
      await Promise.race([it.return(), pump]).catch(() => {});
    }
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
