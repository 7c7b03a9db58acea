// CSV decode/encode throughput of the pipeline's csv steps (issue #9), in one Node run:
//   node bench/csv.mjs [MB=100] [runs=5]
// Needs pkg/ (scripts/build-sdk.sh; release build for numbers). Rows of ~100 bytes, 5 columns,
// some quoted fields with commas, doubled quotes and newlines, pushed in 64 KiB chunks, one
// chunk per push() as a fetch body would come; rows are counted and dropped.
// Decoders measured:
//   js          a JS state machine over the text of a fatal TextDecoder, field-level fast path
//               (cached indexOf of LF, CR, quote, delimiter): bench/csv-js-decoder.mjs
//   wasm        the shipped csvDecoder (js/pipeline/csv.js): Rust csv-core in the wasm module
//               (src/wasm/csv.rs, + the strict quote check), field bytes and ends (UTF-16 units)
//               crossing as views into wasm memory, one TextDecoder per chunk
//   (both build rows the same way: the same unrolled row-object builder)
//   csv-parse   npm csv-parse (sans-IO `transform` API), reference only, if installed where
//   papaparse   Node resolves it or in $CSV_REF_MODULES, a node_modules folder (papaparse: the
//               whole text at once, not streamed). Not dependencies of the package: e.g.
//               `npm install --prefix /tmp/ref csv-parse papaparse`, CSV_REF_MODULES=/tmp/ref/node_modules
// Medians of `runs`, the decoders interleaved in each round; wall-clock and CPU time (the
// machine is shared: CPU time is the steadier figure); "vs js": the median of each round's
// CPU-time ratio to `js` (the references: to js's median).
// CSV_BENCH_ONLY=js,wasm picks decoders by name prefix.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import '../pkg/lib/index.js';
import { csvDecoder, csvEncoder } from '../pkg/lib/pipeline/csv.js';
import { csvDecoder as jsDecoder } from './csv-js-decoder.mjs';

const MB = Number(process.argv[2] || 100);
const RUNS = Number(process.argv[3] || 5);
const CHUNK = 64 * 1024;

// ---- data ------------------------------------------------------------------------------------
let seed = 42;
const rnd = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32;
};
const pick = (a) => a[Math.floor(rnd() * a.length)];
const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa'.split(' ');
const CITIES = ['Berlin', 'Lisbon', 'Oslo', 'Madrid', 'Vienna', 'Dublin', '"Portland, OR"', '"Paris, TX"'];
// The same quoting as CITIES (2 in 8 quoted), non-ASCII text.
const CITIES_UTF8 = ['Zürich', 'Kraków', 'São Paulo', 'Malmö', 'Göteborg', 'Αθήνα', '"Łódź, PL"', '"東京, JP"'];

function makeCsv(bytes, utf8) {
  const enc = new TextEncoder();
  const parts = ['id,name,city,amount,note\r\n'];
  let size = parts[0].length;
  let rows = 0;
  while (size < bytes) {
    const id = String(10000000 + rows);
    const name = `customer-${Math.floor(rnd() * 0xffffff).toString(16).padStart(6, '0')}`;
    const city = utf8 && rnd() < 0.3 ? pick(CITIES_UTF8) : pick(CITIES);
    const amount = (rnd() * 100000).toFixed(2);
    let note = Array.from({ length: 5 }, () => pick(WORDS)).join(' ');
    while (note.length < 42) note += ` ${pick(WORDS)}`;
    const r = rnd();
    if (r < 0.05) note = `"${note.slice(0, 20)}\r\n""quoted"" ${note.slice(20, 34)}"`;
    else if (r < 0.15) note = `"${note.slice(0, 24)}, ${note.slice(24, 40)}"`;
    const line = `${id},${name},${city},${amount},${note}\r\n`;
    parts.push(line);
    size += enc.encode(line).length;
    rows++;
  }
  const all = enc.encode(parts.join(''));
  const chunks = [];
  for (let i = 0; i < all.length; i += CHUNK) chunks.push(all.subarray(i, i + CHUNK));
  return { all, chunks, rows };
}

