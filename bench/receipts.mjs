// Delivery receipts (PROTOCOL.md §12): what a receipt costs an uncut Node → relay → Node transfer (plain and age-rt), receipt on vs `receipt: false`, interleaved in the same run.
//   node bench/receipts.mjs            # 1 GiB per transfer, 5 runs each
//   SIZE_MIB=256 RUNS=3 node bench/receipts.mjs
// Plain transfers pay XXH3-128 over every byte on both sides (a copy into wasm memory and
// ~4.8 GB/s of hashing); encrypted ones SHA-256 over the 16-byte chunk tags only. Also the time from the relay's last byte to the verified
// receipt (the receipt round trip) as send()'s extra latency on a small transfer.
// Needs pkg/ (scripts/build-sdk.sh) and the release relay.
import { startRelay } from '../tests/js/lib/relay.mjs';
import { MiB, source, childReceive, median } from './lib/transfer.mjs';

const SIZE = Number(process.env.SIZE_MIB || 1024) * MiB;
const RUNS = Number(process.env.RUNS || 5);
const sdk = await import('../pkg/index.js');
const relay = await startRelay();
let n = 0;
async function once(size, extra, receipt) {
  const path = `/bench/receipt-${process.pid}-${n++}`;
  const opts = { ...extra, ...(receipt ? {} : { receipt: false }) };
  const recv = childReceive(relay.http, path, opts);
  const t0 = performance.now();
  const report = await sdk.send(source(size), { relay: relay.http, path, ...opts });
  const ms = performance.now() - t0;
  await recv;
  if (receipt !== Boolean(report.receipt)) throw new Error(`receipt ${receipt} but report.receipt ${JSON.stringify(report.receipt)}`);
  return ms;
}

const rows = [];
try {
  for (const [name, extra] of [['plain', {}], ['age-rt', { passphrase: 'bench' }]]) {
    const on = []; const off = [];
    for (let i = 0; i < RUNS; i++) {
      // interleaved, alternating which goes first, so load drifts hit both alike
      if (i % 2) { off.push(await once(SIZE, extra, false)); on.push(await once(SIZE, extra, true)); }
      else { on.push(await once(SIZE, extra, true)); off.push(await once(SIZE, extra, false)); }
      console.error(`# ${name} run ${i + 1}/${RUNS}`);
    }
    const rate = (ms) => SIZE / 1e6 / (ms / 1000);
    rows.push([name, rate(median(off)), rate(median(on))]);
  }
  // latency: 64 KiB transfers to a consumer already waiting in this process, send()'s
  // duration with and without the receipt round trip
  const small = { on: [], off: [] };
  const inProcess = async (receipt) => {
    const path = `/bench/receipt-small-${process.pid}-${n++}`;
    const opts = receipt ? {} : { receipt: false };
    const got = sdk.receive({ relay: relay.http, path, ...opts }).then((r) => new Response(r.stream).arrayBuffer());
    await new Promise((r) => setTimeout(r, 20));
    const t0 = performance.now();
    const report = await sdk.send(source(64 * 1024), { relay: relay.http, path, ...opts });
    const ms = performance.now() - t0;
    await got;
    if (receipt !== Boolean(report.receipt)) throw new Error('receipt mismatch');
    return ms;
  };
  for (let i = 0; i < 21; i++) {
    small.off.push(await inProcess(false));
    small.on.push(await inProcess(true));
  }
  console.log(`\nhttpipe delivery receipts: ${SIZE / MiB} MiB per transfer, Node → relay → Node (consumer in its own process), median of ${RUNS}\n`);
  console.log('| transfer | receipt: false (MB/s) | receipt on (MB/s) | on / off |');
  console.log('|---|---:|---:|---:|');
  for (const [name, off, on] of rows) console.log(`| ${name} | ${off.toFixed(0)} | ${on.toFixed(0)} | ${(on / off).toFixed(2)}× |`);
  const m = (xs) => median(xs).toFixed(1);
  console.log(`\n64 KiB send() to a waiting consumer in the same process, median of 21: ${m(small.off)} ms without a receipt, ${m(small.on)} ms with (the receipt round trip: +${(median(small.on) - median(small.off)).toFixed(1)} ms)`);
} finally {
  await relay.stop();
}
