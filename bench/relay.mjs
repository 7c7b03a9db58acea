#!/usr/bin/env node
// Relay benchmark: httpipe-relay vs piping-server 1.12.9 (npm, node_modules) and, when
// PIPING_SERVER_RUST names its binary, piping-server-rust (the leanest peer); same run,
// loopback. Prints every figure and the ratio ours/theirs for each peer.
//
//   cargo build --release --example h2_bench && node bench/relay.mjs
//   BENCH_MB=256 node bench/relay.mjs   (bytes per single-stream run, default 512 MiB)
//   PIPING_SERVER_RUST=/path/to/piping-server node bench/relay.mjs
//     piping-server-rust is not on crates.io: build it from its repository
//     (nwtgck/piping-server-rust: `cargo build --release`, binary target/release/piping-server)
//   HTTPIPE_RELAY_BEFORE=/path/to/an/older/httpipe-relay node bench/relay.mjs
//     adds an older build as one more peer (before/after in one run)
//
// Measurements
//   1. single stream, HTTP/1.1: curl -T file → relay → curl -o /dev/null (MB/s, best of 3)
//   2. single stream, h2 over TLS: sender and receiver are `relay/examples/h2_bench.rs` (hyper
//      + rustls) processes (curl's own HTTP/2 upload is CPU-bound near 100 MB/s, and Node's
//      http2 client tops out lower still), best of 3
//   3. 8 concurrent HTTP/1.1 streams (curl pairs), aggregate MB/s
//   4. idle memory per waiting receiver: RSS delta of the relay process for 2000 waiting GETs
//   5. rendezvous latency: receiver waiting, 1-byte POST → byte received (median of 200, raw
//      TCP sockets opened beforehand)
//   5b. small transfer (`small`): receiver waiting, 1-byte POST → the producer's response
//      complete, i.e. the delivery verdict (§3.2) (median of 100, raw TCP sockets)
//   6. relay CPU seconds per GiB relayed (`cpu`): the relay process's run time (its threads'
//      /proc/PID/task/*/schedstat) around one transfer of BENCH_CPU_MB (default 1024) MiB,
//      HTTP/1.1 (curl pair; BENCH_CPU_RATE caps the receiver's rate) and h2 over TLS
//      (h2_bench pair; BENCH_CPU_PROTOS=h1 skips it); all relays run at once and the rounds
//      alternate between them (BENCH_CPU_ROUNDS, default 3), median per relay
//
//   PIPING_SERVER_JS=/path/to/piping-server/dist/src/index.js overrides node_modules.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OURS = process.env.HTTPIPE_RELAY_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'release/httpipe-relay');
const H2_CLIENT = path.join(path.dirname(OURS), 'examples/h2_bench');
const PIPING = process.env.PIPING_SERVER_JS || path.join(ROOT, 'node_modules/piping-server/dist/src/index.js');
const PIPING_RUST = process.env.PIPING_SERVER_RUST || '';
const BEFORE = process.env.HTTPIPE_RELAY_BEFORE || '';
const MB = 1024 * 1024;
const SIZE = (Number(process.env.BENCH_MB) || 512) * MB;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- child-process modes
if (process.argv[2] === 'h2-send' || process.argv[2] === 'h2-recv') {
  await h2Client(process.argv[2], process.argv[3], process.argv[4], Number(process.argv[5] || 0));
  process.exit(0);
}

async function h2Client(mode, origin, p, bytes) {
  const client = http2.connect(origin, { rejectUnauthorized: false, settings: { initialWindowSize: 8 * MB } });
  client.on('error', (e) => { console.error(e); process.exit(1); });
  await new Promise((r) => client.once('connect', r));
  try { client.setLocalWindowSize(32 * MB); } catch { /* older node */ }
  if (mode === 'h2-recv') {
    const req = client.request({ ':path': p });
    let n = 0;
    req.on('data', (d) => { n += d.length; });
    await new Promise((r, j) => { req.on('end', r); req.on('error', j); });
    console.log(n);
  } else {
    const req = client.request({ ':method': 'POST', ':path': p, 'content-type': 'application/octet-stream' });
    req.on('data', () => {}); // the status log
    const chunk = Buffer.alloc(256 * 1024, 7);
    for (let sent = 0; sent < bytes; sent += chunk.length) {
      if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
    }
    req.end();
    await new Promise((r, j) => { req.on('end', r); req.on('error', j); });
  }
  client.close();
}

