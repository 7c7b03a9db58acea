// Resume after a break (PROTOCOL.md §12.3): what resume support costs an uncut Node → relay →
// Node transfer (the replay window's bookkeeping), `resume` on vs `resume: false`, interleaved
// in the same run; and how long a cut stops the bytes: the longest pause the receiver sees in
// a transfer whose producer connection a TCP proxy cuts once (median of 20).
//   node bench/resume.mjs              # 2 GiB per transfer, 3 runs each
//   SIZE_MIB=512 RUNS=3 CUTS=20 node bench/resume.mjs
// Needs pkg/ (scripts/build-sdk.sh) and the release relay.
import { startRelay } from '../tests/js/lib/relay.mjs';
import { cutProxy } from '../tests/js/lib/cut-proxy.mjs';
import { MiB, source, childReceive, median } from './lib/transfer.mjs';

const SIZE = Number(process.env.SIZE_MIB || 2048) * MiB;
const RUNS = Number(process.env.RUNS || 3);
const CUTS = Number(process.env.CUTS || 20);
const sdk = await import('../pkg/index.js');
const relay = await startRelay();
let n = 0;
async function once(resume) {
  const path = `/bench/resume-${process.pid}-${n++}`;
  const opts = { resume };
  const recv = childReceive(relay.http, path, opts);
  const t0 = performance.now();
  await sdk.send(source(SIZE), { relay: relay.http, path, ...opts });
  const ms = performance.now() - t0;
  await recv;
  return ms;
}

/** One 64 MiB transfer cut at 24 MiB: the longest gap between two chunks at the receiver. */
async function cutGap() {
  const proxy = await cutProxy(Number(new URL(relay.http).port));
  proxy.cutAt(24 * MiB);
  const path = `/bench/resume-cut-${process.pid}-${n++}`;
  try {
    const sent = sdk.send(source(64 * MiB), { relay: proxy.url, path, resume: true });
    const r = await sdk.receive({ relay: relay.http, path, resume: true });
    let last = performance.now();
    let gap = 0;
    for await (const _ of r.stream) {
      const now = performance.now();
      gap = Math.max(gap, now - last);
      last = now;
    }
    const report = await sent;
    if (report.resumes !== 1) throw new Error(`expected 1 resume, got ${report.resumes}`);
    return gap;
  } finally {
    await proxy.close();
  }
}

try {
  const on = []; const off = [];
  for (let i = 0; i < RUNS; i++) {
    // interleaved, alternating which goes first, so load drifts hit both alike
    if (i % 2) { off.push(await once(false)); on.push(await once(true)); }
    else { on.push(await once(true)); off.push(await once(false)); }
    console.error(`# run ${i + 1}/${RUNS}`);
  }
  const gaps = [];
  for (let i = 0; i < CUTS; i++) gaps.push(await cutGap());
  const rate = (ms) => SIZE / 1e6 / (ms / 1000);
  console.log(`\nhttpipe resume: ${SIZE / MiB} MiB per uncut transfer, Node → relay → Node (consumer in its own process), plain, median of ${RUNS}\n`);
  console.log('| transfer | resume: false (MB/s) | resume on (MB/s) | on / off |');
  console.log('|---|---:|---:|---:|');
  console.log(`| plain | ${rate(median(off)).toFixed(0)} | ${rate(median(on)).toFixed(0)} | ${(median(off) / median(on)).toFixed(2)}× |`);
  const sorted = [...gaps].sort((a, b) => a - b);
  console.log(`\nA cut of the producer's connection (64 MiB transfer, cut at 24 MiB through a TCP proxy): the receiver's longest pause, median of ${CUTS}: ${median(gaps).toFixed(0)} ms (min ${sorted[0].toFixed(0)}, max ${sorted.at(-1).toFixed(0)})`);
} finally {
  await relay.stop();
}
