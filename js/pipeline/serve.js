// Run on arrival (docs/js-api.md "serve"): wait for a peer on the Connect API (PROTOCOL.md
// §5), run a fresh pipeline for it, and wait again, until aborted.
import { HttpipeError, connect } from '../api.js';

const MODES = ['await-reader', 'await-writer'];

/** Where the Connect answer says the data flows: `{ relay, path }` for the pipe options. */
export function dataTarget(dataUrl, relay, path) {
  let u;
  try { u = new URL(dataUrl); } catch { return { relay, path }; }
  const p = decodeURIComponent(u.pathname);
  const want = path.startsWith('/') ? path : `/${path}`;
  if (p.endsWith(want)) return { relay: u.origin + p.slice(0, p.length - want.length), path };
  return { relay: u.origin, path: p };
}

/**
 * `factory(peer)` returns a run (`pipeline(...)`) for each peer that arrives: the producer
 * side waits with `mode: 'await-reader'` (the hospital answering each pull), the consumer
 * side with `'await-writer'`. `peer` holds `{ relay, path, token, rendezvous: false, signal }`
 * ready to spread into `toPipe(...)` / `fromPipe(...)`, and `round` (1, 2, ...).
 * A round that ends is reported (`onRound(report, round)`; a failed one `onError(error,
 * round)` and `failures`) and serving goes on; a
 * refusal (UNAUTHORIZED, FORBIDDEN) ends it. `rounds` limits the number of peers served.
 */
export function serve(factory, options) {
  const { relay, path, mode, token, timeout, signal, rounds, onError, onRound } = options || {};
  if (typeof factory !== 'function') throw new HttpipeError('serve(factory, options): factory must be a function (peer) => pipeline(...)', 'UNSUPPORTED');
  if (!relay || !path) throw new HttpipeError('serve: relay and path are required', 'UNSUPPORTED');
  if (!MODES.includes(mode)) throw new HttpipeError(`serve: mode must be 'await-reader' (producer side) or 'await-writer' (consumer side), got ${mode}`, 'UNSUPPORTED');
  const ac = new AbortController();
  const onOuter = () => ac.abort(signal.reason);
  if (signal) { if (signal.aborted) onOuter(); else signal.addEventListener('abort', onOuter, { once: true }); }
  const started = Date.now();
  let current = null;
  let round = 0;
  const reports = [];
  const failures = [];
  const summary = () => ({ rounds: round, completed: reports.length, failed: failures.length, reports: reports.slice(), failures: failures.slice(), durationMs: Date.now() - started, aborted: ac.signal.aborted, current: current ? current.stats() : undefined });
  const done = (async () => {
    try {
      while (!ac.signal.aborted && (rounds === undefined || round < rounds)) {
        let dataUrl;
        try {
          dataUrl = await connect({ relay, path, mode, token, timeout, signal: ac.signal });
        } catch (e) {
          if (ac.signal.aborted) break;
          if (e && e.code === 'CONNECT_TIMEOUT') continue;
          throw e;
        }
        round++;
        const peer = { ...dataTarget(dataUrl, relay, path), token, rendezvous: false, signal: ac.signal, round, dataUrl };
        const run = factory(peer);
        if (!run || typeof run.then === 'function' || !run.done) {
          throw new HttpipeError('serve: factory(peer) must return a run: pipeline(...)', 'UNSUPPORTED');
        }
        current = run;
        try {
          const report = await run.done;
          reports.push(report);
          if (onRound) onRound(report, round);
        } catch (e) {
          if (ac.signal.aborted) break;
          failures.push({ round, error: e });
          if (onError) onError(e, round);
        } finally {
          current = null;
        }
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onOuter);
    }
    return summary();
  })();
  done.catch(() => {});
  return {
    done,
    /** Stops waiting and tears down the current round; `done` resolves with the summary. */
    abort(reason) { ac.abort(reason); if (current) current.abort(reason); },
    stats: summary,
  };
}
