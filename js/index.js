// @ts-self-types="./index.d.ts"
// httpipe entry for browsers, Web Workers, Node ≥ 20 and Deno. The wasm module loads
// automatically: synchronously at import in Node and Deno (from the package directory),
// on first use in browsers (or explicitly: `await init()` / `await init(urlOrModule)`).
import { initSync } from './httpipe_wasm.js';
import { setLoader, markInitialised } from './api.js';

export * from './api.js';
export * from './pipeline/index.js';

const wasmUrl = new URL('./httpipe_wasm_bg.wasm', import.meta.url);

function readLocalSync() {
  if (wasmUrl.protocol !== 'file:') return null;
  if (typeof globalThis.Deno !== 'undefined' && typeof globalThis.Deno.readFileSync === 'function') {
    return globalThis.Deno.readFileSync(wasmUrl);
  }
  const proc = globalThis.process;
  if (proc && proc.versions && proc.versions.node && typeof proc.getBuiltinModule === 'function') {
    return proc.getBuiltinModule('fs').readFileSync(wasmUrl);
  }
  return null;
}

async function readLocal() {
  const sync = readLocalSync();
  if (sync) return sync;
  if (wasmUrl.protocol === 'file:') {
    const fsName = 'node:fs/promises';
    const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
    return fs.readFile(wasmUrl);
  }
  return wasmUrl;
}

setLoader(readLocal);

try {
  const bytes = readLocalSync();
  if (bytes) {
    initSync({ module: bytes });
    markInitialised();
  }
} catch {
  // Fall back to asynchronous loading on first use.
}
