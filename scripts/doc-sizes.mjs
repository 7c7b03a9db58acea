// The package's sizes in the docs come from the build, never typed by hand (issue 29): the
// text between `<!-- sizes:KEY -->` and `<!-- /sizes -->` in SIZED_DOCS is made from pkg/.
//   node scripts/doc-sizes.mjs [PKG_DIR]          rewrites the docs (scripts/build-sdk.sh, release)
//   node scripts/doc-sizes.mjs --check [PKG_DIR]  exits 1 naming each block that differs
// KEY: `table` (a table of the shipped files), `wasm` ("833 KB, 341 KB gzipped"), `inline`
// (httpipe/inline's module gzipped: what goes over the wire). KB = 1 000 bytes, gzip -9.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SIZED_DOCS = ['docs/sdk.md', 'js/README.md'];
const BLOCK = /(<!-- sizes:(\w+) -->)([^]*?)(<!-- \/sizes -->)/g;

const kb = (n) => `${Math.round(n / 1000)} KB`;

/** The sizes of the built package in `pkgDir`. */
export function measure(pkgDir) {
  const size = (f) => {
    const file = path.join(pkgDir, f);
    // gzip -9 as the build's log line measures it (Node's zlib packs a few KB larger)
    const gz = execFileSync('gzip', ['-9', '-c', file], { maxBuffer: 64 << 20 }).length;
    return { raw: fs.statSync(file).size, gz };
  };
  return { wasm: size('httpipe_wasm_bg.wasm'), xwing: size('httpipe_xwing_bg.wasm'), inline: size('inline.js'), entry: size('index.js') };
}

/** The text of block `key` for the sizes `s`. */
export function render(key, s) {
  switch (key) {
    case 'wasm': return `${kb(s.wasm.raw)} raw, ${kb(s.wasm.gz)} gzipped`;
    case 'inline': return `${kb(s.inline.gz)} gzipped`;
    case 'table': return ['', '| file | raw | gzip -9 |', '|---|---|---|',
      `| \`httpipe_wasm_bg.wasm\` (the module) | ${kb(s.wasm.raw)} | ${kb(s.wasm.gz)} |`,
      `| \`httpipe_xwing_bg.wasm\` (the post-quantum module, loaded only when a post-quantum key is used) | ${kb(s.xwing.raw)} | ${kb(s.xwing.gz)} |`,
      `| \`index.js\` (the entry: the API, pipelines and wasm-bindgen's glue in one file) | ${kb(s.entry.raw)} | ${kb(s.entry.gz)} |`,
      `| \`inline.js\` (\`httpipe/inline\`: the same with both modules inside the JavaScript) | ${kb(s.inline.raw)} | ${kb(s.inline.gz)} |`,
      ''].join('\n');
    default: throw new Error(`unknown sizes block '${key}'`);
  }
}

/** `text` with every block made from `s`. */
export function fill(text, s) {
  return text.replace(BLOCK, (_, open, key, _old, close) => `${open}${render(key, s)}${close}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const check = args[0] === '--check';
  const pkgDir = path.resolve(args[check ? 1 : 0] || path.join(ROOT, 'pkg'));
  const s = measure(pkgDir);
  let stale = 0;
  for (const doc of SIZED_DOCS) {
    const file = path.join(ROOT, doc);
    const text = fs.readFileSync(file, 'utf8');
    const next = fill(text, s);
    if (next === text) continue;
    if (check) { stale++; console.error(`${doc}: the sizes differ from ${pkgDir} (run scripts/build-sdk.sh)`); } else fs.writeFileSync(file, next);
  }
  process.exit(stale ? 1 : 0);
}
