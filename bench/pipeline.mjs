#!/usr/bin/env node
// Record pipeline benchmark (issue 9): ~100-byte JSON records, producer process → transport →
// consumer process with a counting sink (count + sum of `seq` verified), timed from the
// producer's start to the consumer's last record. Variants, each producer and consumer in its
// own Node process:
//   redis-brpop          redis-server (fresh, started here) list; LPUSH pipelined 1000 per
//                        round trip (node-redis multi().execAsPipeline()); BRPOP one at a time
//                        (min(RECORDS, BRPOP_RECORDS = 20 000) records: one round trip each)
//   redis-lpop-1000      same producer; LPOP key 1000 (BRPOP 1 s when the list is empty)
//   redis-variadic-lpop-1000   (opt-in) one LPUSH key v1 … v1000 per round trip; LPOP 1000
//   relay-handwritten    the ceiling: our relay, SDK send()/receive() with a hand-written
//                        NDJSON loop (batched stringify, one TextEncoder call per batch,
//                        newline splitting, JSON.parse), no pipeline API
//   relay-handwritten-age-rt   the same, age-rt encrypted (X25519 recipient)
//   relay-newlines       (opt-in diagnostic) the transport alone: hand-written producer, a
//                        consumer counting newline bytes (no decoding, no JSON.parse)
//   pipeline-plain       pipeline(generator, ndjson.encode(), toPipe()) →
//                        pipeline(fromPipe(), ndjson.decode(), sink())
//   pipeline-age-rt      the same, age-rt encrypted (X25519 recipient; a passphrase would add
//                        scrypt at log2 N = 18, 1.2-2 s per side on the dev machine, to every run)
// Rounds alternate the variants (the machine is shared and noisy); medians of RUNS. Next to
// records/s the table gives CPU µs per record (user + system) of the producer and consumer
// processes (process.cpuUsage) and of the relay / redis-server (/proc/PID/stat): less noisy
// than wall time on a shared machine, and it says which side is the bottleneck. The round lines
// on stderr add each child's main-thread GC pause time per record.
//
//   node bench/pipeline.mjs                    # RECORDS=1000000, RUNS=3
//   node bench/pipeline.mjs --quick            # smoke test (RECORDS=20000, RUNS=1; ~20 s;
//                                              # start-up and JIT warm-up dominate: not a figure)
//   BENCH_ONLY=pipeline-plain,relay-handwritten RECORDS=200000 node bench/pipeline.mjs
//   CPU_PROF=consumer BENCH_ONLY=pipeline-plain node bench/pipeline.mjs   # --cpu-prof on the
//       consumer (or producer, or both) child; prints the top self-time functions per profile
//   node bench/pipeline.mjs --top-self FILE.cpuprofile [N]               # the same, one file
//   node bench/pipeline.mjs --api-overhead     # the API against the hand-written loops in one
//       process, no network: CPU µs/record, consumer and producer side (API_REPS rounds, 9)
//
// Targets (issue 9): pipeline-plain ≥ 500 000 records/s; ≥ 3× the faster Redis variant;
// ≥ 0.9× relay-handwritten. Needs pkg/ (scripts/build-sdk.sh), the relay binary
// (cargo build --release; honours CARGO_TARGET_DIR / HTTPIPE_RELAY_BIN) and
// /usr/bin/redis-server.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const now = () => performance.timeOrigin + performance.now(); // comparable across processes

// ---------------------------------------------------------------- the records
const WAREHOUSES = ['AMS-1', 'AMS-2', 'FRA-1', 'LHR-3', 'MAD-1'];
/** Record `i`: about 100 bytes as JSON. */
function record(i) {
  return {
    sku: 'SKU-' + String(i % 1_000_000).padStart(6, '0'),
    warehouse: WAREHOUSES[i % 5],
    qty: i % 97,
    price: 12.5 + (i % 7),
    updated: '2026-11-30T10:00:00Z',
    seq: i,
  };
}

// ---------------------------------------------------------------- child processes

