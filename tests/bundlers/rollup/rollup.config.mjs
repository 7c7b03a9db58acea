// Rollup resolves packages with @rollup/plugin-node-resolve and, like esbuild, leaves
// `new URL('./x.wasm', import.meta.url)` alone: the page imports 'httpipe/inline' (the test
// rewrites the shared page's import), which carries the wasm module inside the JavaScript.
import { nodeResolve } from '@rollup/plugin-node-resolve';

export default {
  input: 'src/index.js',
  output: { dir: 'dist', format: 'es' },
  plugins: [nodeResolve({ browser: true })],
};
