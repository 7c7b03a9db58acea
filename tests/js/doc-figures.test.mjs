// Figures and links in the docs stay true (issue 29). The package's sizes are the build's:
// scripts/build-sdk.sh writes them into the `<!-- sizes:KEY -->` blocks of docs/sdk.md and
// js/README.md (scripts/doc-sizes.mjs); this fails when a block differs from pkg/ as built (a
// figure typed by hand, or a build whose docs change was not committed). And every relative
// link of README.md, docs/ and js/README.md leads to a file and heading that exist (the README
// is a map into docs/).
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

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces → '-'. */
const slug = (h) => h.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

test('the links of README.md, docs/ and js/README.md lead to files and headings that exist', () => {
  const docs = ['README.md', 'js/README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const anchors = (file) => {
    const text = fs.readFileSync(file, 'utf8').replace(/^```[^]*?^```/gm, '');
    return new Set(text.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ''))));
  };
  const broken = [];
  for (const doc of docs) {
    const text = fs.readFileSync(path.join(ROOT, doc), 'utf8').replace(/^```[^]*?^```/gm, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [file, anchor] = target.split('#');
      const to = file ? path.resolve(path.dirname(path.join(ROOT, doc)), file) : path.join(ROOT, doc);
      if (!fs.existsSync(to)) { broken.push(`${doc}: ${target} (no such file)`); continue; }
      if (anchor && to.endsWith('.md') && !anchors(to).has(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});