function waitGo() {
  return new Promise((resolve) => process.once('message', (m) => { if (m === 'go') resolve(); }));
}

const cpuMs = (u) => (u.user + u.system) / 1000;

async function child(variant, side, cfg) {
  const N = cfg.records;
  // main-thread GC pauses (scavenges, mark-compact) while the child works
  const { PerformanceObserver } = await import('node:perf_hooks');
  let gcMs = 0;
  new PerformanceObserver((list) => { for (const e of list.getEntries()) gcMs += e.duration; }).observe({ entryTypes: ['gc'] });
  const settleGc = () => new Promise((r) => setTimeout(r, 5)); // observer callbacks are async
  const impl = VARIANTS[variant];
  if (side === 'producer') {
    const ctx = await impl.producerSetup(cfg);
    process.send({ ev: 'ready' });
    await waitGo();
    const t0 = now();
    const cpu0 = process.cpuUsage();
    gcMs = 0;
    const extra = await impl.produce(ctx, cfg);
    const cpu = cpuMs(process.cpuUsage(cpu0));
    const tEnd = now();
    await settleGc();
    process.send({ ev: 'done', t0, tEnd, cpuMs: cpu, gcMs, extra });
  } else {
    let n = 0;
    let sum = 0;
    let tLast = 0;
    const onRecord = (rec) => {
      sum += rec.seq;
      if (++n === N) tLast = now();
    };
    const ctx = await impl.consumerSetup(cfg);
    process.send({ ev: 'ready' });
    const cpu0 = process.cpuUsage(); // idle waiting costs no CPU
    gcMs = 0;
    const extra = await impl.consume(ctx, cfg, onRecord, () => n, (x) => { n = x; tLast = now(); });
    const cpu = cpuMs(process.cpuUsage(cpu0));
    const tEnd = now();
    await settleGc();
    process.send({ ev: 'done', n, sum, tLast, tEnd, cpuMs: cpu, gcMs, extra });
  }
  // let the IPC message leave before exit
  await new Promise((r) => process.send({ ev: 'bye' }, r));
}

// ---------------------------------------------------------------- variants
const LPUSH_BATCH = 1000;

async function redisClient(cfg) {
  const { createClient } = await import('redis');
  const client = createClient({ url: cfg.redis });
  client.on('error', (e) => { console.error('redis client error', e); process.exit(1); });
  await client.connect();
  return client;
}

async function redisProduce(client, cfg) {
  const N = cfg.records;
  for (let i = 0; i < N;) {
    const end = Math.min(N, i + LPUSH_BATCH);
    const m = client.multi();
    for (; i < end; i++) m.lPush(cfg.key, JSON.stringify(record(i)));
    await m.execAsPipeline();
  }
  await client.quit();
}

const redisProducer = {
  producerSetup: redisClient,
  produce: redisProduce,
};

/** One variadic LPUSH of 1000 values per round trip (not the issue's baseline: opt-in). */
async function redisProduceVariadic(client, cfg) {
  const N = cfg.records;
  for (let i = 0; i < N;) {
    const end = Math.min(N, i + LPUSH_BATCH);
    const values = [];
    for (; i < end; i++) values.push(JSON.stringify(record(i)));
    await client.lPush(cfg.key, values);
  }
  await client.quit();
}

async function redisConsumeLpop(client, cfg, onRecord, count) {
  const N = cfg.records;
  let waits = 0;
  while (count() < N) {
    const batch = await client.lPopCount(cfg.key, 1000);
    if (batch && batch.length) {
      for (let k = 0; k < batch.length; k++) onRecord(JSON.parse(batch[k]));
    } else {
      waits++;
      const r = await client.brPop(cfg.key, 1);
      if (r) onRecord(JSON.parse(r.element));
    }
  }
  await client.quit();
  return { waits };
}

async function sdk() { return import(path.join(ROOT, 'pkg/index.js')); }

