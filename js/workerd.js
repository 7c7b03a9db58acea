// @ts-self-types="./workerd.d.ts"
// httpipe entry for Cloudflare Workers (workerd): the bundler imports the .wasm file as a
// compiled WebAssembly.Module, instantiated synchronously at import. If the bundler gave
// something else (a URL, bytes), init() and every async function try that instead, and a
// failure is an HttpipeError WASM_LOAD_FAILED.
import wasmModule from './httpipe_wasm_bg.wasm';
// The post-quantum module: compiled with the Worker, instantiated only when a post-quantum
// key is used (api.js).
import xwingModule from './httpipe_xwing_bg.wasm';
import { initSync } from './httpipe_wasm.js';
import { markInitialised, setLoader, setXWingLoader } from './loader.js';

export * from './api.js';
export * from './pipeline/index.js';

const where = 'httpipe_wasm_bg.wasm (imported by httpipe/workerd.js)';
try {
  initSync({ module: wasmModule });
  markInitialised();
} catch (e) {
  setLoader({ where, read: (source) => (source === where ? wasmModule : source), failure: e });
}
setXWingLoader({ where: 'httpipe_xwing_bg.wasm (imported by httpipe/workerd.js)', now: () => xwingModule });
