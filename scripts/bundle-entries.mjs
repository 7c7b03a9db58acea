// The package's entries as one file each (issue #27, start-up): a page that imports
// `httpipe` without a bundler loads index.js and the .wasm, not a chain of a dozen modules,
// each found only after the one that imports it arrived (a round trip per level).
//   node scripts/bundle-entries.mjs PKG_DIR
// PKG_DIR/lib/ holds the modules as written (js/, wasm-bindgen's glue); this writes
// PKG_DIR/{index,inline,workerd}.js from lib/{index,inline,workerd}.js with esbuild: ES module
// output, not minified (readable stack traces; a minifier would drop the `webpackIgnore` /
// `@vite-ignore` comments of index.js's `import('node:fs/promises')`, which bundlers need:
// 29 KB gzipped vs 24 KB for the entry), the .wasm import of workerd.js left to the Worker's
// bundler. lib/ is not shipped (js/package.json
// "files"); tests of internal modules import them from there.
import path from 'node:path';
import fs from 'node:fs';
import { build } from 'esbuild';

const pkgDir = path.resolve(process.argv[2] || 'pkg');
for (const entry of ['index', 'inline', 'workerd']) {
  const from = path.join(pkgDir, 'lib', `${entry}.js`);
  // the first line names the entry's types for Deno and TypeScript (`@ts-self-types`)
  const banner = fs.readFileSync(from, 'utf8').split('\n', 1)[0];
  if (!banner.startsWith('// @ts-self-types=')) throw new Error(`${from}: no @ts-self-types first line`);
  await build({
    entryPoints: [from],
    outfile: path.join(pkgDir, `${entry}.js`),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    legalComments: 'none',
    external: ['./httpipe_wasm_bg.wasm', './httpipe_xwing_bg.wasm'],
    banner: { js: banner },
    logLevel: 'error',
  });
}
