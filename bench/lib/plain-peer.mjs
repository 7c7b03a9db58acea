// One side of a plain transfer for bench/sdk-plain.mjs, in Node or Deno (the same file):
//   <runtime> plain-peer.mjs raw|sdk send <relay> <path> <bytes>
//   <runtime> plain-peer.mjs raw|sdk recv <relay> <path>
// `raw`: the runtime's own fetch (a streaming POST with `duplex: 'half'`, a GET read to its
// end); `sdk`: send() / receive() from pkg/. The source is 1 MiB copies of one random block
// (as bench/lib/transfer.mjs). Prints one JSON line: {"t0": ms, "t1": ms, "bytes": n}, where
// t0 is when the send started (after init) and t1 when the last byte was read (Date.now(): the
// parent compares them across processes on one machine).
const [mode, role, relay, path, size] = (globalThis.Deno ? Deno.args : process.argv.slice(2));
const MiB = 1 << 20;
const say = (o) => console.log(JSON.stringify(o));
const sdk = mode === 'sdk' ? await import('../../pkg/index.js') : null;
// PEER_OPTS: extra send/receive options as JSON (experiments, e.g. {"receipt":false})
const env = (k) => (globalThis.Deno ? Deno.env.get(k) : process.env[k]);
const extra = JSON.parse(env('PEER_OPTS') || '{}');
if (sdk) await sdk.init();

if (role === 'send') {
  const total = Number(size);
  const block = crypto.getRandomValues(new Uint8Array(MiB).subarray(0, 65536));
  const big = new Uint8Array(MiB);
  for (let o = 0; o < MiB; o += 65536) big.set(block, o);
  let sent = 0;
  const source = new ReadableStream({
    pull(ctrl) {
      if (sent >= total) { ctrl.close(); return; }
      const n = Math.min(MiB, total - sent);
      sent += n;
      ctrl.enqueue(big.slice(0, n));
    },
  }, { highWaterMark: 0 });
  const t0 = Date.now();
  if (sdk) {
    await sdk.send(source, { relay, path, ...extra });
  } else {
    const r = await fetch(relay + path, { method: 'POST', body: source, duplex: 'half' });
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`POST ${r.status}`);
  }
  say({ t0, t1: Date.now(), bytes: total });
} else {
  const t0 = Date.now();
  let bytes = 0;
  const body = sdk ? (await sdk.receive({ relay, path, ...extra })).stream : (await fetch(relay + path)).body;
  for await (const c of body) bytes += c.byteLength;
  say({ t0, t1: Date.now(), bytes });
}