/** Hand-written NDJSON producer: BATCH records per chunk, one TextEncoder call per chunk. */
async function handwrittenProduce(h, cfg) {
  const N = cfg.records;
  const BATCH = 1000;
  const enc = new TextEncoder();
  let i = 0;
  const stream = new ReadableStream({
    pull(ctrl) {
      if (i >= N) { ctrl.close(); return; }
      const end = Math.min(N, i + BATCH);
      let s = '';
      for (; i < end; i++) s += JSON.stringify(record(i)) + '\n';
      ctrl.enqueue(enc.encode(s));
    },
  }, { highWaterMark: 0 });
  const report = await h.send(stream, { relay: cfg.relay, path: cfg.path, ...cfg.sendOpts });
  return { bytes: report.bytes };
}

/** Hand-written NDJSON consumer: decode each chunk (streaming), split on '\n', JSON.parse. */
async function handwrittenConsume(h, cfg, onRecord) {
  const { stream } = await h.receive({ relay: cfg.relay, path: cfg.path, ...cfg.receiveOpts });
  const dec = new TextDecoder();
  let carry = '';
  let bytes = 0;
  let chunks = 0;
  for await (const chunk of stream) {
    bytes += chunk.byteLength;
    chunks++;
    const text = carry + dec.decode(chunk, { stream: true });
    let start = 0;
    let nl;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      onRecord(JSON.parse(text.slice(start, nl)));
      start = nl + 1;
    }
    carry = text.slice(start);
  }
  if (carry + dec.decode() !== '') throw new Error('stream ended inside a line');
  return { bytes, chunks };
}

async function pipelineProduce(h, cfg) {
  if (typeof h.pipeline !== 'function') throw new Error('pkg/index.js has no pipeline export');
  const N = cfg.records;
  const run = h.pipeline(function* () { for (let i = 0; i < N; i++) yield record(i); },
    h.ndjson.encode(), h.toPipe({ relay: cfg.relay, path: cfg.path, ...cfg.sendOpts }));
  const report = await run.done;
  return { report: summariseReport(report) };
}

async function pipelineConsume(h, cfg, onRecord) {
  const run = h.pipeline(h.fromPipe({ relay: cfg.relay, path: cfg.path, ...cfg.receiveOpts }),
    h.ndjson.decode(), h.sink(onRecord));
  const report = await run.done;
  return { report: summariseReport(report) };
}

function summariseReport(r) {
  if (!r || typeof r !== 'object') return r;
  return { records: r.records, bytes: r.bytes, durationMs: r.durationMs,
    steps: r.steps, sink: r.sink && { delivered: r.sink.delivered, attempts: r.sink.attempts } };
}

const VARIANTS = {
  'redis-brpop': {
    kind: 'redis',
    // one round trip per record (~3-20k/s here): fewer records keep the bench to minutes; the
    // rate is per record and the list never runs dry (the producer is ~10x faster)
    records: (n) => Math.min(n, BRPOP_RECORDS),
    ...redisProducer,
    consumerSetup: redisClient,
    async consume(client, cfg, onRecord, count) {
      const N = cfg.records;
      while (count() < N) {
        const r = await client.brPop(cfg.key, 0);
        onRecord(JSON.parse(r.element));
      }
      await client.quit();
    },
  },
  'redis-lpop-1000': {
    kind: 'redis',
    ...redisProducer,
    consumerSetup: redisClient,
    consume: redisConsumeLpop,
  },
  // opt-in: a stronger Redis producer than the issue's (one LPUSH key v1 … v1000 per round
  // trip instead of 1000 pipelined LPUSHes; node-redis spends ~2.5x less CPU per record)
  'redis-variadic-lpop-1000': {
    kind: 'redis',
    optIn: true,
    producerSetup: redisClient,
    produce: redisProduceVariadic,
    consumerSetup: redisClient,
    consume: redisConsumeLpop,
  },
  'relay-handwritten': {
    kind: 'relay',
    producerSetup: sdk,
    produce: handwrittenProduce,
    consumerSetup: sdk,
    consume: handwrittenConsume,
  },
  // opt-in diagnostic (BENCH_ONLY=relay-newlines): the transport alone: the hand-written
  // producer, a consumer that counts newline bytes without decoding or parsing (count only)
  'relay-newlines': {
    kind: 'relay',
    optIn: true,
    noChecksum: true,
    producerSetup: sdk,
    produce: handwrittenProduce,
    consumerSetup: sdk,
    async consume(h, cfg, onRecord, count, setCount) {
      const { stream } = await h.receive({ relay: cfg.relay, path: cfg.path });
      let n = 0;
      for await (const chunk of stream) {
        let at = 0;
        while ((at = chunk.indexOf(10, at)) !== -1) { n++; at++; }
      }
      setCount(n);
    },
  },
  'pipeline-plain': {
    kind: 'relay',
    pipeline: true,
    producerSetup: sdk,
    produce: pipelineProduce,
    consumerSetup: sdk,
    consume: pipelineConsume,
  },
  'relay-handwritten-age-rt': {
    kind: 'relay',
    encrypted: true,
    producerSetup: sdk,
    produce: handwrittenProduce,
    consumerSetup: sdk,
    consume: handwrittenConsume,
  },
  'pipeline-age-rt': {
    kind: 'relay',
    pipeline: true,
    encrypted: true,
    producerSetup: sdk,
    produce: pipelineProduce,
    consumerSetup: sdk,
    consume: pipelineConsume,
  },
};