// ---------------------------------------------------------------- servers
async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function startOurs(tmp, bin = OURS, name = 'httpipe-relay') {
  const proc = spawn(bin, ['--host', '127.0.0.1', '--http-port', '0', '--https-port', '0',
    '--tls-cert', path.join(tmp, 'cert.pem'), '--tls-key', path.join(tmp, 'key.pem')],
  // the idle-memory row holds 2000 waiting GETs from one address: over the default per-address
  // limit (PROTOCOL.md §9); an environment variable, which a relay built before it ignores
  { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, RUST_LOG: 'warn', HTTPIPE_MAX_WAITING_PER_ADDRESS: '0' } });
  started.push(proc);
  let out = '';
  await new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => { out += d; if (/listening https:/.test(out)) resolve(); });
    proc.on('exit', (c) => reject(new Error(`httpipe-relay exited ${c}`)));
  });
  const http1 = out.match(/listening (http:\/\/\S+)/)[1];
  const https = out.match(/listening (https:\/\/\S+)/)[1];
  return { name, proc, http: http1, https };
}

const startBefore = (tmp) => startOurs(tmp, BEFORE, 'httpipe-relay (before)');

/** A Piping Server (`argv`: how to run it) on free ports, TLS with the bench's certificate. */
async function startPipingLike(tmp, name, argv) {
  const hp = await freePort();
  const sp = await freePort();
  const proc = spawn(argv[0], [...argv.slice(1), '--host', '127.0.0.1', '--http-port', String(hp), '--enable-https',
    '--https-port', String(sp), '--key-path', path.join(tmp, 'key.pem'), '--crt-path', path.join(tmp, 'cert.pem')],
  { stdio: ['ignore', 'ignore', 'ignore'] });
  started.push(proc);
  const url = `http://127.0.0.1:${hp}`;
  for (let i = 0; i < 100; i++) {
    try { await fetch(`${url}/version`); break; } catch { await sleep(100); }
  }
  return { name, proc, http: url, https: `https://127.0.0.1:${sp}` };
}

const startPiping = (tmp) => startPipingLike(tmp, 'piping-server', [process.execPath, PIPING]);
const startPipingRust = (tmp) => startPipingLike(tmp, 'piping-server-rust', [PIPING_RUST]);

// every relay measured, ours first
const STARTERS = [startOurs, ...(BEFORE ? [startBefore] : []), startPiping, ...(PIPING_RUST ? [startPipingRust] : [])];


function stop(s) { s.proc.kill('SIGKILL'); }

// never leave a server running, whatever happens
const started = [];
process.on('exit', () => { for (const p of started) p.kill('SIGKILL'); });

// CPU seconds a process has run: the sum of its threads' run time in /proc/PID/task/*/schedstat
// (nanoseconds; utime + stime in /proc/PID/stat count 10 ms ticks, 4 % of a 2 GiB transfer's
// 0.25 s); a relay's threads live as long as it does.
function cpuSeconds(pid) {
  let ns = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch { /* the thread ended */ }
  }
  return ns / 1e9;
}

function rssBytes(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return Number(m[1]) * 1024;
}

