// One side of a record pipeline in its own process (Node or Deno), for
// tests/js/pipeline-e2e.test.mjs:
//   node pipeline-child.mjs '<json args>'
//   deno run --allow-net --allow-read --allow-env pipeline-child.mjs '<json args>'
// args.role:
//   produce  records → map (throws on demand) → guard → ndjson.encode() → toPipe({ relay, path, passphrase })
//            { n (null: endless), shape: 'inventory' | 'id', pace (records per 1 ms pause),
//              failAt (throw on that seq), failIn: 'map' | 'guard' | 'source' (where),
//              commands (read stdin) }
//   serve    serve((peer) => pipeline(export, ndjson.encode(), toPipe({ ...peer, passphrase })))
//            { n records per round, each { round, seq } }
//   worker   fromPipe({ relay, path, passphrase }) → ndjson.decode() → batch() → sink(fn) that
//            marks ids in a bitmap of `n` bits (and, with `byKey`, checks per-key order);
//            with `progressEvery`, says {"event":"progress",count} every that many records
// Prints JSON lines: {"event":"started"}, {"event":"done",report}, {"event":"error",code,message},
// {"event":"torn-down", source, step} (whether the source generator's and a step's `finally`
// ran), ... Commands on stdin (with `commands`), one JSON line each: {"cmd":"abort"} (run.abort
// / serve's abort), {"cmd":"fail"} (the guard step throws on its next record).
const sdk = await import(new URL('../../../pkg/index.js', import.meta.url).href);
const { pipeline, ndjson, toPipe, fromPipe, map, batch, sink, serve, defineStep } = sdk;
const { inventory } = await import(new URL('./pipeline-records.mjs', import.meta.url).href);

const argv = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const args = JSON.parse(argv[0]);
const say = (o) => { console.log(JSON.stringify(o)); };
const exit = (code = 0) => (globalThis.Deno ? globalThis.Deno.exit(code) : process.exit(code));
const { relay, path, passphrase } = args;

/** A promise with its resolve function. */
function flag() { let set; const p = new Promise((r) => { set = r; }); p.set = set; p.seen = false; p.then(() => { p.seen = true; }); return p; }

function onCommands(handler) {
  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) handler(JSON.parse(line));
    }
  });
}

const errorEvent = (e) => ({ event: 'error', code: e && e.code, message: e && e.message, name: e && e.name });

/** Waits (bounded) for the teardown flags, reports them and exits. */
async function reportTeardown(flags) {
  await Promise.race([Promise.all(Object.values(flags)), new Promise((r) => setTimeout(r, 5000))]);
  const out = { event: 'torn-down' };
  for (const [k, f] of Object.entries(flags)) out[k] = f.seen;
  say(out);
}

