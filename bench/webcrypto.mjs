// The payload cipher in browsers (issue #13): the SDK's encryptStream / decryptStream in a
// Chromium page with WebCrypto's ChaCha20-Poly1305 (the default there, src/wasm/webcrypto.rs)
// and with the wasm cipher (`cryptoBackend('wasm')`), next to the page's raw `crypto.subtle`
// loop over the same 64 KiB chunks (the ceiling: no framing, 16 chunks per Promise.all); and
// Firefox ESR's rate (wasm: no ChaCha20-Poly1305 in its WebCrypto). Interleaved run by run,
// medians (MB = 10^6 bytes); asserts nothing. And Deno (which has
// both node:crypto and WebCrypto's ChaCha20-Poly1305; the package keeps node:crypto there):
// age-rt encrypt / decrypt with each, and wasm (bench/lib/webcrypto-deno.mjs).
// BENCH_MB=N sets the size (default 64), BENCH_RUNS=N the runs (default 5).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { startRelay } from '../tests/js/lib/relay.mjs';
import { launchChromium } from '../tests/js/lib/demo-browser.mjs';

const MB = Number(process.env.BENCH_MB || 64);
const RUNS = Number(process.env.BENCH_RUNS || 5);
const FIREFOX = process.env.HTTPIPE_FIREFOX || '/usr/bin/firefox-esr';
const TOTAL = MB * 1e6;
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const DENO = path.join(ROOT, 'node_modules/.bin/deno');

// Runs in the page: sets up data and the cases; returns nothing (window.bench holds them).
const SETUP_SRC = `async (TOTAL) => {
  const h = await import('/assets/pkg/index.js');
  await h.init();
  const detected = h.cryptoBackend();
  const data = new Uint8Array(TOTAL);
  for (let i = 0; i < TOTAL; i += 65536) crypto.getRandomValues(data.subarray(i, Math.min(i + 65536, TOTAL)));
  const id = h.generateIdentity();
  const recipient = h.identityToRecipient(id);
  const source = (bytes) => {
    let off = 0;
    return new ReadableStream({
      pull(c) {
        if (off >= bytes.length) { c.close(); return; }
        c.enqueue(bytes.subarray(off, off + (1 << 20))); // 1 MiB pieces, as a file reader gives
        off += 1 << 20;
      },
    }, { highWaterMark: 0 });
  };
  const drain = async (s) => { let n = 0; const r = s.getReader(); for (;;) { const { value, done } = await r.read(); if (done) return n; n += value.length; } };
  const cts = {};
  const encrypt = async (backend, format) => {
    h.cryptoBackend(backend);
    const t0 = performance.now();
    const parts = [];
    const r = source(data).pipeThrough(h.encryptStream({ recipients: [recipient], format })).getReader();
    for (;;) { const { value, done } = await r.read(); if (done) break; parts.push(value); }
    const ms = performance.now() - t0;
    cts[format] = new Blob(parts);
    return ms;
  };
  const decrypt = async (backend, format) => {
    const ct = new Uint8Array(await cts[format].arrayBuffer());
    h.cryptoBackend(backend);
    const t0 = performance.now();
    const n = await drain(source(ct).pipeThrough(h.decryptStream({ identities: [id] })));
    if (n !== TOTAL) throw new Error('short plaintext');
    return performance.now() - t0;
  };
  const raw = async () => {
    const name = 'ChaCha20-Poly1305';
    const key = await crypto.subtle.importKey('raw-secret', crypto.getRandomValues(new Uint8Array(32)), { name }, false, ['encrypt']);
    const t0 = performance.now();
    for (let off = 0, i = 0; off < TOTAL; off += 16 * 65536) {
      const batch = [];
      for (let k = 0; k < 16 && off + k * 65536 < TOTAL; k++, i++) {
        const iv = new Uint8Array(12);
        new DataView(iv.buffer).setUint32(7, i);
        batch.push(crypto.subtle.encrypt({ name, iv }, key, data.subarray(off + k * 65536, Math.min(off + (k + 1) * 65536, TOTAL))));
      }
      await Promise.all(batch);
    }
    return performance.now() - t0;
  };
  window.bench = { detected, encrypt, decrypt, raw, ua: navigator.userAgent };
  return { detected, ua: navigator.userAgent };
}`;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const rate = (ms) => TOTAL / 1e6 / (ms / 1000);

