// @ts-self-types="./index.d.ts"
// httpipe entry for browsers, Web Workers, Node ≥ 20 and Deno. The wasm module loads
// automatically: synchronously at import in Node and Deno (from the package directory),
// on first use in browsers (or explicitly: `await init()` / `await init(urlOrModule)`).
// A module that can't be loaded rejects init() (and every async function) with an
// HttpipeError WASM_LOAD_FAILED naming the URL it tried.
import { initSync } from './httpipe_wasm.js';
import { setLoader, markInitialised, setXWingLoader } from './loader.js';

export * from './api.js';
export * from './pipeline/index.js';

// Bundlers that understand this pattern (Vite, webpack 5, Next.js, Parcel) emit the file and
// rewrite the URL; the others (esbuild, Rollup) leave it resolved against the bundle's own URL:
// see "Bundlers" in the README (httpipe/inline carries the module inside the JavaScript).
// A bundle without import.meta.url (esbuild's default IIFE, CommonJS) gets no URL at all: the
// import must not throw, init() says what to do.
const NO_URL = 'httpipe_wasm_bg.wasm';
const XWING_NO_URL = 'httpipe_xwing_bg.wasm';
let wasmUrl = null;
try {
  wasmUrl = new URL('./httpipe_wasm_bg.wasm', import.meta.url);
} catch {
  wasmUrl = null;
}
// The post-quantum module (api.js loads it when a post-quantum key is used), found the same way.
let xwingUrl = null;
try {
  xwingUrl = new URL('./httpipe_xwing_bg.wasm', import.meta.url);
} catch {
  xwingUrl = null;
}

function fileUrl(source) {
  if (typeof source !== 'string' && !(source instanceof URL)) return null;
  try {
    const url = new URL(source);
    return url.protocol === 'file:' ? url : null;
  } catch {
    return null; // a relative URL: the runtime's fetch resolves it
  }
}

function readFileSync(url) {
  if (typeof globalThis.Deno !== 'undefined' && typeof globalThis.Deno.readFileSync === 'function') {
    return globalThis.Deno.readFileSync(url);
  }
  const proc = globalThis.process;
  if (proc && proc.versions && proc.versions.node && typeof proc.getBuiltinModule === 'function') {
    return proc.getBuiltinModule('fs').readFileSync(url);
  }
  return null;
}

// Node and Deno read file: URLs from disk (their fetch can't); anything else is fetched.
const noUrl = () => new Error('this bundle has no import.meta.url to locate it by (esbuild --format=iife or cjs?): '
  + 'import from \'httpipe/inline\' (the module inside the JavaScript), or bundle as ESM');

async function read(source) {
  if ((wasmUrl === null && source === NO_URL) || (xwingUrl === null && source === XWING_NO_URL)) throw noUrl();
  const url = fileUrl(source);
  if (!url) return source;
  const sync = readFileSync(url);
  if (sync) return sync;
  const fsName = 'node:fs/promises';
  const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
  return fs.readFile(url);
}

let failure = null;
if (wasmUrl && wasmUrl.protocol === 'file:') {
  try {
    const bytes = readFileSync(wasmUrl);
    if (bytes) {
      initSync({ module: bytes });
      markInitialised();
    }
  } catch (e) {
    failure = e; // reported by generateIdentity(); init() tries again asynchronously
  }
}
setLoader({ where: wasmUrl || NO_URL, read, failure });
setXWingLoader({
  where: xwingUrl || XWING_NO_URL,
  now: () => (xwingUrl && xwingUrl.protocol === 'file:' ? readFileSync(xwingUrl) : null),
});