// ---------------------------------------------------------------- parent
function spawnChild(variant, side, cfg, profDir) {
  const execArgv = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${variant}-${side}-${process.pid}-${Date.now()}.cpuprofile`] : [];
  const proc = spawn(process.execPath, [...execArgv, SELF, 'child', variant, side, JSON.stringify(cfg)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], cwd: ROOT });
  started.add(proc);
  const msgs = [];
  const waiters = [];
  let exit = null;
  const settle = () => {
    for (const w of [...waiters]) {
      const m = msgs.find((x) => x.ev === w.ev);
      if (m) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); } else if (exit) {
        waiters.splice(waiters.indexOf(w), 1);
        w.reject(new Error(`${variant} ${side} exited (${exit.code ?? exit.signal}) before '${w.ev}'`));
      }
    }
  };
  proc.on('message', (m) => { msgs.push(m); settle(); });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => { started.delete(proc); exit = { code, signal }; settle(); r(exit); }));
  return {
    proc,
    exited,
    wait: (ev) => new Promise((resolve, reject) => { waiters.push({ ev, resolve, reject }); settle(); }),
    send: (m) => proc.send(m),
    kill: () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); },
  };
}

const started = new Set();
process.on('exit', () => { for (const p of started) p.kill('SIGKILL'); });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function startRedis() {
  const bin = process.env.REDIS_SERVER || 'redis-server';
  const port = await freePort();
  const proc = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(proc);
  let out = '';
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 15000);
    const on = (d) => { out += d; if (/Ready to accept connections/.test(out)) { clearTimeout(t); resolve(); } };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.on('exit', (c) => { clearTimeout(t); reject(new Error(`redis-server exited ${c}:\n${out}`)); });
  });
  proc.stdout.resume();
  proc.stderr.resume();
  return {
    proc,
    url: `redis://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => { started.delete(proc); resolve(); });
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
    }),
  };
}

async function redisCommand(url, args) {
  const { createClient } = await import('redis');
  const c = createClient({ url });
  await c.connect();
  try { return await c.sendCommand(args); } finally { await c.quit(); }
}