const relay = await startRelay();
const chromium = await launchChromium();
let firefox = null;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-firefox-'));
try {
  const cpage = await chromium.context.newPage();
  await cpage.goto(`${relay.http}/version`);
  const c = await cpage.evaluate(async ({ SETUP_SRC, TOTAL }) => (0, eval)(SETUP_SRC)(TOTAL), { SETUP_SRC, TOTAL });
  let fpage = null;
  let f = null;
  if (fs.existsSync(FIREFOX)) {
    firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile });
    fpage = await firefox.newPage();
    await fpage.goto(`${relay.http}/version`);
    f = await fpage.evaluate(async (SETUP_SRC, TOTAL) => (0, eval)(SETUP_SRC)(TOTAL), SETUP_SRC, TOTAL);
  }
  const onC = (expr) => () => cpage.evaluate(expr);
  const onF = (expr) => () => fpage.evaluate(expr);
  const cases = [
    [`Chromium: raw crypto.subtle ChaCha20-Poly1305 loop (64 KiB chunks, 16 per Promise.all)`, onC('window.bench.raw()')],
    [`Chromium: SDK age-rt encryptStream, ${c.detected} (default)`, onC(`window.bench.encrypt('auto', 'age-rt')`)],
    ['Chromium: SDK age-rt encryptStream, wasm cipher', onC(`window.bench.encrypt('wasm', 'age-rt')`)],
    [`Chromium: SDK age encryptStream, ${c.detected} (default)`, onC(`window.bench.encrypt('auto', 'age')`)],
    ['Chromium: SDK age encryptStream, wasm cipher', onC(`window.bench.encrypt('wasm', 'age')`)],
    [`Chromium: SDK age-rt decryptStream, ${c.detected} (default)`, onC(`window.bench.decrypt('auto', 'age-rt')`)],
    ['Chromium: SDK age-rt decryptStream, wasm cipher', onC(`window.bench.decrypt('wasm', 'age-rt')`)],
    ...(f ? [
      [`Firefox: SDK age-rt encryptStream, ${f.detected}`, onF(`window.bench.encrypt('auto', 'age-rt')`)],
      [`Firefox: SDK age encryptStream, ${f.detected}`, onF(`window.bench.encrypt('auto', 'age')`)],
      [`Firefox: SDK age-rt decryptStream, ${f.detected}`, onF(`window.bench.decrypt('auto', 'age-rt')`)],
    ] : []),
  ];
  const times = new Map(cases.map(([name]) => [name, []]));
  for (let run = 0; run < RUNS; run++) {
    for (const [name, fn] of cases) times.get(name).push(await fn());
  }
  const chromeVer = /Chrome\/(\d+)/.exec(c.ua)?.[1];
  const ffVer = f && /Firefox\/([\d.]+)/.exec(f.ua)?.[1];
  console.log(`${MB} MB in 1 MiB writes, median of ${RUNS}, Chromium ${chromeVer}${ffVer ? `, Firefox ${ffVer}` : ''}, ${os.cpus()[0].model} (${os.cpus().length} cores, shared and loaded: other jobs run)`);
  console.log('| in the page | MB/s |');
  console.log('|---|---:|');
  for (const [name] of cases) console.log(`| ${name} | ${rate(median(times.get(name))).toFixed(0)} |`);
  if (fs.existsSync(DENO)) {
    const r = spawnSync(DENO, ['run', '--no-prompt', '-A', path.join(ROOT, 'bench/lib/webcrypto-deno.mjs')], {
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', BENCH_MB: String(MB), BENCH_RUNS: String(RUNS) }, encoding: 'utf8',
    });
    const d = r.status === 0 ? JSON.parse(r.stdout.trim().split('\n').at(-1)) : null;
    if (!d) console.log(`Deno failed: ${r.stderr}`);
    else {
      console.log(`\nDeno ${d.deno}, same size and runs, age-rt:`);
      console.log('| Deno | encrypt MB/s | decrypt MB/s |');
      console.log('|---|---:|---:|');
      for (const m of ['node:crypto', 'webcrypto', 'wasm']) console.log(`| ${m}${m === 'node:crypto' ? ' (default)' : ''} | ${d[m][0]} | ${d[m][1]} |`);
    }
  }
} finally {
  await firefox?.close().catch(() => {});
  await chromium.close();
  await relay.stop();
  fs.rmSync(profile, { recursive: true, force: true });
}
