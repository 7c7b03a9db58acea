// The crypto core compiled to wasm (simd128) in Node, next to Node's native (OpenSSL)
// ChaCha20-Poly1305 over the same 64 KiB chunks in the same run. Run by bench/crypto.sh.
import { createRequire } from 'node:module';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const wasm = require('./crypto-wasm/pkg/httpipe_crypto_bench_wasm.js');

const MB = Number(process.env.BENCH_MB || 64);
const N = MB << 20;
const CHUNK = 64 * 1024;
const RUNS = 7;
const plain = randomBytes(N);

// Cross-check first: what the wasm build encrypts (its own SIMD ChaCha20 on wasm) must decrypt
// with the real `age` CLI.
{
  const dir = mkdtempSync(join(tmpdir(), 'httpipe-bench-'));
  try {
    const sample = plain.subarray(0, 3 * CHUNK + 12345);
    writeFileSync(join(dir, 'key'), wasm.identity_string() + '\n');
    writeFileSync(join(dir, 'ct.age'), wasm.encrypt(false, sample));
    const back = execFileSync('age', ['-d', '-i', join(dir, 'key'), join(dir, 'ct.age')], { maxBuffer: 1 << 28 });
    if (!back.equals(sample)) throw new Error('age -d of the wasm output differs from the plaintext');
    console.log('cross-check: age -d reads the wasm build\'s output: ok');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];

function nonce(i) {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(BigInt(i), 3);
  return n;
}
const key = randomBytes(32);
const sealed = [];
const nodeSealOnce = () => {
  sealed.length = 0;
  for (let i = 0, off = 0; off < N; i++, off += CHUNK) {
    const c = createCipheriv('chacha20-poly1305', key, nonce(i), { authTagLength: 16 });
    const ct = c.update(plain.subarray(off, off + CHUNK));
    c.final();
    sealed.push([ct, c.getAuthTag()]);
  }
};
const nodeOpenOnce = () => {
  sealed.forEach(([ct, tag], i) => {
    const d = createDecipheriv('chacha20-poly1305', key, nonce(i), { authTagLength: 16 });
    d.setAuthTag(tag);
    d.update(ct);
    d.final();
  });
};
nodeSealOnce();

// Peer and ours alternate run by run, so both see the same machine load (this box is
// shared); the ratio is the median of the per-pair ratios.
function paired(peer, ours) {
  peer();
  ours();
  const p = [], o = [], r = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    peer();
    const t1 = performance.now();
    ours();
    const t2 = performance.now();
    const pr = N / ((t1 - t0) / 1000) / 1e6, or = N / ((t2 - t1) / 1000) / 1e6;
    p.push(pr); o.push(or); r.push(or / pr);
  }
  return { peer: median(p), ours: median(o), ratio: median(r) };
}

const row = (name, v, ratio) =>
  console.log(`${name.padEnd(34)} ${v.toFixed(0).padStart(8)} ${ratio === undefined ? ''.padStart(14) : ratio.toFixed(2).padStart(14)}`);
console.log(`wasm in Node ${process.version} (${MB} MiB, 64 KiB pieces, median of ${RUNS} alternating pairs; MB = 10^6 bytes)`);
console.log(`${'operation'.padEnd(34)} ${'MB/s'.padStart(8)} ${'vs Node native'.padStart(14)}`);
for (const [name, rt] of [['age-rt', true], ['age v1', false]]) {
  const ct = wasm.encrypt(rt, plain);
  const enc = paired(nodeSealOnce, () => wasm.encrypt(rt, plain));
  const dec = paired(nodeOpenOnce, () => {
    if (wasm.decrypt(ct) !== N) throw new Error('wasm decrypt returned the wrong length');
  });
  row(`Node native seal (peer of ${name})`, enc.peer);
  row(`wasm ${name} encrypt`, enc.ours, enc.ratio);
  row(`Node native open (peer of ${name})`, dec.peer);
  row(`wasm ${name} decrypt`, dec.ours, dec.ratio);
}
// Where the time goes: the two primitives alone (no framing, no copies out).
const cc = paired(nodeSealOnce, () => wasm.chacha20_only(plain));
row('wasm RustCrypto ChaCha20 only', cc.ours, cc.ratio);
const pp = paired(nodeSealOnce, () => wasm.poly1305_only(plain));
row('wasm RustCrypto Poly1305 only', pp.ours, pp.ratio);
const times = [];
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  wasm.scrypt18();
  times.push((performance.now() - t) / 1000);
}
console.log(`${'wasm scrypt log2 N = 18'.padEnd(34)} ${median(times).toFixed(3).padStart(8)} s (median of 3)`);
