// The pipeline runner (docs/js-api.md "Pipelines"): a source, steps and a sink, joined by
// async iterables of *chunks* (arrays of records), so the per-record cost is a loop iteration
// and the per-await cost is paid once per chunk. Steps and sinks are factories: every run
// creates fresh state, so one pipeline description can run again (serve(), a retry).
import { HttpipeError } from '../api.js';
import { openSource, SOURCE } from './sources.js';

export const STEP = Symbol.for('httpipe.pipeline.step');
export const SINK = Symbol.for('httpipe.pipeline.sink');

/** The clock steps use for time (batch, retries); tests pass a fake one. */
export const systemClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (t) => clearTimeout(t),
};

/**
 * A step factory. `run(input, ctx)` takes an async iterable of record chunks (arrays) and
 * returns one; it is called once per pipeline run.
 */
export function defineStep(name, run) {
  return Object.freeze({ [STEP]: true, name, run });
}

/** A sink factory: `run(input, ctx)` consumes the chunks and resolves with the sink's result. */
export function defineSink(name, run) {
  return Object.freeze({ [SINK]: true, name, run });
}

/** A step from a synchronous transformer factory: `{ push(items) => out[], end() => out[] }`. */
export function transformStep(name, makeTransformer) {
  return defineStep(name, async function* transform(input) {
    const t = makeTransformer();
    for await (const chunk of input) {
      const out = t.push(chunk);
      if (out.length) yield out;
    }
    const last = t.end();
    if (last.length) yield last;
  });
}

export function isStep(x) { return x != null && x[STEP] === true; }
export function isSink(x) { return x != null && x[SINK] === true; }

/** Bytes of a chunk when its records are byte chunks; 0 for other records. */
export function chunkBytes(chunk) {
  if (chunk.length === 0 || !(chunk[0] instanceof Uint8Array)) return 0;
  let n = 0;
  for (let i = 0; i < chunk.length; i++) { const c = chunk[i]; if (c instanceof Uint8Array) n += c.byteLength; }
  return n;
}

function newCounters(name) {
  return { name, recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0 };
}

// Whether a stage's output records are byte chunks, kept beside the counters (not in the
// report): set by its first non-empty chunk.
const BYTES = Symbol('byte records');
const markBytes = (c, chunk) => { if (c[BYTES] === undefined && chunk.length) c[BYTES] = chunk[0] instanceof Uint8Array; };

/**
 * `records.in` of a report: the source's records; for a byte source (fromPipe, a Blob, a
 * stream), the records its first decoding step made of the bytes (lines, NDJSON values, CSV
 * rows: the first step whose output is not bytes), else its byte chunks.
 */
function recordsIn(source, steps) {
  if (source[BYTES] !== true) return source.recordsOut;
  const decoder = steps.find((c) => c[BYTES] !== true);
  return decoder ? decoder.recordsOut : source.recordsOut;
}

async function* counted(input, c, dir, label) {
  if (dir === 'in') {
    for await (const chunk of input) { c.recordsIn += chunk.length; c.bytesIn += chunkBytes(chunk); yield chunk; }
  } else {
    // What a step (defineStep) throws of its own is STEP_FAILED naming it, like map()'s.
    try {
      for await (const chunk of input) { markBytes(c, chunk); c.recordsOut += chunk.length; c.bytesOut += chunkBytes(chunk); yield chunk; }
    } catch (e) { throw stepError(label, e); }
  }
}

/** The error a user callback threw inside step `label`, as STEP_FAILED (pipe errors pass). */
export function stepError(label, e) {
  if (e instanceof HttpipeError) return e;
  const msg = e && e.message ? e.message : String(e);
  return new HttpipeError(`${label}: ${msg}`, 'STEP_FAILED', { cause: e });
}

export function abortError(reason) {
  if (reason instanceof HttpipeError) return reason;
  const why = reason === undefined ? 'aborted' : `aborted: ${reason && reason.message ? reason.message : String(reason)}`;
  return new HttpipeError(`pipeline ${why}`, 'ABORTED', { cause: reason });
}

/** Rejects when `signal` aborts; resolves with `p` otherwise. */
export function orAbort(p, signal) {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(abortError(signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then((v) => { signal.removeEventListener('abort', onAbort); resolve(v); },
      (e) => { signal.removeEventListener('abort', onAbort); reject(e); });
  });
}

/** A delay on `clock` that ends early (rejecting) when `signal` aborts. */
export function sleep(ms, clock, signal) {
  return orAbort(new Promise((r) => { clock.setTimeout(r, ms); }), signal);
}