// ---- decoders --------------------------------------------------------------------------------
function runTransformer(t, chunks) {
  let n = 0;
  for (const c of chunks) n += t.push([c]).length;
  return n + t.end().length;
}

async function reference(name) {
  const dirs = [process.env.CSV_REF_MODULES].filter(Boolean);
  try {
    return createRequire(import.meta.url).resolve(name);
  } catch {
    for (const d of dirs) {
      try {
        return createRequire(`${d}/`).resolve(name);
      } catch { /* next */ }
    }
  }
  return null;
}

const decoders = [
  ['js', (chunks) => runTransformer(jsDecoder(), chunks)],
  ['wasm (shipped)', (chunks) => runTransformer(csvDecoder(), chunks)],
];
// The references run in rounds of their own after js and wasm (their garbage, e.g. papaparse's
// whole result, would otherwise weigh on the next decoder's GC).
const references = [];
const csvParsePath = await reference('csv-parse');
if (csvParsePath) {
  // The sans-IO core behind csv-parse's stream and sync APIs.
  const api = await import(pathToFileURL(csvParsePath.replace(/dist\/cjs\/index\.cjs$/, 'lib/api/index.js')).href);
  references.push(['csv-parse', (chunks) => {
    const p = api.transform({ columns: true, bom: true });
    let n = 0;
    const push = () => { n++; };
    for (const c of chunks) {
      const err = p.parse(Buffer.from(c.buffer, c.byteOffset, c.byteLength), false, push, () => {});
      if (err) throw err;
    }
    const err = p.parse(undefined, true, push, () => {});
    if (err) throw err;
    return n;
  }]);
}
const papaPath = await reference('papaparse');
if (papaPath) {
  const Papa = (await import(pathToFileURL(papaPath).href)).default;
  references.push(['papaparse (whole text)', (chunks, all) => {
    const r = Papa.parse(new TextDecoder().decode(all), { header: true, skipEmptyLines: true });
    if (r.errors.length) throw new Error(JSON.stringify(r.errors[0]));
    return r.data.length;
  }]);
}

// ---- measure ---------------------------------------------------------------------------------
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x, d = 0, w = 8) => x.toFixed(d).padStart(w);

// Wall-clock and CPU time (user + system of the process: GC threads included) of each run.
function timed(f) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = f();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { result, wall, cpu: (c.user + c.system) / 1000 };
}

function measure(data, impls, runs = RUNS) {
  // Warm-up (not counted): the JIT compiles each decoder before the first measured run.
  const part = { chunks: data.chunks.slice(0, Math.ceil(data.chunks.length / 10)) };
  for (const [, f] of impls) {
    try {
      f(part.chunks, data.all.subarray(0, part.chunks.length * CHUNK));
    } catch { /* the last row is cut short */ }
  }
  const wall = impls.map(() => []);
  const cpu = impls.map(() => []);
  for (let run = 0; run < runs; run++) {
    // Alternate the order: a round's second decoder runs in the first one's GC aftermath.
    const order = impls.map((_, i) => i);
    if (run % 2) order.reverse();
    for (const i of order) {
      const [name, f] = impls[i];
      const t = timed(() => f(data.chunks, data.all));
      if (t.result !== data.rows) throw new Error(`${name}: ${t.result} rows, expected ${data.rows}`);
      wall[i].push(t.wall);
      cpu[i].push(t.cpu);
    }
  }
  // "vs js": the median of the rounds' CPU-time ratios (paired: drift of the machine cancels).
  const ratio = impls.map((_, i) => median(cpu[0].map((c0, r) => c0 / cpu[i][r])));
  return { wall: wall.map(median), cpu: cpu.map(median), ratio };
}

