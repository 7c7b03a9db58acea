// init() with a compiled WebAssembly.Module and bytes from the runtime (the DOM and WebWorker
// libs, Deno; @types/node declares no WebAssembly namespace, and Workers can't compile wasm).
import { init } from 'httpipe';

export async function compiled(bytes: ArrayBuffer): Promise<void> {
  const module: WebAssembly.Module = await WebAssembly.compile(bytes);
  await init(module);
  await init(new Uint8Array(bytes));
  await init(await fetch('https://cdn.example/httpipe_wasm_bg.wasm'));
}
