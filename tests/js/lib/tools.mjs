// Tools a test needs beyond Node (the ZebraStream client in .venv, Firefox ESR, ...), which
// `scripts/setup.sh full` installs (`npm test` runs it). `skipUnless(file, what)` is `false`
// when the tool is there. When it is missing the test file fails at once, naming it, so a CI
// machine without the tool can't pass by skipping; with HTTPIPE_ALLOW_MISSING_TOOLS=1 it
// returns the reason instead, for node:test's `skip` option.
//   test('...', { skip: skipUnless(FIREFOX, 'Firefox ESR') }, async () => { ... });
import fs from 'node:fs';

export function skipUnless(file, what) {
  if (fs.existsSync(file)) return false;
  const msg = `${what} is missing (${file}); scripts/setup.sh full installs it`;
  if (process.env.HTTPIPE_ALLOW_MISSING_TOOLS === '1') return `${msg} (HTTPIPE_ALLOW_MISSING_TOOLS=1)`;
  throw new Error(`${msg}. Set HTTPIPE_ALLOW_MISSING_TOOLS=1 to skip such tests instead.`);
}
