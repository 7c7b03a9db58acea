// The repository's own commands as a new user meets them: `npm start -- --help` prints the
// relay's help and nothing else, `npm run relay` finds the built binary (also under
// CARGO_TARGET_DIR), `npm run bench -- --list` names every benchmark, and the key files the
// README has you create are git-ignored; the two SDK drivers (src/wasm, src/native) hold the
// mirrored files docs/ARCHITECTURE.md names, and no others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, RELAY_BIN } from './lib/relay.mjs';

const run = promisify(execFile);
const opts = { cwd: ROOT, timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } };

test('npm start -- --help: the relay\'s help and nothing else (no setup or build chatter)', async () => {
  const want = await run(RELAY_BIN, ['--help'], opts);
  assert.match(want.stdout, /--http-port <HTTP_PORT>/);
  // --silent drops npm's own "> start / > bash scripts/start.sh --help" banner (npm's, not ours)
  const silent = await run('npm', ['start', '--silent', '--', '--help'], opts);
  assert.equal(silent.stdout, want.stdout);
  assert.equal(silent.stderr, '');
  const plain = await run('npm', ['start', '--', '--help'], opts);
  assert.ok(plain.stdout.endsWith(want.stdout), plain.stdout);
  const banner = plain.stdout.slice(0, -want.stdout.length);
  assert.match(banner, /^\s*> (\S+@\S* )?start\n> bash scripts\/start\.sh --help\s*$/, banner);
  assert.equal(plain.stderr, '');
  for (const flag of ['-h', '--version', '-V']) {
    const r = await run('npm', ['start', '--silent', '--', flag], opts);
    assert.equal(r.stdout, (await run(RELAY_BIN, [flag], opts)).stdout, flag);
    assert.equal(r.stderr, '', flag);
  }
});

test('npm run relay -- token: the built httpipe-relay mints a token with a key file', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-npm-relay-'));
  try {
    const key = path.join(dir, 'relay.key');
    fs.writeFileSync(key, 'a test key for npm run relay\n');
    const r = await run('npm', ['run', '-s', 'relay', '--', 'token', '--auth-key-file', key, '--path', '/team', '--mode', 'write', '--ttl', '1h'], opts);
    assert.match(r.stdout, /^hp1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
    const bad = await run('npm', ['run', '-s', 'relay', '--', 'token', '--path', '/team', '--mode', 'write'], opts).catch((e) => e);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /no key: pass --auth-key-file FILE/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('npm run bench -- --list names every benchmark in bench/ with a description', async () => {
  const { stdout } = await run('npm', ['run', '-s', 'bench', '--', '--list'], opts);
  const helpers = new Set(['crypto-wasm.mjs']); // run by crypto.sh
  const files = fs.readdirSync(path.join(ROOT, 'bench')).filter((f) => /\.(mjs|sh|py)$/.test(f) && f !== 'run.sh' && !helpers.has(f));
  assert.ok(files.length >= 5, files.join(' '));
  for (const f of files) assert.match(stdout, new RegExp(`^ +\\S+ +bench/${f.replace('.', '\\.')} +\\S.{10,}$`, 'm'), `${f} in:\n${stdout}`);
});

test('the key files the README has you create are git-ignored', async () => {
  const names = ['relay.key', 'research.key', 'examples/records/research.key', 'tls.key', 'README-copy.md', 'inventory.csv', 'store/batch-0.json'];
  const { stdout } = await run('git', ['check-ignore', '--no-index', ...names], opts);
  assert.deepEqual(stdout.trim().split('\n'), names);
});

test('src/wasm and src/native mirror each other file for file, as docs/ARCHITECTURE.md says', () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8');
  const section = doc.split('## The two drivers mirror each other')[1] ?? '';
  const pairs = [...section.matchAll(/^\| `(\w+\.rs)` \|/gm)].map((m) => m[1]);
  const jsOnly = [...section.matchAll(/`wasm\/(\w+\.rs)`/g)].map((m) => m[1]);
  const nativeOnly = [...section.matchAll(/`native\/(\w+\.rs)`/g)].map((m) => m[1]);
  assert.ok(pairs.length >= 10, `the doc's table of mirrored files: ${pairs}`);
  const files = (dir) => fs.readdirSync(path.join(ROOT, 'src', dir)).filter((f) => f.endsWith('.rs') && f !== 'mod.rs').sort();
  assert.deepEqual(files('native'), [...pairs, ...nativeOnly].sort(), 'src/native holds the mirrored files and its own edges');
  assert.deepEqual(files('wasm'), [...pairs, ...jsOnly].sort(), 'src/wasm holds their twins and the JavaScript-only edges');
});
