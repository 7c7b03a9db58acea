// Where ndjson.decode's time goes (the measured reason its framing stays in JS, not in the wasm
// module): for ~100-byte records in 64 KiB chunks, decoding UTF-8 and finding the line breaks
// against the whole step (with JSON.parse). A wasm splitter could only replace the line search,
// and the lines would still have to become JS strings for JSON.parse.
//   node bench/ndjson-framing.mjs        (RECORDS, default 500 000; RUNS, default 5)
const N = Number(process.env.RECORDS || 500_000);
const RUNS = Number(process.env.RUNS || 5);
let text = '';
for (let i = 0; i < N; i++) text += `${JSON.stringify({ sku: `SKU-${i}`, warehouse: 'AMS-2', qty: i % 50, price: 12.5, updated: '2026-11-30T10:00:00Z', seq: i })}\n`;
const bytes = new TextEncoder().encode(text);
const chunks = [];
for (let i = 0; i < bytes.length; i += 65536) chunks.push(bytes.subarray(i, i + 65536));

function frame(parse) {
  const td = new TextDecoder();
  let carry = '';
  let n = 0;
  for (const c of chunks) {
    const s = carry + td.decode(c, { stream: true });
    let at = 0;
    let nl;
    while ((nl = s.indexOf('\n', at)) !== -1) { const line = s.slice(at, nl); if (parse) JSON.parse(line); n++; at = nl + 1; }
    carry = s.slice(at);
  }
  return n;
}
function searchOnly() {
  let n = 0;
  for (const c of chunks) { let at = 0; let nl; while ((nl = c.indexOf(10, at)) !== -1) { n++; at = nl + 1; } }
  return n;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (fn) => { const t = performance.now(); fn(); return performance.now() - t; };
const rows = { 'byte line search only (what wasm could take over)': [], 'UTF-8 decode + line split': [], 'ndjson.decode work (+ JSON.parse)': [] };
for (let r = 0; r < RUNS; r++) {
  rows['byte line search only (what wasm could take over)'].push(time(searchOnly));
  rows['UTF-8 decode + line split'].push(time(() => frame(false)));
  rows['ndjson.decode work (+ JSON.parse)'].push(time(() => frame(true)));
}
const whole = median(rows['ndjson.decode work (+ JSON.parse)']);
console.log(`${N} records, ${(bytes.length / 1e6).toFixed(1)} MB, median of ${RUNS}, node ${process.version}`);
console.log('| part | ms | share of ndjson.decode |\n|---|---:|---:|');
for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${median(v).toFixed(0)} | ${(median(v) / whole).toFixed(2)} |`);
