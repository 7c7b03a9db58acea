// SDK throughput benchmark: Node producer → relay → Node consumer (plain and age-rt encrypted)
// next to curl → relay → curl in the same run, the wasm encrypt rate without network, and
// headless Chromium → relay (h2) → Node. Prints medians in MB/s and the ratios.
//   node bench/sdk.mjs            # 2 GiB per transfer, 3 runs each
//   SIZE_MIB=512 RUNS=1 node bench/sdk.mjs
// Targets (issue 4): plain SDK ≥ 0.6× curl; encrypted ≥ 0.8× the wasm encrypt rate.
// Needs pkg/ (scripts/build-sdk.sh) and target/release/httpipe-relay.
import { spawn } from 'node:child_process';
import { startRelay } from '../tests/js/lib/relay.mjs';
import { launchChromium } from '../tests/js/lib/demo-browser.mjs';
import { MiB, source, childReceive, median } from './lib/transfer.mjs';

const SIZE = Number(process.env.SIZE_MIB || 2048) * MiB;
const CHROMIUM_SIZE = Number(process.env.CHROMIUM_MIB || Math.min(1024, SIZE / MiB)) * MiB;
const RUNS = Number(process.env.RUNS || 3);
const sdk = await import('../pkg/index.js');

async function drain(stream) {
  let n = 0;
  for await (const c of stream) n += c.byteLength;
  return n;
}

const mbps = (bytes, ms) => bytes / 1e6 / (ms / 1000);

async function timed(fn) {
  const rates = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const bytes = await fn(i);
    rates.push(mbps(bytes, performance.now() - t0));
  }
  return median(rates);
}

function sh(cmd) {
  return new Promise((resolve, reject) => {
    const p = spawn('sh', ['-c', cmd], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} → ${code}`))));
  });
}

const relay = await startRelay();
const results = [];
try {
  const curl = await timed(async (i) => {
    const url = `${relay.http}/bench/curl-${i}`;
    const recv = sh(`curl -sS ${url} | wc -c`);
    await sh(`head -c ${SIZE} /dev/zero | curl -sS -T - ${url} > /dev/null`);
    return Number((await recv).trim());
  });
  results.push(['curl → relay → curl', curl]);
  console.error('# done: curl → relay → curl');

  const plain = await timed(async (i) => {
    const path = `/bench/sdk-${i}`;
    const recv = childReceive(relay.http, path);
    await sdk.send(source(SIZE), { relay: relay.http, path });
    return recv;
  });
  results.push(['SDK → relay → SDK (plain)', plain]);
  console.error('# done: SDK → relay → SDK (plain)');

  const encRate = await timed(() => drain(source(SIZE).pipeThrough(sdk.encryptStream({ passphrase: 'bench' }))).then(() => SIZE));
  results.push(['wasm age-rt encrypt (no network)', encRate]);
  console.error('# done: wasm age-rt encrypt (no network)');

  const enc = await timed(async (i) => {
    const path = `/bench/sdk-enc-${i}`;
    const recv = childReceive(relay.http, path, { passphrase: 'bench' });
    await sdk.send(source(SIZE), { relay: relay.http, path, passphrase: 'bench' });
    return recv;
  });
  results.push(['SDK → relay → SDK (age-rt)', enc]);
  console.error('# done: SDK → relay → SDK (age-rt)');

  let chromium = null;
  if (process.env.NO_CHROMIUM !== '1') {
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(`${relay.https}/version`);
      await page.evaluate(async () => { window.httpipe = await import('/assets/pkg/index.js'); await window.httpipe.init(); });
      chromium = await timed(async (i) => {
        const path = `/bench/chromium-${i}`;
        const recv = childReceive(relay.http, path);
        const report = await page.evaluate(async ({ relayUrl, path, size }) => {
          const block = crypto.getRandomValues(new Uint8Array(65536));
          let sent = 0;
          const src = new ReadableStream({
            pull(ctrl) {
              if (sent >= size) { ctrl.close(); return; }
              const n = Math.min(1 << 20, size - sent);
              const b = new Uint8Array(n);
              for (let o = 0; o < n; o += 65536) b.set(block.subarray(0, Math.min(65536, n - o)), o);
              sent += n;
              ctrl.enqueue(b);
            },
          }, { highWaterMark: 0 });
          return window.httpipe.send(src, { relay: relayUrl, path });
        }, { relayUrl: relay.https, path, size: CHROMIUM_SIZE });
        if (report.transport !== 'stream') throw new Error(`chromium used ${report.transport}`);
        return recv;
      });
      results.push(['Chromium → relay (h2) → SDK', chromium]);
  console.error('# done: Chromium → relay (h2) → SDK');
    } finally { await browser.close(); }
  }

  console.log(`\nhttpipe SDK benchmark: ${SIZE / MiB} MiB per transfer (Chromium ${CHROMIUM_SIZE / MiB} MiB), median of ${RUNS} run(s), MB/s\n`);
  console.log('| path | MB/s |');
  console.log('|---|---:|');
  for (const [name, rate] of results) console.log(`| ${name} | ${rate.toFixed(0)} |`);
  console.log(`\nratios: SDK plain / curl = ${(plain / curl).toFixed(2)} (target ≥ 0.6); SDK age-rt / wasm encrypt = ${(enc / encRate).toFixed(2)} (target ≥ 0.8)` +
    (chromium ? `; Chromium h2 / curl = ${(chromium / curl).toFixed(2)}` : ''));
} finally {
  await relay.stop();
}
