// @ts-self-types="./workerd.d.ts"
// httpipe entry for Cloudflare Workers (workerd): the bundler imports the .wasm file as a
// compiled WebAssembly.Module, instantiated synchronously at import.
import wasmModule from './httpipe_wasm_bg.wasm';
import { initSync } from './httpipe_wasm.js';
import { markInitialised } from './api.js';

export * from './api.js';
export * from './pipeline/index.js';

initSync({ module: wasmModule });
markInitialised();
