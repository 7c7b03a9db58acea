// Memory of a transfer (issue #27 item 4): each side's peak RSS above its RSS after import and
// `init()`, for one send() → relay → receive() at the defaults (receipt and resume on), plain
// and age-rt to an X25519 recipient, in Node and Deno, producer and consumer in their own
// processes, through one httpipe-relay (release) on loopback. The source is stdin
// (`head -c SIZE /dev/zero`), the consumer writes to stdout (`wc -c`) with backpressure: what a
// shell pipeline through the SDK holds. (Node's Writable.toWeb(process.stdout) does not wait
// for the pipe: the consumer then held +275 MB for 1 GiB, plain, the adapter's queue.) Peak RSS: Node's `process.resourceUsage().maxRSS`, Deno's
// `/proc/self/status` VmHWM (the same kernel figure). The target is ≤ 100 MB. A first row per
// runtime moves the same bytes with the runtime's own fetch (a streaming POST and a GET on the
// relay's data API, no rendezvous), the chunks passing through JavaScript as the SDK's do (an
// identity TransformStream: Deno otherwise pipes stdin into fetch, and fetch into stdout,
// without them, +4 MB): what the runtime itself holds.
// SIZE_MIB (default 1024), RUNS (default 1; medians), NO_DENO=1, NO_NODE=1, OPTS='{...}' (extra
// send/receive options). Asserts nothing.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startReleaseRelay } from './lib/release-relay.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SIZE = Number(process.env.SIZE_MIB || 1024) * 1024 * 1024;
const RUNS = Number(process.env.RUNS || 1);
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
const PKG = path.join(ROOT, 'pkg/index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-mem-'));

// Shared by both runtimes: stdin / stdout as web streams, peak RSS from the kernel.
const COMMON = `
const deno = globalThis.Deno;
const sdk = await import(${JSON.stringify(PKG)});
await sdk.init();
const readStatus = deno ? () => deno.readTextFileSync('/proc/self/status')
  : ((fs) => () => fs.readFileSync('/proc/self/status', 'utf8'))(await import('node:fs'));
const kb = (field) => Number(new RegExp(field + ':\\\\s+(\\\\d+)').exec(readStatus())[1]) * 1024;
const base = kb('VmRSS');
const [relay, path, key] = deno ? deno.args : process.argv.slice(2);
// OPTS: extra send/receive options as JSON (experiments, e.g. {"resume":false})
const opts = JSON.parse((deno ? deno.env.get('OPTS') : process.env.OPTS) || '{}');
const report = () => (deno ? deno.stderr.writeSync(new TextEncoder().encode(JSON.stringify({ base, peak: kb('VmHWM') }) + '\\n'))
  : process.stderr.write(JSON.stringify({ base, peak: kb('VmHWM') }) + '\\n'));
`;
fs.writeFileSync(path.join(tmp, 'producer.mjs'), `${COMMON}
const stdin = deno ? deno.stdin.readable : (await import('node:stream')).Readable.toWeb(process.stdin);
if (key === 'raw') {
  // through a TransformStream: chunks in JavaScript as the SDK has them (Deno pipes a resource
  // into fetch without them otherwise)
  const r = await fetch(relay + path, { method: 'POST', body: stdin.pipeThrough(new TransformStream()), duplex: 'half' });
  await r.arrayBuffer();
} else await sdk.send(stdin, { relay, path, ...opts, ...(key === '-' ? {} : { recipients: [sdk.identityToRecipient(key)] }) });
report();
`);
fs.writeFileSync(path.join(tmp, 'consumer.mjs'), `${COMMON}
const body = key === 'raw' ? (await fetch(relay + path)).body.pipeThrough(new TransformStream())
  : (await sdk.receive({ relay, path, ...opts, ...(key === '-' ? {} : { identities: [key] }) })).stream;
if (deno) await body.pipeTo(deno.stdout.writable);
else {
  // Node: write with backpressure (Writable.toWeb(process.stdout) buffered: +275 MB for 1 GiB)
  const { once } = await import('node:events');
  for await (const c of body) if (!process.stdout.write(c)) await once(process.stdout, 'drain');
}
report();
`);

function sh(cmd) {
  return new Promise((resolve) => {
    const p = spawn('sh', ['-c', cmd], { env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const grown = (text) => {
  const m = /\{"base":(\d+),"peak":(\d+)\}/.exec(text);
  return m ? (Number(m[2]) - Number(m[1])) / 1e6 : NaN;
};

const { relay, base } = await startReleaseRelay();
const { generateIdentity } = await import(PKG);
const identity = generateIdentity();
const runtimes = process.env.NO_NODE === '1' ? {} : { node: (f) => `node ${f}` };
if (process.env.NO_DENO !== '1' && fs.existsSync(DENO)) runtimes.deno = (f) => `${DENO} run --no-prompt --allow-all ${f}`;
const rows = {};
let n = 0;
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [rt, cmd] of Object.entries(runtimes)) {
      for (const [kind, key] of [['the runtime\'s fetch, no SDK (the floor)', 'raw'], ['plain', '-'], ['age-rt, X25519', identity]]) {
        const q = `/bench/mem/${process.pid}/${++n}`;
        const consumer = sh(`${cmd(path.join(tmp, 'consumer.mjs'))} ${base} ${q} ${key} | wc -c`);
        await new Promise((r) => setTimeout(r, 500));
        const producer = await sh(`head -c ${SIZE} /dev/zero | ${cmd(path.join(tmp, 'producer.mjs'))} ${base} ${q} ${key}`);
        const c = await consumer;
        if (producer.code || c.code || Number(c.stdout.trim()) !== SIZE) {
          console.error(`${rt} ${kind}: exit ${producer.code}/${c.code}, ${c.stdout.trim()} bytes\n${producer.stderr}\n${c.stderr}`);
          continue;
        }
        const r = (rows[`${rt} | ${kind}`] ||= { p: [], c: [] });
        r.p.push(grown(producer.stderr));
        r.c.push(grown(c.stderr));
        console.error(`run ${run + 1}: ${rt} ${kind}: producer +${r.p.at(-1).toFixed(0)} MB, consumer +${r.c.at(-1).toFixed(0)} MB`);
      }
    }
  }
} finally {
  relay.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`\n${SIZE >> 20} MiB per transfer, peak RSS above import + init (MB = 10^6 bytes), medians of ${RUNS}; load ${os.loadavg()[0].toFixed(1)}\n`);
console.log('| runtime | transfer | producer | consumer |\n|---|---|---:|---:|');
for (const [k, r] of Object.entries(rows)) console.log(`| ${k} | +${median(r.p).toFixed(0)} MB | +${median(r.c).toFixed(0)} MB |`);