if (args.role === 'produce') {
  const sourceDone = flag();
  const stepDone = flag();
  let produced = 0;
  let failNow = false;
  const make = args.shape === 'id' ? (seq) => ({ id: seq }) : inventory;
  // Paced (an async generator that pauses 1 ms every `pace` records) or as fast as the pipe
  // takes them (a synchronous generator); `finally` shows it got its return().
  // With `failIn: 'source'` the generator throws the failure itself.
  const sourceFails = (seq) => args.failIn === 'source' && (seq === args.failAt || failNow);
  async function* paced() {
    try {
      for (let seq = 0; args.n == null || seq < args.n; seq++) {
        produced = seq + 1;
        if (sourceFails(seq)) throw new Error(`refusing record ${seq}`);
        yield make(seq);
        if (seq % args.pace === args.pace - 1) await new Promise((r) => setTimeout(r, 1));
      }
    } finally { sourceDone.set(); }
  }
  function* fast() {
    try {
      for (let seq = 0; args.n == null || seq < args.n; seq++) {
        produced = seq + 1;
        if (sourceFails(seq)) throw new Error(`refusing record ${seq}`);
        yield make(seq);
      }
    } finally { sourceDone.set(); }
  }
  const records = args.pace ? paced : fast;
  // A step (map) that throws at `failAt` or after a "fail" command (`failIn: 'map'`, the
  // default), and a custom step whose `finally` shows it was torn down (it throws instead
  // with `failIn: 'guard'`).
  const fails = (where, r) => (args.failIn || 'map') === where && ((r.seq ?? r.id) === args.failAt || failNow);
  const failing = map((r) => {
    if (fails('map', r)) throw new Error(`refusing record ${r.seq ?? r.id}`);
    return r;
  });
  const guard = defineStep('guard', async function* guardRun(input) {
    try {
      for await (const chunk of input) {
        for (const r of chunk) if (fails('guard', r)) throw new Error(`refusing record ${r.seq ?? r.id}`);
        yield chunk;
      }
    } finally { stepDone.set(); }
  });
  const run = pipeline(() => records(), failing, guard, ndjson.encode(), toPipe({ relay, path, passphrase }));
  if (args.commands) {
    onCommands((c) => {
      if (c.cmd === 'abort') run.abort(new Error('stopped by the test'));
      if (c.cmd === 'fail') failNow = true;
    });
  }
  say({ event: 'started' });
  try {
    const report = await run.done;
    say({ event: 'done', produced, report });
  } catch (e) {
    say({ ...errorEvent(e), produced });
  }
  await reportTeardown({ source: sourceDone, step: stepDone });
  exit(0);
} else if (args.role === 'serve') {
  const s = serve((peer) => {
    const run = pipeline(function* exportRound() {
      for (let seq = 0; seq < args.n; seq++) yield { round: peer.round, seq };
    }, ndjson.encode(), toPipe({ ...peer, passphrase }));
    run.done.then((r) => say({ event: 'round', round: peer.round, records: r.records.in }),
      (e) => say({ ...errorEvent(e), event: 'round-error', round: peer.round }));
    return run;
  }, { relay, path, mode: 'await-reader' });
  onCommands((c) => { if (c.cmd === 'abort') s.abort(new Error('stopped by the test')); });
  say({ event: 'started' });
  try {
    const summary = await s.done;
    say({ event: 'served', rounds: summary.rounds, completed: summary.completed, failed: summary.failed, aborted: summary.aborted });
  } catch (e) {
    say(errorEvent(e));
  }
  exit(0);
} else if (args.role === 'worker') {
  const bits = new Uint8Array(Math.ceil(args.n / 8));
  let count = 0;
  let dup = 0;
  let outOfRange = 0;
  let outOfOrder = 0;
  const lastByKey = new Map();
  let nextProgress = args.progressEvery || Infinity;
  const run = pipeline(fromPipe({ relay, path, passphrase }), ndjson.decode(), batch({ maxItems: 1000 }), sink((items) => {
    if (count + items.length >= nextProgress) { say({ event: 'progress', count: count + items.length }); nextProgress += args.progressEvery; }
    for (const r of items) {
      const id = r.id;
      count++;
      if (!(Number.isInteger(id) && id >= 0 && id < args.n)) { outOfRange++; continue; }
      const m = 1 << (id & 7);
      if (bits[id >> 3] & m) dup++; else bits[id >> 3] |= m;
      if (args.byKey) {
        const last = lastByKey.get(r.k);
        if (last !== undefined && last >= id) outOfOrder++;
        lastByKey.set(r.k, id);
      }
    }
  }));
  say({ event: 'started' });
  try {
    const report = await run.done;
    say({
      event: 'done', count, dup, outOfRange, outOfOrder, records: report.records,
      keys: [...lastByKey.keys()], bitmap: (await import('node:buffer')).Buffer.from(bits).toString('base64'),
    });
  } catch (e) {
    say({ ...errorEvent(e), count });
  }
  exit(0);
} else {
  say({ event: 'error', code: 'BAD_ROLE', message: `unknown role ${args.role}` });
  exit(2);
}