function isOptions(x) {
  return x != null && typeof x === 'object' && !isStep(x) && !isSink(x) && x[SOURCE] !== true
    && Object.getPrototypeOf(x) === Object.prototype;
}

/**
 * Starts a run: `pipeline(source, ...steps, sink, options?)`. Returns the run handle
 * `{ done, abort(reason), stats(), signal }`.
 */
export function pipeline(source, ...rest) {
  const options = rest.length && isOptions(rest[rest.length - 1]) ? rest.pop() : {};
  const sink = rest.pop();
  if (!isSink(sink)) {
    throw new HttpipeError('pipeline(source, ...steps, sink): the last argument must be a sink (toPipe(), sink(fn), collect(), partition())', 'UNSUPPORTED');
  }
  rest.forEach((s, i) => {
    if (!isStep(s)) {
      throw new HttpipeError(`pipeline: argument ${i + 2} is not a step (map(), filter(), batch(), ndjson.decode(), ...)`, 'UNSUPPORTED');
    }
  });
  return startRun(source, rest, sink, options);
}

function startRun(source, steps, sink, options) {
  const clock = options.clock || systemClock;
  const ac = new AbortController();
  const started = clock.now();
  let failure = null;
  let finished = null;
  const fail = (e) => {
    if (failure) return;
    failure = e;
    if (!ac.signal.aborted) ac.abort(e);
  };
  const outer = options.signal;
  const onOuter = () => fail(abortError(outer.reason));
  if (outer) {
    if (outer.aborted) onOuter(); else outer.addEventListener('abort', onOuter, { once: true });
  }
  const sourceCounters = { name: 'source', recordsOut: 0, bytesOut: 0 };
  const stepCounters = steps.map((s) => newCounters(s.name));
  const sinkCounters = { name: sink.name, recordsIn: 0, bytesIn: 0, delivered: 0, attempts: 0, retries: 0, deadLettered: 0, dropped: 0, transfers: [] };
  const base = { signal: ac.signal, clock, fail };

  const snapshot = (state) => {
    const durationMs = (finished ?? clock.now()) - started;
    return {
      state,
      durationMs,
      records: { in: recordsIn(sourceCounters, stepCounters), out: sinkCounters.delivered },
      bytes: { in: sourceCounters.bytesOut, out: sinkCounters.bytesIn },
      source: { ...sourceCounters },
      steps: stepCounters.map((c) => ({ ...c })),
      sink: { ...sinkCounters, transfers: sinkCounters.transfers.slice() },
      retries: sinkCounters.retries,
      deadLettered: sinkCounters.deadLettered,
    };
  };

  const done = (async () => {
    let result;
    try {
      let it = openSource(source, base);
      it = countSource(it, sourceCounters);
      steps.forEach((step, i) => {
        const c = stepCounters[i];
        const ctx = { ...base, counters: c, label: `step ${i + 1} (${step.name})` };
        it = counted(step.run(counted(it, c, 'in'), ctx), c, 'out', ctx.label);
      });
      const sctx = { ...base, counters: sinkCounters, label: `sink (${sink.name})` };
      result = await orAbort(sink.run(countSink(it, sinkCounters), sctx), ac.signal);
    } catch (e) {
      // Errors of the source and the steps arrive as HttpipeErrors; another is the sink's own.
      fail(e instanceof HttpipeError ? e
        : new HttpipeError(`sink (${sink.name}): ${e && e.message ? e.message : String(e)}`, 'SINK_FAILED', { cause: e }));
    } finally {
      finished = clock.now();
      if (outer) outer.removeEventListener('abort', onOuter);
    }
    if (failure) {
      if (!ac.signal.aborted) ac.abort(failure);
      throw failure;
    }
    const report = snapshot('done');
    if (result !== undefined) report.result = result;
    return report;
  })();
  done.catch(() => {});
  return {
    done,
    signal: ac.signal,
    /** Stops every step and the sink; `done` rejects with ABORTED (cause: `reason`). */
    abort(reason) { fail(abortError(reason)); },
    /** Live counters, the same shape as the report. */
    stats() { return snapshot(finished === null ? 'running' : failure ? 'failed' : 'done'); },
  };
}

async function* countSource(input, c) {
  // A source (a user's generator) that throws fails the run with STEP_FAILED, "source: ...".
  try {
    for await (const chunk of input) { markBytes(c, chunk); c.recordsOut += chunk.length; c.bytesOut += chunkBytes(chunk); yield chunk; }
  } catch (e) { throw stepError('source', e); }
}

async function* countSink(input, c) {
  for await (const chunk of input) { c.recordsIn += chunk.length; c.bytesIn += chunkBytes(chunk); yield chunk; }
}