/** One timed run of `variant`; returns { rate, ms, ... }. */
async function runOnce(variant, cfg, profDir, server) {
  const impl = VARIANTS[variant];
  const prof = (side) => (profDir && (CPU_PROF === side || CPU_PROF === 'both') ? profDir : null);
  const consumer = spawnChild(variant, 'consumer', cfg, prof('consumer'));
  let producer = null;
  const timer = setTimeout(() => { consumer.kill(); producer?.kill(); }, RUN_TIMEOUT_MS);
  try {
    await consumer.wait('ready');
    producer = spawnChild(variant, 'producer', cfg, prof('producer'));
    await producer.wait('ready');
    if (impl.kind === 'relay') await sleep(20); // the consumer's receive() is waiting
    const s0 = server ? serverCpuMs(server.pid) : 0;
    producer.send('go');
    const [p, c] = await Promise.all([producer.wait('done'), consumer.wait('done')]);
    await Promise.all([producer.exited, consumer.exited]);
    const serverMs = server ? serverCpuMs(server.pid) - s0 : NaN;
    const N = cfg.records;
    const want = (N * (N - 1)) / 2;
    if (c.n !== N || (c.sum !== want && !impl.noChecksum)) throw new Error(`${variant}: consumer got ${c.n} records (sum of seq ${c.sum}), want ${N} (${want})`);
    const ms = c.tLast - p.t0;
    const perRec = (x) => (x * 1000) / N; // µs of CPU per record
    return { rate: N / (ms / 1000), ms, producerMs: p.tEnd - p.t0, consumerTailMs: c.tEnd - c.tLast, p: p.extra, c: c.extra,
      cpu: { producer: perRec(p.cpuMs), consumer: perRec(c.cpuMs), server: perRec(serverMs) },
      gc: { producer: perRec(p.gcMs), consumer: perRec(c.gcMs) } };
  } finally {
    clearTimeout(timer);
    consumer.kill();
    producer?.kill();
  }
}