const HEAD = `${'implementation'.padEnd(24)}${'wall ms'.padStart(9)}${'MB/s'.padStart(7)}${'Mrows/s'.padStart(9)}${'cpu ms'.padStart(9)}${'MB/s'.padStart(7)}${'vs js'.padStart(7)}`;
function line(name, wallMs, cpuMs, bytes, rows, ratio) {
  const rate = (ms) => bytes / 1e6 / (ms / 1e3);
  return `${name.padEnd(24)}${fmt(wallMs, 0, 9)}${fmt(rate(wallMs), 0, 7)}${fmt(rows / 1e6 / (wallMs / 1e3), 2, 9)}`
    + `${fmt(cpuMs, 0, 9)}${fmt(rate(cpuMs), 0, 7)}${fmt(ratio, 2, 7)}`;
}

function table(title, data, impls, m) {
  console.log(`\n${title}: ${(data.all.length / 1e6).toFixed(1)} MB, ${data.rows} rows, medians of ${RUNS} (references: of ${Math.min(RUNS, 3)})`);
  console.log(HEAD);
  impls.forEach(([name], i) => console.log(line(name, m.wall[i], m.cpu[i], data.all.length, data.rows, m.ratio[i])));
}

if (process.env.CSV_BENCH_ONLY) {
  const only = process.env.CSV_BENCH_ONLY.split(',');
  for (const list of [decoders, references]) {
    for (let i = list.length - 1; i >= 0; i--) if (!only.some((o) => list[i][0].startsWith(o))) list.splice(i, 1);
  }
}
console.log(`node ${process.version}; decoders: ${[...decoders, ...references].map((d) => d[0]).join(', ')}`);
for (const [title, utf8] of [['decode, ASCII', false], ['decode, 30% of rows with a non-ASCII city', true]]) {
  const data = makeCsv(MB * 1e6, utf8);
  const m = measure(data, decoders);
  if (references.length) {
    const r = measure(data, references, Math.min(RUNS, 3));
    m.wall.push(...r.wall);
    m.cpu.push(...r.cpu);
    m.ratio.push(...r.cpu.map((c) => m.cpu[0] / c));
  }
  table(title, data, [...decoders, ...references], m);
}

// ---- encode ----------------------------------------------------------------------------------
// What any encoder must do at least: get every field's text into bytes (a wasm encoder would
// have to TextEncoder the fields into its memory before quoting them there). "floor" is that:
// the fields joined with commas, no quoting decisions, one TextEncoder.encode per batch.
{
  const data = makeCsv(MB * 1e6, false);
  const records = [];
  const d = csvDecoder();
  for (const c of data.chunks) for (const r of d.push([c])) records.push(r);
  for (const r of d.end()) records.push(r);
  const BATCH = 1000;
  const te = new TextEncoder();
  const encoders = [
    ['js csvEncoder', () => {
      const e = csvEncoder();
      let bytes = 0;
      for (let i = 0; i < records.length; i += BATCH) bytes += e.push(records.slice(i, i + BATCH))[0].length;
      return bytes;
    }],
    ['floor: join + encode', () => {
      let bytes = 0;
      for (let i = 0; i < records.length; i += BATCH) {
        let s = '';
        for (const r of records.slice(i, i + BATCH)) s += `${r.id},${r.name},${r.city},${r.amount},${r.note}\r\n`;
        bytes += te.encode(s).length;
      }
      return bytes;
    }],
  ];
  const wall = encoders.map(() => []);
  const cpu = encoders.map(() => []);
  let outBytes = 0;
  for (let run = 0; run < RUNS; run++) {
    encoders.forEach(([, f], i) => {
      const t = timed(f);
      wall[i].push(t.wall);
      cpu[i].push(t.cpu);
      if (i === 0) outBytes = t.result;
    });
  }
  console.log(`\nencode: ${records.length} records (objects) in batches of ${BATCH} → ${(outBytes / 1e6).toFixed(1)} MB, medians of ${RUNS}`);
  console.log(HEAD);
  const cpuMs = cpu.map(median);
  encoders.forEach(([name], i) => console.log(line(name, median(wall[i]), cpuMs[i], outBytes, records.length, median(cpu[0].map((c0, r) => c0 / cpu[i][r])))));
}
