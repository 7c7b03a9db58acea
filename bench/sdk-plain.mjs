// The SDK's plain path vs the runtime's own fetch (issue #13: target ≥ 0.95×), through one
// httpipe-relay on loopback, in the same run, interleaved run by run:
//   Node, Deno  producer and consumer each in their own process of that runtime:
//               raw   fetch POST (streaming body, `duplex: 'half'`) → relay → fetch GET
//               SDK   send() → relay → receive()                      (bench/lib/plain-peer.mjs)
//               bare  the same with `receipt: false, resume: false` on both sides: what the
//                     delivery receipt (§12.2, hashing every byte on both sides) and the replay
//                     window (§12.3, a copy of every byte the producer sends) cost
//   Chromium    the page (headless, h2 to the relay's TLS port) sends, a Node process reads
//               with fetch GET in both cases:
//               raw   fetch POST with a ReadableStream body (`duplex: 'half'`)
//               SDK   send() in the page
// The rate is bytes / (last byte read − send started), init excluded. Medians of RUNS (default
// 3), SIZE_MIB per transfer (default 1024; Chromium CHROMIUM_MIB, default 512). MB = 10^6 bytes.
// NO_DENO=1 / NO_CHROMIUM=1 skip those. Asserts nothing; prints a Markdown table and ratios.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRelay } from '../tests/js/lib/relay.mjs';
import { median } from './lib/transfer.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1 << 20;
const SIZE = Number(process.env.SIZE_MIB || 1024) * MiB;
const CHROMIUM_SIZE = Number(process.env.CHROMIUM_MIB || 512) * MiB;
const RUNS = Number(process.env.RUNS || 3);
const PEER = path.join(ROOT, 'bench/lib/plain-peer.mjs');
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
const runtimes = {
  node: (args) => ['node', [PEER, ...args]],
  ...(process.env.NO_DENO !== '1' && fs.existsSync(DENO)
    ? { deno: (args) => [DENO, ['run', '--no-prompt', '--allow-net', '--allow-read', '--allow-env', PEER, ...args]] } : {}),
};

/** Runs a peer (`bare`: the SDK without receipt and resume); resolves its JSON line. */
function peer(runtime, [mode, ...rest]) {
  const [cmd, argv] = runtimes[runtime]([mode === 'bare' ? 'sdk' : mode, ...rest]);
  const opts = mode === 'bare' ? { PEER_OPTS: JSON.stringify({ receipt: false, resume: false }) } : {};
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', ...opts } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code !== 0 || !line) reject(new Error(`${cmd} ${args.join(' ')} → ${code}\n${err}`));
      else resolve(JSON.parse(line));
    });
  });
}

const relay = await startRelay();
const rates = {};
const add = (k, v) => { (rates[k] ??= []).push(v); };
let n = 0;
try {
  for (let run = 0; run < RUNS; run++) {
    for (const rt of Object.keys(runtimes)) {
      for (const mode of ['raw', 'sdk', 'bare']) {
        const p = `/bench/plain/${process.pid}/${++n}`;
        const recv = peer(rt, [mode, 'recv', relay.http, p]);
        await new Promise((r) => setTimeout(r, 500)); // the consumer is waiting
        const send = await peer(rt, [mode, 'send', relay.http, p, String(SIZE)]);
        const got = await recv;
        if (got.bytes !== SIZE) throw new Error(`${rt} ${mode}: ${got.bytes} of ${SIZE} bytes`);
        add(`${rt} ${mode}`, SIZE / 1e6 / ((got.t1 - send.t0) / 1000));
      }
    }
    console.error(`run ${run + 1}/${RUNS}: ${Object.entries(rates).map(([k, v]) => `${k} ${v.at(-1).toFixed(0)}`).join(', ')}`);
  }

  if (process.env.NO_CHROMIUM !== '1') {
    const { launchChromium } = await import('../tests/js/lib/demo-browser.mjs');
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(`${relay.https}/version`);
      await page.evaluate(async () => { window.httpipe = await import('/assets/pkg/index.js'); await window.httpipe.init(); });
      for (let run = 0; run < RUNS; run++) {
        for (const mode of ['raw', 'sdk']) {
          const p = `/bench/plain/${process.pid}/${++n}`;
          const recv = peer('node', ['raw', 'recv', relay.http, p]);
          await new Promise((r) => setTimeout(r, 500));
          const t0 = await page.evaluate(async ({ base, p, size, mode }) => {
            const MiB = 1 << 20;
            const big = new Uint8Array(MiB);
            const block = crypto.getRandomValues(new Uint8Array(65536));
            for (let o = 0; o < MiB; o += 65536) big.set(block, o);
            let sent = 0;
            const source = new ReadableStream({
              pull(ctrl) {
                if (sent >= size) { ctrl.close(); return; }
                const k = Math.min(MiB, size - sent);
                sent += k;
                ctrl.enqueue(big.slice(0, k));
              },
            }, { highWaterMark: 0 });
            const t = Date.now();
            if (mode === 'sdk') {
              const r = await window.httpipe.send(source, { relay: base, path: p });
              if (r.transport !== 'stream') throw new Error(`the SDK used ${r.transport}`);
            } else {
              const r = await fetch(base + p, { method: 'POST', body: source, duplex: 'half' });
              await r.arrayBuffer();
            }
            return t;
          }, { base: relay.https, p, size: CHROMIUM_SIZE, mode });
          const got = await recv;
          if (got.bytes !== CHROMIUM_SIZE) throw new Error(`chromium ${mode}: ${got.bytes} of ${CHROMIUM_SIZE} bytes`);
          add(`chromium ${mode}`, CHROMIUM_SIZE / 1e6 / ((got.t1 - t0) / 1000));
        }
        console.error(`chromium run ${run + 1}/${RUNS}: raw ${rates['chromium raw'].at(-1).toFixed(0)}, sdk ${rates['chromium sdk'].at(-1).toFixed(0)}`);
      }
    } finally { await browser.close(); }
  }
} finally {
  await relay.stop();
}

console.log(`\nplain transfers, ${SIZE / MiB} MiB (Chromium ${CHROMIUM_SIZE / MiB} MiB) per transfer, medians of ${RUNS}; ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}\n`);
console.log('| runtime | raw fetch MB/s | SDK MB/s | SDK / raw | SDK, no receipt or resume, MB/s | that / raw |\n|---|---:|---:|---:|---:|---:|');
for (const rt of [...Object.keys(runtimes), ...(rates['chromium raw'] ? ['chromium'] : [])]) {
  const raw = median(rates[`${rt} raw`]);
  const s = median(rates[`${rt} sdk`]);
  const bare = rates[`${rt} bare`] ? median(rates[`${rt} bare`]) : null;
  const b = bare === null ? '— | —' : `${bare.toFixed(0)} | ${(bare / raw).toFixed(2)}`;
  console.log(`| ${rt} | ${raw.toFixed(0)} | ${s.toFixed(0)} | ${(s / raw).toFixed(2)} | ${b} |`);
}
