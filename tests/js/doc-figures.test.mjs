// The package's sizes in the docs are the build's (issue 29): scripts/build-sdk.sh writes them
// into the `<!-- sizes:KEY -->` blocks of docs/sdk.md and js/README.md
// (scripts/doc-sizes.mjs); this fails when a block differs from pkg/ as built (a figure typed
// by hand, or a build whose docs change was not committed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './lib/relay.mjs';
import { SIZED_DOCS, measure, fill } from '../../scripts/doc-sizes.mjs';

const PKG_DIR = path.join(ROOT, 'pkg');

test('the size figures in the docs are pkg/\'s', () => {
  const sizes = measure(PKG_DIR);
  for (const doc of SIZED_DOCS) {
    const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
    assert.match(text, /<!-- sizes:\w+ -->/, `${doc} has no sizes block`);
    assert.equal(text, fill(text, sizes), `${doc}: the sizes differ from pkg/ (run scripts/build-sdk.sh and commit the docs)`);
  }
  // The figure the issue found wrong: the module's size as the build measured it.
  const wasm = fs.statSync(path.join(PKG_DIR, 'httpipe_wasm_bg.wasm')).size;
  assert.match(fs.readFileSync(path.join(ROOT, 'docs/sdk.md'), 'utf8'), new RegExp(`${Math.round(wasm / 1000)} KB raw`));
});