// ---------------------------------------------------------------- measurements
function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} → ${c}`))));
  });
}

async function curlPair(base, p, file, rate) {
  const recv = run('curl', ['-sS', '-o', '/dev/null', ...(rate ? ['--limit-rate', rate] : []), `${base}${p}`]);
  await sleep(30);
  await Promise.all([recv, run('curl', ['-sS', '-o', '/dev/null', '-T', file, `${base}${p}`])]);
}

async function best(n, f) {
  let top = 0;
  for (let i = 0; i < n; i++) top = Math.max(top, await f(i));
  return top;
}

async function h1Single(s, file, bytes) {
  return best(3, async (i) => {
    const t0 = performance.now();
    await curlPair(s.http, `/bench-h1-${i}`, file);
    return bytes / MB / ((performance.now() - t0) / 1000);
  });
}

async function h2Single(s, bytes, ca) {
  return best(3, async (i) => {
    const p = `/bench-h2-${i}`;
    const t0 = performance.now();
    const recv = run(H2_CLIENT, ['recv', `${s.https}${p}`, '0', ca]);
    await sleep(50);
    await Promise.all([recv, run(H2_CLIENT, ['send', `${s.https}${p}`, String(bytes), ca])]);
    return bytes / MB / ((performance.now() - t0) / 1000);
  });
}

async function h1Concurrent(s, file, bytes, n) {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => curlPair(s.http, `/bench-c-${i}`, file)));
  return (n * bytes) / MB / ((performance.now() - t0) / 1000);
}

async function idleMemory(s, n) {
  // warm up, then measure RSS with n receivers waiting
  await curlPair(s.http, '/bench-warm', '/dev/null');
  await sleep(300);
  const before = rssBytes(s.proc.pid);
  const reqs = [];
  for (let i = 0; i < n; i++) {
    const req = http.request(`${s.http}/bench-idle-${i}`, { agent: false });
    req.on('error', () => {});
    req.end();
    reqs.push(req);
    if (i % 200 === 199) await sleep(20);
  }
  await sleep(1500);
  const after = rssBytes(s.proc.pid);
  for (const r of reqs) r.destroy();
  await sleep(500);
  return (after - before) / n;
}

// One transfer of `bytes`; returns the relay's CPU seconds per GiB and the MB/s seen.
async function cpuPerGiB(s, proto, file, bytes, ca, tag) {
  const p = `/bench-cpu-${proto}-${tag}`;
  const c0 = cpuSeconds(s.proc.pid);
  const t0 = performance.now();
  if (proto === 'h1') {
    await curlPair(s.http, p, file, CPU_RATE);
  } else {
    const recv = run(H2_CLIENT, ['recv', `${s.https}${p}`, '0', ca]);
    await sleep(50);
    await Promise.all([recv, run(H2_CLIENT, ['send', `${s.https}${p}`, String(bytes), ca])]);
  }
  const secs = (performance.now() - t0) / 1000;
  await sleep(200); // let the relay finish its side (log lines, connection close)
  const cpu = cpuSeconds(s.proc.pid) - c0;
  return { cpuPerGiB: cpu / (bytes / (1024 * MB)), mbps: bytes / MB / secs };
}

// BENCH_CPU_RATE (e.g. 1000M): the HTTP/1.1 receiver reads at most that many bytes per second
// (curl --limit-rate), so every relay is compared at one rate; BENCH_CPU_PROTOS=h1 skips h2.
const CPU_RATE = process.env.BENCH_CPU_RATE || '';
const CPU_PROTOS = (process.env.BENCH_CPU_PROTOS || 'h1,h2').split(',');
const median = (xs) => { const v = [...xs].sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };

// Both relays up at once; rounds alternate ours/theirs so load from other jobs hits both alike.
async function cpuCompare(tmp, file, bytes, rounds) {
  const servers = [];
  for (const start of STARTERS) servers.push(await start(tmp));
  const ca = path.join(tmp, 'cert.pem');
  const out = {};
  try {
    for (const s of servers) out[s.name] = { h1: [], h2: [] };
    for (const s of servers) await curlPair(s.http, '/bench-cpu-warm', '/dev/null');
    for (let round = 0; round < rounds; round++) {
      for (const proto of CPU_PROTOS) {
        for (const s of servers) {
          const r = await cpuPerGiB(s, proto, file, bytes, ca, round);
          out[s.name][proto].push(r.cpuPerGiB);
          console.error(`cpu round ${round} ${proto} ${s.name}: ${r.cpuPerGiB.toFixed(3)} s/GiB, ${r.mbps.toFixed(0)} MB/s`);
        }
      }
    }
  } finally {
    for (const s of servers) stop(s);
  }
  const res = {};
  for (const [name, v] of Object.entries(out)) res[name] = { cpuH1: median(v.h1), cpuH2: median(v.h2) };
  return res;
}

async function connected(port) {
  const sock = net.connect(port, '127.0.0.1');
  sock.setNoDelay(true);
  await new Promise((r, j) => { sock.once('connect', r); sock.once('error', j); });
  return sock;
}

// Raw TCP sockets (no HTTP client library in the timed path); both connections are open
// before the clock starts: time = POST written → first body byte at the waiting receiver.
async function rendezvous(s, n) {
  const port = Number(new URL(s.http).port);
  const samples = [];
  for (let i = 0; i < n + 10; i++) {
    const p = `/bench-rtt-${i}`;
    const g = await connected(port);
    const post = await connected(port);
    let buf = '';
    const got = new Promise((resolve) => {
      g.on('data', (d) => {
        buf += d.toString('latin1');
        const h = buf.indexOf('\r\n\r\n');
        if (h >= 0 && buf.slice(h + 4).includes('x')) resolve(performance.now());
      });
    });
    g.write(`GET ${p} HTTP/1.1\r\nHost: bench\r\n\r\n`);
    await sleep(10); // the receiver is waiting
    const t0 = performance.now();
    post.write(`POST ${p} HTTP/1.1\r\nHost: bench\r\nContent-Length: 1\r\n\r\nx`);
    const t1 = await got;
    if (i >= 10) samples.push(t1 - t0); // skip warm-up
    g.destroy();
    post.destroy();
    await sleep(5);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

// Raw TCP sockets, opened beforehand: time = 1-byte POST written → the producer's response
// complete (its status log's last chunk: the delivery verdict, §3.2). The consumer reads as
// a client does; the producer's response is read to its end.
async function smallTransfer(s, n) {
  const port = Number(new URL(s.http).port);
  const samples = [];
  for (let i = 0; i < n + 5; i++) {
    const p = `/bench-small-${i}`;
    const g = await connected(port);
    const post = await connected(port);
    g.on('data', () => {});
    let buf = '';
    const done = new Promise((resolve) => {
      post.on('data', (d) => {
        buf += d.toString('latin1');
        if (buf.endsWith('\r\n0\r\n\r\n')) resolve(performance.now()); // the chunked log's end
      });
      post.on('end', () => resolve(performance.now()));
    });
    g.write(`GET ${p} HTTP/1.1\r\nHost: bench\r\n\r\n`);
    await sleep(10); // the receiver is waiting
    const t0 = performance.now();
    post.write(`POST ${p} HTTP/1.1\r\nHost: bench\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx`);
    const t1 = await done;
    if (i >= 5) samples.push(t1 - t0); // skip warm-up
    if (!/SUCCESS|successfully/.test(buf)) console.error(`small transfer ${s.name}: no success line: ${JSON.stringify(buf.slice(-200))}`);
    g.destroy();
    post.destroy();
    await sleep(5);
  }
  return median(samples);
}

// ---------------------------------------------------------------- main
if (!fs.existsSync(OURS) || !fs.existsSync(H2_CLIENT)) {
  console.error(`${OURS} or ${H2_CLIENT} missing: run cargo build --release --example h2_bench`);
  process.exit(1);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
  '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:FALSE', '-days', '1', '-keyout', path.join(tmp, 'key.pem'), '-out', path.join(tmp, 'cert.pem')],
{ stdio: 'ignore' });
function writePayload(name, bytes) {
  const f = path.join(tmp, name);
  const fd = fs.openSync(f, 'w');
  const chunk = Buffer.alloc(16 * MB, 0x5a);
  for (let n = 0; n < bytes; n += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - n));
  fs.closeSync(fd);
  return f;
}
const only = process.env.BENCH_ONLY; // e.g. BENCH_ONLY=mem for a quick look at one figure
const want = (k) => !only || only.split(',').includes(k);
const file = writePayload('payload.bin', want('h1') ? SIZE : 0);
const concurrent = 8;
const cFile = path.join(tmp, 'payload-c.bin');
const cBytes = Math.floor(SIZE / 4);
fs.writeFileSync(cFile, Buffer.alloc(want('conc') ? cBytes : 0, 0x5a));

const results = {};
for (const start of STARTERS) {
  const s = await start(tmp);
  try {
    const r = {};
    // memory first, on a fresh process (after bulk transfers a heap has free room to reuse)
    r.mem = want('mem') ? await idleMemory(s, 2000) : NaN;
    r.rtt = want('rtt') ? await rendezvous(s, 200) : NaN;
    r.small = want('small') ? await smallTransfer(s, 100) : NaN;
    r.h1 = want('h1') ? await h1Single(s, file, SIZE) : NaN;
    r.h2 = want('h2') ? await h2Single(s, SIZE, path.join(tmp, 'cert.pem')) : NaN;
    r.conc = want('conc') ? await h1Concurrent(s, cFile, cBytes, concurrent) : NaN;
    results[s.name] = r;
    console.error(`${s.name}: ${JSON.stringify(r)}`);
  } finally {
    stop(s);
  }
}
const CPU_BYTES = (Number(process.env.BENCH_CPU_MB) || 1024) * MB;
if (want('cpu')) {
  const cpuFile = writePayload('payload-cpu.bin', CPU_BYTES);
  const cpu = await cpuCompare(tmp, cpuFile, CPU_BYTES, Number(process.env.BENCH_CPU_ROUNDS) || 3);
  for (const [name, v] of Object.entries(cpu)) Object.assign(results[name], v);
} else {
  for (const r of Object.values(results)) Object.assign(r, { cpuH1: NaN, cpuH2: NaN });
}
fs.rmSync(tmp, { recursive: true, force: true });

const o = results['httpipe-relay'];
const peers = Object.keys(results).filter((k) => k !== 'httpipe-relay');
const rows = [
  ['single stream, HTTP/1.1 (curl → relay → curl), MB/s', 'h1', 1],
  ['single stream, h2 over TLS (hyper client h2_bench), MB/s', 'h2', 1],
  [`${concurrent} concurrent HTTP/1.1 streams, aggregate MB/s`, 'conc', 1],
  ['idle memory per waiting receiver (2000 GETs), KiB', 'mem', 1, 1 / 1024],
  ['rendezvous latency, median of 200, ms', 'rtt', 3],
  ['small transfer: 1-byte POST → producer response complete, median of 100, ms', 'small', 3],
  [`relay CPU seconds per GiB, HTTP/1.1 (curl pair, ${CPU_BYTES / MB} MiB), median`, 'cpuH1', 3],
  [`relay CPU seconds per GiB, h2 over TLS (h2_bench pair, ${CPU_BYTES / MB} MiB), median`, 'cpuH2', 3],
];
const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
console.log(`\nhttpipe-relay vs ${peers.join(', ')}, loopback, ${os.cpus().length} CPUs, load average ${load}, ${SIZE / MB} MiB per single stream\n`);
console.log(`| measurement | httpipe-relay | ${peers.join(' | ')} | ${peers.map((p) => `ours/${p}`).join(' | ')} |`);
console.log(`|---|---:|${peers.map(() => '---:|').join('')}${peers.map(() => '---:|').join('')}`);
for (const [name, k, d, scale = 1] of rows) {
  const a = o[k] * scale;
  const bs = peers.map((p) => results[p][k] * scale);
  console.log(`| ${name} | ${a.toFixed(d)} | ${bs.map((b) => b.toFixed(d)).join(' | ')} | ${bs.map((b) => (a / b).toFixed(2)).join(' | ')} |`);
}
console.log(`\nour h2 / our HTTP/1.1: ${(o.h2 / o.h1).toFixed(2)}`);
