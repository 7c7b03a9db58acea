// Run by bench/webcrypto.mjs under Deno: the SDK's age-rt encryptStream / decryptStream with
// node:crypto's cipher (Deno's default), WebCrypto's (registered here by hand: the package
// keeps node:crypto where it has both) and the wasm one. Prints one JSON line of medians (MB/s).
const ROOT = new URL('../../', import.meta.url);
const sdk = await import(new URL('pkg/lib/index.js', ROOT).href);
const raw = await import(new URL('pkg/lib/httpipe_wasm.js', ROOT).href);
await sdk.init();
const s = crypto.subtle;
const name = 'ChaCha20-Poly1305';
const web = {
  name: 'webcrypto',
  importKey: (b) => s.importKey('raw-secret', b, { name }, false, ['encrypt', 'decrypt']),
  seal: (k, iv, d) => s.encrypt({ name, iv }, k, d).catch(() => null),
  open: (k, iv, d) => s.decrypt({ name, iv }, k, d).catch(() => null),
};
const MB = Number(Deno.env.get('BENCH_MB') ?? 64);
const RUNS = Number(Deno.env.get('BENCH_RUNS') ?? 5);
const TOTAL = MB * 1e6;
const data = new Uint8Array(TOTAL);
for (let i = 0; i < TOTAL; i += 65536) crypto.getRandomValues(data.subarray(i, Math.min(i + 65536, TOTAL)));
const id = sdk.generateIdentity();
const recipient = sdk.identityToRecipient(id);
const source = (bytes) => {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) { c.close(); return; }
      c.enqueue(bytes.subarray(off, off + (1 << 20)));
      off += 1 << 20;
    },
  }, { highWaterMark: 0 });
};
async function run(mode) {
  sdk.cryptoBackend(mode === 'wasm' ? 'wasm' : 'auto');
  if (mode === 'webcrypto') raw.setWebCrypto(web);
  const t0 = performance.now();
  const ct = new Uint8Array(await new Response(source(data).pipeThrough(sdk.encryptStream({ recipients: [recipient] }))).arrayBuffer());
  const t1 = performance.now();
  const pt = await new Response(source(ct).pipeThrough(sdk.decryptStream({ identities: [id] }))).arrayBuffer();
  const t2 = performance.now();
  raw.setWebCrypto(null);
  sdk.cryptoBackend('auto');
  if (pt.byteLength !== TOTAL) throw new Error('short plaintext');
  return [t1 - t0, t2 - t1];
}
const modes = ['node:crypto', 'webcrypto', 'wasm'];
const times = Object.fromEntries(modes.map((m) => [m, [[], []]]));
for (let r = 0; r < RUNS; r++) {
  for (const m of modes) { const [e, d] = await run(m); times[m][0].push(e); times[m][1].push(d); }
}
const median = (xs) => { const v = [...xs].sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
const rate = (ms) => Math.round(TOTAL / 1e6 / (ms / 1000));
console.log(JSON.stringify({ deno: Deno.version.deno, ...Object.fromEntries(modes.map((m) => [m, [rate(median(times[m][0])), rate(median(times[m][1]))]])) }));
