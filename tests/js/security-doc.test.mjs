// docs/SECURITY.md's promise: every "cannot" names the test that shows it. This keeps the
// names true: each `path` the page cites exists, and each test it quotes right after a path
// (a JavaScript test title in "…", a Rust test function in `…`) is in that file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './lib/relay.mjs';

const PAGE = fs.readFileSync(path.join(ROOT, 'docs', 'SECURITY.md'), 'utf8');
// a test file, optionally followed by quoted test names: `tests/js/x.test.mjs` "title" / `fn`
const CITATION = /`((?:tests|relay\/tests|cli\/tests|src)\/[\w./-]+\.(?:mjs|rs))`((?:\s*(?:"[^"]+"|`\w+`)(?:,)?)*)/g;

test('every test docs/SECURITY.md names exists, in the file it names', () => {
  const citations = [...PAGE.matchAll(CITATION)];
  assert.ok(citations.length >= 10, `only ${citations.length} citations found`);
  let names = 0;
  for (const [, file, after] of citations) {
    const abs = path.join(ROOT, file);
    assert.ok(fs.existsSync(abs), `${file} does not exist`);
    const source = fs.readFileSync(abs, 'utf8');
    for (const [, title, fn] of after.matchAll(/"([^"]+)"|`(\w+)`/g)) {
      names += 1;
      if (title) {
        // a title may be quoted in part ("a tampered byte …")
        const start = title.replace(/\s*…$/, '');
        assert.ok(source.includes(start), `${file} has no test "${title}"`);
      } else {
        assert.match(source, new RegExp(`fn ${fn}\\b`), `${file} has no test fn ${fn}`);
      }
    }
  }
  assert.ok(names >= 10, `only ${names} test names checked`);
});
