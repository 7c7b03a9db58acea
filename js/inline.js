// @ts-self-types="./index.d.ts"
// httpipe entry with the wasm module inside the JavaScript, for bundlers that don't emit
// `new URL('./httpipe_wasm_bg.wasm', import.meta.url)` as an asset (esbuild, Rollup without a
// plugin) and for any output format (also esbuild's default IIFE): no file to copy, nothing to
// configure. The same API as the main entry (`import { send } from 'httpipe/inline'`).
// The module is stored gzip-compressed as base64 (httpipe_wasm_inline.js, written by
// scripts/build-sdk.sh and bundled into the shipped inline.js): as many bytes over the wire as
// the separate .wasm file (docs/sdk.md has the sizes). Browsers decompress it on first use
// (DecompressionStream) or at `await init()`; Node loads it synchronously at import (zlib).
import { initSync } from './httpipe_wasm.js';
import { setLoader, markInitialised, setXWingLoader } from './loader.js';
import wasmGzipBase64 from './httpipe_wasm_inline.js';
import xwingGzipBase64 from './httpipe_xwing_inline.js';

export * from './api.js';
export * from './pipeline/index.js';

const where = 'the wasm module inlined in httpipe/inline';

function fromBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function inflate(gzipBase64) {
  if (typeof DecompressionStream !== 'function') {
    throw new Error('this runtime has no DecompressionStream to unpack it: use the main entry (\'httpipe\') and serve httpipe_wasm_bg.wasm');
  }
  const gz = new Blob([fromBase64(gzipBase64)]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(gz).arrayBuffer());
}

let failure = null;
const proc = globalThis.process;
const nodeZlib = proc && proc.versions && proc.versions.node && typeof proc.getBuiltinModule === 'function'
  ? proc.getBuiltinModule('zlib') : null;
if (nodeZlib) {
  try {
    initSync({ module: nodeZlib.gunzipSync(fromBase64(wasmGzipBase64)) });
    markInitialised();
  } catch (e) {
    failure = e; // reported by generateIdentity(); init() tries again asynchronously
  }
}
// The post-quantum module is inlined the same way (api.js loads it when a post-quantum key is used).
const xwingWhere = 'the post-quantum module inlined in httpipe/inline';
const read = (source) => (source === where ? inflate(wasmGzipBase64) : source === xwingWhere ? inflate(xwingGzipBase64) : source);
setLoader({ where, read, failure });
setXWingLoader({
  where: xwingWhere,
  now: () => (nodeZlib ? nodeZlib.gunzipSync(fromBase64(xwingGzipBase64)) : null),
});
