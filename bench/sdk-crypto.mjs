// The SDK's encryption in Node (issue #13): `encryptStream` (age-rt and age, X25519 recipient)
// with the payload sealed by node:crypto (the default in Node) and by the wasm cipher
// (`cryptoBackend('wasm')`), next to the peers, in one run, interleaved run by run:
//   - Node's raw `createCipheriv('chacha20-poly1305')` loop over the same 64 KiB chunks (the
//     ceiling: no framing, no header, no stream plumbing);
//   - Debian's `age` CLI (Go) encrypting the same bytes from a file to /dev/null;
//   - the `age-encryption` npm package (the age authors' TypeScript implementation), if installed.
// Prints medians (MB = 10^6 bytes) and ratios against the raw loop, by wall time and by this
// process's CPU time (user + system: what a shared, loaded machine inflates least; the age CLI
// runs in a child, so it has none); asserts nothing.
// BENCH_MB=N sets the size (default 256), BENCH_RUNS=N the runs (default 5). BASE_PKG=dir adds
// rows for another build of the package (before/after comparisons), interleaved.
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sdk = await import(path.join(ROOT, 'pkg/index.js'));
await sdk.init();
const base = process.env.BASE_PKG ? await import(path.resolve(process.env.BASE_PKG, 'index.js')) : null;
if (base) await base.init();
const MB = Number(process.env.BENCH_MB || 256);
const RUNS = Number(process.env.BENCH_RUNS || 5);
const TOTAL = MB * 1e6;
const CHUNK = 64 * 1024;
const data = crypto.randomBytes(TOTAL);
const identity = sdk.generateIdentity();
const recipient = sdk.identityToRecipient(identity);

async function sdkEncrypt(backend, format, pkg = sdk) {
  pkg.cryptoBackend(backend);
  let off = 0;
  const src = new ReadableStream({
    pull(c) {
      if (off >= TOTAL) { c.close(); return; }
      c.enqueue(data.subarray(off, off + 16 * CHUNK)); // 1 MiB pieces, as a file reader gives
      off += 16 * CHUNK;
    },
  }, { highWaterMark: 0 });
  let n = 0;
  const t0 = performance.now();
  for await (const c of src.pipeThrough(pkg.encryptStream({ recipients: [recipient], format }))) n += c.length;
  const ms = performance.now() - t0;
  pkg.cryptoBackend('auto');
  if (n < TOTAL) throw new Error('short ciphertext');
  return ms;
}

function rawLoop() {
  const key = crypto.randomBytes(32);
  const nonce = Buffer.alloc(12);
  const t0 = performance.now();
  let n = 0;
  for (let off = 0, i = 0; off < TOTAL; off += CHUNK, i++) {
    nonce.writeUInt32BE(i, 7);
    const e = crypto.createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
    n += e.update(data.subarray(off, off + CHUNK)).length;
    e.final();
    n += e.getAuthTag().length;
  }
  return performance.now() - t0;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-'));
const plainFile = path.join(tmp, 'plain.bin');
fs.writeFileSync(plainFile, data);
const ageCli = ['/usr/bin/age', '/usr/local/bin/age'].find((p) => fs.existsSync(p));
function ageCliRun() {
  const t0 = performance.now();
  const r = spawnSync(ageCli, ['-r', recipient, '-o', '/dev/null', plainFile]);
  if (r.status !== 0) throw new Error(`age: ${r.stderr}`);
  return performance.now() - t0;
}

let ageNpm = null;
try { ageNpm = await import('age-encryption'); } catch { ageNpm = null; }
async function ageNpmRun() {
  const e = new ageNpm.Encrypter();
  e.addRecipient(recipient);
  const t0 = performance.now();
  await e.encrypt(data);
  return performance.now() - t0;
}

const cases = [
  ['raw createCipheriv loop (Node, 64 KiB chunks)', rawLoop],
  ['SDK age-rt encrypt, node:crypto', () => sdkEncrypt('auto', 'age-rt')],
  ['SDK age encrypt, node:crypto', () => sdkEncrypt('auto', 'age')],
  ...(base ? [
    [`SDK age-rt encrypt, node:crypto, ${process.env.BASE_PKG}`, () => sdkEncrypt('auto', 'age-rt', base)],
    [`SDK age encrypt, node:crypto, ${process.env.BASE_PKG}`, () => sdkEncrypt('auto', 'age', base)],
  ] : []),
  ['SDK age-rt encrypt, wasm cipher', () => sdkEncrypt('wasm', 'age-rt')],
  ['SDK age encrypt, wasm cipher', () => sdkEncrypt('wasm', 'age')],
  ...(base ? [
    [`SDK age-rt encrypt, wasm cipher, ${process.env.BASE_PKG}`, () => sdkEncrypt('wasm', 'age-rt', base)],
    [`SDK age encrypt, wasm cipher, ${process.env.BASE_PKG}`, () => sdkEncrypt('wasm', 'age', base)],
  ] : []),
  ...(ageCli ? [[`Debian age CLI (${spawnSync(ageCli, ['--version']).stdout.toString().trim()}), file → /dev/null`, ageCliRun]] : []),
  ...(ageNpm ? [['age-encryption (npm), whole buffer', ageNpmRun]] : []),
];
const times = new Map(cases.map(([name]) => [name, []]));
const cpu = new Map(cases.map(([name]) => [name, []]));
// Each case pays for the garbage the one before it left (a GC in its time): in a fixed order,
// two copies of the same build measured 772 vs 984 MB/s (2026-12-07). So the order alternates
// run by run, and every case follows a different neighbour in half of the runs.
for (let run = 0; run < RUNS; run++) {
  for (const [name, fn] of run % 2 ? [...cases].reverse() : cases) {
    const c0 = process.cpuUsage();
    times.get(name).push(await fn());
    const c = process.cpuUsage(c0);
    cpu.get(name).push((c.user + c.system) / 1000);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const rate = (ms) => TOTAL / 1e6 / (ms / 1000);
const raw = rate(median(times.get(cases[0][0])));
const rawCpu = rate(median(cpu.get(cases[0][0])));
console.log(`${MB} MB, median of ${RUNS}, Node ${process.version}, ${os.cpus()[0].model} (${os.cpus().length} cores, shared)`);
console.log('| encrypt | MB/s | vs raw loop | MB per CPU-second | vs raw loop (CPU) |');
console.log('|---|---:|---:|---:|---:|');
for (const [name] of cases) {
  const r = rate(median(times.get(name)));
  const rc = rate(median(cpu.get(name)));
  const child = name.includes('CLI');
  console.log(`| ${name} | ${r.toFixed(0)} | ${(r / raw).toFixed(2)} | ${child ? '—' : rc.toFixed(0)} | ${child ? '—' : (rc / rawCpu).toFixed(2)} |`);
}
