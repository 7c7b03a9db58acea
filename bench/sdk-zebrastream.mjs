// Encrypted transfers, the SDK vs the ZebraStream Python client it is compatible with (issue
// #13): age-rt with a passphrase, producer and consumer in their own processes, through one
// httpipe-relay (release) on loopback, in the same run, interleaved run by run:
//   SDK       `head -c SIZE /dev/zero | node producer` → relay → `node consumer | wc -c`
//             (send/receive from pkg/, stdin and stdout as web streams), the payload cipher as
//             detected (node:crypto), and once more forced to the wasm cipher;
//   ZebraStream `zebrastream write` → relay → `zebrastream read` (zebrastream-io, .venv).
// Both sides run scrypt once (the same passphrase work factor). Also records each process's
// peak RSS. Medians of RUNS (default 3), SIZE_MIB (default 512). MB = 10^6 bytes. Asserts
// nothing; prints a Markdown table and the ratios. BASE_PKG=/path/to/other/pkg adds a row for
// that build of the SDK (node:crypto), interleaved with the rest (before/after comparisons).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startReleaseRelay } from './lib/release-relay.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SIZE = Number(process.env.SIZE_MIB || 512) * 1024 * 1024;
const RUNS = Number(process.env.RUNS || 3);
const PASS = 'bench passphrase';
const ZS = path.join(ROOT, '.venv/bin/zebrastream');
const PKG = path.join(ROOT, 'pkg/index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-zs-'));

const BASE_PKG = process.env.BASE_PKG ? path.resolve(process.env.BASE_PKG, 'index.js') : null;
const PRODUCER = `
import { Readable } from 'node:stream';
const sdk = await import(process.env.BENCH_PKG || ${JSON.stringify(PKG)});
await sdk.init();
if (process.env.BENCH_WASM) sdk.cryptoBackend('wasm');
const [relay, path] = process.argv.slice(2);
await sdk.send(Readable.toWeb(process.stdin), { relay, path, passphrase: process.env.BENCH_PASS });
process.stderr.write(JSON.stringify({ rss: process.resourceUsage().maxRSS * 1024 }) + '\\n');
`;
const CONSUMER = `
import { Writable } from 'node:stream';
const sdk = await import(process.env.BENCH_PKG || ${JSON.stringify(PKG)});
await sdk.init();
if (process.env.BENCH_WASM) sdk.cryptoBackend('wasm');
const [relay, path] = process.argv.slice(2);
const r = await sdk.receive({ relay, path, passphrase: process.env.BENCH_PASS });
await r.stream.pipeTo(Writable.toWeb(process.stdout));
process.stderr.write(JSON.stringify({ rss: process.resourceUsage().maxRSS * 1024 }) + '\\n');
`;
fs.writeFileSync(path.join(tmp, 'producer.mjs'), PRODUCER);
fs.writeFileSync(path.join(tmp, 'consumer.mjs'), CONSUMER);

/** `sh -c` a pipeline; resolves { code, stdout, stderr }. */
function sh(cmd, env) {
  return new Promise((resolve) => {
    const p = spawn('sh', ['-c', cmd], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const peaks = (text) => [...text.matchAll(/\{"rss":(\d+)\}/g)].map((m) => Number(m[1]));

/** One transfer: consumer first, then the producer; MB/s and the peak RSS of each side. */
async function pair(consumerCmd, producerCmd, env) {
  const consumer = sh(`${consumerCmd} | wc -c`, env);
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const producer = sh(`head -c ${SIZE} /dev/zero | ${producerCmd}`, env);
  const [p, c] = await Promise.all([producer, consumer]);
  const s = (performance.now() - t0) / 1000;
  const got = Number(c.stdout.trim());
  if (p.code || c.code || got !== SIZE) {
    console.error(`  ! exit ${p.code}/${c.code}, ${got} bytes\n${p.stderr}\n${c.stderr}`);
    return { rate: NaN };
  }
  return { rate: SIZE / s / 1e6, producerRss: peaks(p.stderr)[0], consumerRss: peaks(c.stderr)[0] };
}

const { relay, base } = await startReleaseRelay();
const hasZs = fs.existsSync(ZS) && !process.env.SKIP_ZEBRASTREAM;
const results = { sdk: [], sdkWasm: [], zs: [], base: [] };
let n = 0;
try {
  for (let run = 0; run < RUNS; run++) {
    const p = () => `/bench/zs/${process.pid}/${++n}`;
    const node = (script, q) => `node ${path.join(tmp, script)} ${base} ${q}`;
    let q = p();
    results.sdk.push(await pair(node('consumer.mjs', q), node('producer.mjs', q), { BENCH_PASS: PASS }));
    q = p();
    results.sdkWasm.push(await pair(node('consumer.mjs', q), node('producer.mjs', q), { BENCH_PASS: PASS, BENCH_WASM: '1' }));
    if (BASE_PKG) {
      q = p();
      results.base.push(await pair(node('consumer.mjs', q), node('producer.mjs', q), { BENCH_PASS: PASS, BENCH_PKG: BASE_PKG }));
    }
    if (hasZs) {
      q = p();
      const zs = (verb) => `${ZS} ${verb} -s ${q} -U ${base}/connect/v0/ -a x`;
      results.zs.push(await pair(zs('read'), zs('write'), { ZEBRASTREAM_PASSPHRASE: PASS }));
    }
    console.error(`run ${run + 1}/${RUNS}: ${Object.entries(results).filter(([, v]) => v.length).map(([k, v]) => `${k} ${v.at(-1).rate.toFixed(0)}`).join(', ')}`);
  }
} finally {
  relay.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
}
const median = (xs) => { const s = xs.filter((x) => x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const row = (name, k) => {
  const rs = results[k];
  if (!rs.length) return null;
  const mb = (x) => (x === undefined ? '?' : (x / 1e6).toFixed(0));
  return { name, rate: median(rs.map((r) => r.rate)), prss: mb(median(rs.map((r) => r.producerRss))), crss: mb(median(rs.map((r) => r.consumerRss))) };
};
const rows = [
  row('SDK Node → relay → SDK Node, payload cipher node:crypto (default)', 'sdk'),
  row('SDK Node → relay → SDK Node, payload cipher wasm (`cryptoBackend(\'wasm\')`)', 'sdkWasm'),
  row(`SDK Node → relay → SDK Node, node:crypto, the build in ${process.env.BASE_PKG}`, 'base'),
  row('zebrastream write → relay → zebrastream read (zebrastream-io, Python)', 'zs'),
].filter(Boolean);
console.log(`\n${SIZE >> 20} MiB age-rt (passphrase) per transfer, medians of ${RUNS}; ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}\n`);
console.log('| transfer | MB/s | producer peak RSS MB | consumer peak RSS MB |\n|---|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.name} | ${r.rate.toFixed(0)} | ${r.prss} | ${r.crss} |`);
if (results.zs.length) {
  const zs = median(results.zs.map((r) => r.rate));
  console.log(`\nSDK (node:crypto) / ZebraStream = ${(median(results.sdk.map((r) => r.rate)) / zs).toFixed(2)}; SDK (wasm) / ZebraStream = ${(median(results.sdkWasm.map((r) => r.rate)) / zs).toFixed(2)}` +
    (results.base.length ? `; base build / ZebraStream = ${(median(results.base.map((r) => r.rate)) / zs).toFixed(2)}` : ''));
}