// CPU ms (user + system) a process has used so far; clock ticks from getconf CLK_TCK
let CLK_TCK = 0;
function serverCpuMs(pid) {
  if (!CLK_TCK) CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK; // utime (14) + stime (15)
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const QUICK = process.argv.includes('--quick');
const RECORDS = Number(process.env.RECORDS || (QUICK ? 20_000 : 1_000_000));
const RUNS = Number(process.env.RUNS || (QUICK ? 1 : 3));
const BRPOP_RECORDS = Number(process.env.BRPOP_RECORDS || 20_000);
const RUN_TIMEOUT_MS = Number(process.env.RUN_TIMEOUT_MS || 600_000);
const CPU_PROF = process.env.CPU_PROF || '';

function fmt(n) { return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US').replace(/,/g, ' ') : 'n/a'; }
function ratio(a, b) { return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? (a / b).toFixed(2) : 'n/a'; }

async function main() {
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',').map((s) => s.trim()).filter(Boolean) : null;
  for (const v of only || []) if (!VARIANTS[v]) { console.error(`unknown variant ${v}; known: ${Object.keys(VARIANTS).join(', ')}`); process.exit(2); }
  let variants = Object.keys(VARIANTS).filter((v) => (only ? only.includes(v) : !VARIANTS[v].optIn));

  const h = variants.some((v) => VARIANTS[v].kind === 'relay') ? await sdk() : {};
  const hasPipeline = typeof h.pipeline === 'function' && typeof h.fromPipe === 'function' && typeof h.toPipe === 'function';
  const skipped = [];
  if (!hasPipeline) {
    for (const v of variants) if (VARIANTS[v].pipeline) skipped.push(v);
    variants = variants.filter((v) => !VARIANTS[v].pipeline);
    if (skipped.length) console.error(`# pkg/index.js has no pipeline API yet (pipeline/fromPipe/toPipe): skipping ${skipped.join(', ')}`);
  }
  const identity = h.generateIdentity ? h.generateIdentity() : null;
  const recipient = identity && h.identityToRecipient(identity);

  const needRelay = variants.some((v) => VARIANTS[v].kind === 'relay');
  const needRedis = variants.some((v) => VARIANTS[v].kind === 'redis');
  if (needRelay && !process.env.HTTPIPE_RELAY_BIN) {
    process.env.HTTPIPE_RELAY_BIN = path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'release/httpipe-relay');
  }
  const relay = needRelay ? await (await import('../tests/js/lib/relay.mjs')).startRelay() : null;
  const redis = needRedis ? await startRedis() : null;
  const profDir = CPU_PROF ? fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-pipeline-prof-')) : null;

  const sampleBytes = Buffer.byteLength(JSON.stringify(record(123_456)));
  const load0 = os.loadavg();
  const t0 = performance.now();
  const results = Object.fromEntries(variants.map((v) => [v, []]));
  try {
    for (let round = 0; round < RUNS; round++) {
      // alternate the order across rounds so drifting load hits every variant alike
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const impl = VARIANTS[v];
        const cfg = { records: impl.records ? impl.records(RECORDS) : RECORDS };
        if (impl.kind === 'redis') Object.assign(cfg, { redis: redis.url, key: `bench:${v}:${round}` });
        else {
          Object.assign(cfg, { relay: relay.http, path: `/bench/pipeline/${v}-${round}` });
          if (impl.encrypted) Object.assign(cfg, { sendOpts: { recipients: [recipient] }, receiveOpts: { identities: [identity] } });
        }
        const r = await runOnce(v, cfg, profDir, impl.kind === 'redis' ? redis.proc : relay.proc);
        results[v].push(r);
        if (impl.kind === 'redis') await redisCommand(redis.url, ['FLUSHALL']);
        console.error(`# round ${round + 1}/${RUNS} ${v}: ${fmt(r.rate)} records/s (${r.ms.toFixed(0)} ms; producer done after ${r.producerMs.toFixed(0)} ms` +
          (r.consumerTailMs > 5 ? `, consumer done ${r.consumerTailMs.toFixed(0)} ms after its last record` : '') +
          `; CPU µs/record producer ${r.cpu.producer.toFixed(2)} (GC ${r.gc.producer.toFixed(2)}), consumer ${r.cpu.consumer.toFixed(2)} (GC ${r.gc.consumer.toFixed(2)}), ${impl.kind} ${r.cpu.server.toFixed(2)})` +
          (r.c && r.c.report ? ` consumer report ${JSON.stringify(r.c.report)}` : '') +
          (r.c && r.c.chunks ? ` (consumer read ${r.c.chunks} chunks)` : '') +
          (r.c && r.c.waits !== undefined ? ` (empty-list waits: ${r.c.waits})` : ''));
      }
    }
  } finally {
    if (relay) await relay.stop();
    if (redis) await redis.stop();
  }
  const wallS = (performance.now() - t0) / 1000;

  const med = Object.fromEntries(variants.map((v) => [v, median(results[v].map((r) => r.rate))]));
  const get = (v) => med[v] ?? NaN;
  const plain = get('pipeline-plain');
  const redisBest = Math.max(get('redis-brpop') || 0, get('redis-lpop-1000') || 0) || NaN; // the issue's two
  const fasterRedis = get('redis-lpop-1000') >= get('redis-brpop') || !Number.isFinite(get('redis-brpop')) ? 'redis-lpop-1000' : 'redis-brpop';
  const hand = get('relay-handwritten');
  const peer = Number.isFinite(plain) ? 'pipeline-plain' : 'relay-handwritten';

  let redisVersion = '';
  try { redisVersion = execFileSync(process.env.REDIS_SERVER || 'redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)[1]; } catch { /* not needed */ }
  const cpus = os.cpus();
  console.log(`\nhttpipe record pipeline benchmark: ${fmt(RECORDS)} records of ~${sampleBytes} bytes (JSON), producer and consumer in separate Node processes, median of ${RUNS} run(s), rounds alternating`);
  console.log(`machine: ${cpus.length} cores (${cpus[0]?.model?.trim() || 'unknown CPU'}), Node ${process.version}, redis-server ${redisVersion || '?'}, node-redis 6.3.1; load average ${load0.map((x) => x.toFixed(1)).join(' ')} at start, ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at end; ${wallS.toFixed(0)} s in all\n`);
  const medCpu = (v, side) => median(results[v].map((r) => r.cpu[side])).toFixed(2);
  console.log(`| variant | records | records/s (median) | MB/s (NDJSON) | runs (records/s) | vs ${peer} | CPU µs/record: producer / consumer / relay or redis |`);
  console.log('|---|---:|---:|---:|---|---:|---:|');
  for (const v of variants) {
    const n = VARIANTS[v].records ? VARIANTS[v].records(RECORDS) : RECORDS;
    console.log(`| ${v} | ${fmt(n)} | ${fmt(med[v])} | ${(med[v] * (sampleBytes + 1) / 1e6).toFixed(1)} | ${results[v].map((r) => fmt(r.rate)).join(', ')} | ${ratio(med[v], get(peer))} | ${medCpu(v, 'producer')} / ${medCpu(v, 'consumer')} / ${medCpu(v, 'server')} |`);
  }
  for (const v of skipped) console.log(`| ${v} | | n/a (no pipeline API in pkg/) | | | | |`);
  const mark = (ok) => (ok === null ? '' : ok ? ' ✓' : ' ✗');
  const chk = (x, t) => (Number.isFinite(x) ? x >= t : null);
  console.log('');
  console.log(`pipeline-plain: ${fmt(plain)} records/s (target ≥ 500 000)${mark(chk(plain, 500_000))}`);
  console.log(`pipeline-plain / faster Redis (${fasterRedis}): ${ratio(plain, redisBest)} (target ≥ 3)${mark(chk(plain / redisBest, 3))}`);
  console.log(`pipeline-plain / relay-handwritten: ${ratio(plain, hand)} (target ≥ 0.9)${mark(chk(plain / hand, 0.9))}`);
  console.log(`pipeline-age-rt: ${fmt(get('pipeline-age-rt'))} records/s; age-rt / plain = ${ratio(get('pipeline-age-rt'), plain)}` +
    (Number.isFinite(get('relay-handwritten-age-rt')) ? `; pipeline-age-rt / relay-handwritten-age-rt = ${ratio(get('pipeline-age-rt'), get('relay-handwritten-age-rt'))}` : ''));
  console.log(`relay-handwritten / faster Redis: ${ratio(hand, redisBest)}`);
  if (Number.isFinite(get('redis-variadic-lpop-1000'))) console.log(`pipeline-plain / redis-variadic-lpop-1000 (opt-in, stronger producer): ${ratio(plain, get('redis-variadic-lpop-1000'))}`);

  if (profDir) {
    for (const f of fs.readdirSync(profDir).filter((x) => x.endsWith('.cpuprofile')).sort()) {
      console.log(`\n${path.join(profDir, f)}`);
      printTopSelf(path.join(profDir, f), 20);
    }
  }
}

// ---------------------------------------------------------------- --api-overhead
// The pipeline API against the hand-written loops in one process, no network (so the other
// jobs on a shared machine blur it less): the consumer side on the byte chunks a consumer
// gets from receive() (46 KB, one per read), the producer side into a sink that drops the
// bytes. Rounds interleaved (order reversed every other round), first round is warm-up;
// medians and minima of CPU µs per record (process.cpuUsage).
async function apiOverhead() {
  const h = await sdk();
  const N = Math.min(RECORDS, 500_000);
  const REPS = Number(process.env.API_REPS || 9);
  const enc = new TextEncoder();
  let all = '';
  for (let i = 0; i < N; i++) all += JSON.stringify(record(i)) + '\n';
  const bytes = enc.encode(all);
  all = null;
  const chunks = [];
  for (let o = 0; o < bytes.length; o += 46_000) chunks.push(bytes.subarray(o, o + 46_000));
  const reads = () => (async function* () { for (const c of chunks) yield c; })();
  const perRead = h.defineSource('reads', () => (async function* () { for (const c of chunks) yield [c]; })());
  const cases = {
    'consumer: hand-written (decode, split, JSON.parse)': async () => {
      const dec = new TextDecoder();
      let carry = '';
      let n = 0;
      for await (const c of reads()) {
        const t = carry + dec.decode(c, { stream: true });
        let st = 0;
        let nl;
        while ((nl = t.indexOf('\n', st)) >= 0) { if (JSON.parse(t.slice(st, nl)).seq >= 0) n++; st = nl + 1; }
        carry = t.slice(st);
      }
      return n;
    },
    'consumer: ndjson.decode() + sink(fn)': async () => {
      let n = 0;
      await h.pipeline(perRead, h.ndjson.decode(), h.sink((r) => { if (r.seq >= 0) n++; })).done;
      return n;
    },
    'consumer: ndjson.decode() + a chunk-loop defineSink': async () => {
      let n = 0;
      await h.pipeline(perRead, h.ndjson.decode(), h.defineSink('count', async (input, ctx) => {
        for await (const chunk of input) { for (const r of chunk) if (r.seq >= 0) n++; ctx.counters.delivered += chunk.length; }
      })).done;
      return n;
    },
    'producer: hand-written (1000 per batch, one encode)': async () => {
      let b = 0;
      for await (const c of (async function* () {
        for (let i = 0; i < N;) {
          let t = '';
          const e = Math.min(N, i + 1000);
          for (; i < e; i++) t += JSON.stringify(record(i)) + '\n';
          yield enc.encode(t);
        }
      })()) b += c.byteLength;
      return b === bytes.length ? N : b;
    },
    'producer: generator + ndjson.encode()': async () => {
      const r = await h.pipeline(function* () { for (let i = 0; i < N; i++) yield record(i); }, h.ndjson.encode(),
        h.defineSink('drop', async (input, ctx) => { for await (const ch of input) for (const c of ch) ctx.counters.delivered += c.byteLength; })).done;
      return r.sink.delivered === bytes.length ? N : r.sink.delivered;
    },
  };
  const res = {};
  for (let round = 0; round < REPS + 1; round++) {
    const keys = Object.keys(cases);
    if (round % 2) keys.reverse();
    for (const k of keys) {
      const c0 = process.cpuUsage();
      const n = await cases[k]();
      const u = process.cpuUsage(c0);
      if (n !== N) throw new Error(`${k}: ${n} records, want ${N}`);
      if (round > 0) (res[k] ||= []).push((u.user + u.system) / N);
    }
  }
  const cpus = os.cpus();
  console.log(`\npipeline API overhead in one process (no network): ${fmt(N)} records of ~${Buffer.byteLength(JSON.stringify(record(123_456)))} bytes, ${REPS} interleaved rounds after a warm-up`);
  console.log(`machine: ${cpus.length} cores (${cpus[0]?.model?.trim() || 'unknown CPU'}), Node ${process.version}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at end\n`);
  console.log('| case | CPU µs/record (median) | min | vs hand-written |');
  console.log('|---|---:|---:|---:|');
  const hand = { consumer: median(res[Object.keys(cases)[0]]), producer: median(res[Object.keys(cases)[3]]) };
  for (const k of Object.keys(cases)) {
    const xs = res[k];
    const side = k.startsWith('consumer') ? 'consumer' : 'producer';
    console.log(`| ${k} | ${median(xs).toFixed(2)} | ${Math.min(...xs).toFixed(2)} | ${(median(xs) / hand[side]).toFixed(2)} |`);
  }
}

// ---------------------------------------------------------------- --cpu-prof summary
/** Prints the functions with the most self time in a V8 .cpuprofile. */
function printTopSelf(file, top) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] || 0;
    total += dt;
    const n = byId.get(prof.samples[i]);
    const cf = n.callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url ? `${cf.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${cf.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) || 0) + dt);
  }
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  console.log(`total ${(total / 1000).toFixed(0)} ms sampled`);
  console.log('| self ms | % | function |');
  console.log('|---:|---:|---|');
  for (const [k, us] of rows) console.log(`| ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} | ${k.replace(/\|/g, '\\|')} |`);
}

// ---------------------------------------------------------------- entry (last: every const above is initialised)
if (process.argv[2] === 'child') {
  await child(process.argv[3], process.argv[4], JSON.parse(process.argv[5]));
  process.exit(0);
} else if (process.argv[2] === '--top-self') {
  printTopSelf(process.argv[3], Number(process.argv[4] || 25));
} else if (process.argv.includes('--api-overhead')) {
  await apiOverhead();
} else {
  await main();
}
