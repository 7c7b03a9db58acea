// The README's recipes run as written. Every fenced ```sh or ```js block in README.md, the
// guides in docs/ and js/README.md (DOCS below) that follows a line
//   <!-- recipe: run [option=value ...] -->
// (an HTML comment: GitHub shows nothing) is run here against a real relay, so a recipe that
// fails verbatim fails `npm test`. Unmarked blocks are not run (fragments with placeholders,
// browser code, Rust, the pipeline examples that pipeline-examples.test.mjs runs).
//
// How a block runs (the only changes to its text, all mechanical):
// - In a scratch directory whose entries are symlinks to the repository root's (so
//   `./pkg/index.js`, `examples/...`, `target/release/...`, `.venv/...`, `npm run ...` work as
//   from the root, while the files a recipe writes, like relay.key, land in the scratch
//   directory and never overwrite yours).
// - `sh` blocks by bash, as one script pasted in one shell: `set -euo pipefail`, aliases on.
//   A command ending in `&` runs in the background as written; at the end every background
//   command must have exited 0 (except `daemon=` ones, which are stopped).
// - The ports 8080 and 8443 (and those in `ports=`) become free ports: the block's own relay
//   listens there. A line `npm start [-- ARGS] [&]` starts the built relay with ARGS on those
//   ports the way scripts/start.sh does (`--www www --sdk-dir pkg`) and waits until it
//   listens (building and the build chatter are npm start's own business, not the recipe's);
//   a block without such a line gets that relay before its first line, unless `relay=none`.
// - `target/release/` becomes `$CARGO_TARGET_DIR/release/` when CARGO_TARGET_DIR is set.
// - `js` blocks are ES modules run by node in the scratch directory; `from 'httpipe'`
//   resolves to pkg/.
//
// Options (values may be "quoted"; the port substitution applies to them too):
//   timeout=SECONDS   the whole block (default 60)
//   expect=REGEX      must match the output, stdout or stderr (multiline; repeatable)
//   until=REGEX       a server recipe: passes once every `until` matched stdout or stderr,
//                     then it is stopped
//   daemon=TEXT       background commands containing TEXT are servers: stopped at the end
//   ports=N,M         more port numbers in the block to replace by free ports
//   env="K=V K=V"     environment for the block (e.g. a connect URL a config file names)
//   relay=none        the block starts its own relay (e.g. `cargo run --release --bin httpipe-relay`)
//   cwd=root          run in the repository root itself, not the scratch directory: for
//                     blocks that write no files and run cargo (which finds the workspace from
//                     the directory: through the symlinks it would rebuild everything)
//   name=TEXT         the test's name (default: the section heading and line)
//
// The quick start (README.md, the sh block after `<!-- quick start ... -->`) runs as written
// too, in the order of its terminals: `npm start` is the relay, the export as it is, `send`
// in the background, and `receive` with the code `send` printed in place of the example's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, RELAY_BIN, RELEASE_DIR } from './lib/relay.mjs';

const README = path.join(ROOT, 'README.md');
/** The files whose marked blocks run: README.md, docs/*.md, js/README.md. */
const DOCS = ['README.md', 'js/README.md',
  ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const MARKER = /^<!--\s*recipe:\s*run\b(.*?)-->\s*$/;
const OPTIONS = new Set(['timeout', 'expect', 'until', 'daemon', 'ports', 'env', 'relay', 'cwd', 'name']);
const REPEATABLE = new Set(['expect', 'until', 'daemon']);

/** `key=value key="quoted value" flag` → { key: value | [values] }. */
export function parseOptions(text, where) {
  const opts = { expect: [], until: [], daemon: [] };
  for (const m of text.matchAll(/([\w-]+)(?:=("((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)))?/g)) {
    const [, key] = m;
    const value = m[3] !== undefined ? m[3].replace(/\\"/g, '"') : (m[4] ?? m[5] ?? true);
    if (!OPTIONS.has(key)) throw new Error(`${where}: unknown recipe option '${key}' (known: ${[...OPTIONS].join(', ')})`);
    if (REPEATABLE.has(key)) opts[key].push(value);
    else opts[key] = value;
  }
  return opts;
}

/** The marked blocks of `file` (README.md): { file, line, lang, code, opts, heading }. */
export function markedRecipes(text = fs.readFileSync(README, 'utf8'), file = 'README.md') {
  const lines = text.split('\n');
  const out = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,6} /.test(lines[i])) heading = lines[i].replace(/^#+ /, '');
    const m = MARKER.exec(lines[i]);
    if (!m) continue;
    const where = `${file}:${i + 1}`;
    const fence = /^```(\w+)\s*$/.exec(lines[i + 1] || '');
    if (!fence) throw new Error(`${where}: a recipe marker must be followed at once by a fenced block`);
    const lang = fence[1];
    if (!['sh', 'bash', 'js'].includes(lang)) throw new Error(`${where}: can't run a \`${lang}\` block (sh, bash or js)`);
    const end = lines.findIndex((l, k) => k > i + 1 && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${where}: unclosed block`);
    out.push({ file, line: i + 2, lang, code: lines.slice(i + 2, end).join('\n'), opts: parseOptions(m[1], where), heading });
    i = end;
  }
  return out;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Splits a shell line into its code and a trailing `# comment` (outside quotes). */
function splitComment(line) {
  let q = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (q) { if (c === q) q = null; else if (c === '\\' && q === '"') i++; continue; }
    if (c === '\\') { i++; continue; }
    if (c === "'" || c === '"' || c === '`') { q = c; continue; }
    if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) return [line.slice(0, i).trimEnd(), line.slice(i)];
  }
  return [line.trimEnd(), ''];
}

const sq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

/** The block's text with ports and binary paths substituted. */
function substitute(text, ports) {
  let s = text;
  for (const [from, to] of Object.entries(ports)) s = s.replace(new RegExp(`\\b${from}\\b`, 'g'), String(to));
  if (process.env.CARGO_TARGET_DIR) s = s.replace(/(^|[\s=("'])target\/release\//gm, `$1${RELEASE_DIR}/`);
  return s;
}

/** The bash script for an sh block: prelude, the block (npm start lines and background jobs
 * rewritten as described above), epilogue. */
function shellScript(code, opts, ports, scratch) {
  const background = [];
  let startsRelay = false;
  const body = code.split('\n').map((raw) => {
    const [cmd, comment] = splitComment(raw);
    const start = /^\s*npm start(?:\s+--\s+(.*?))?\s*&?\s*$/.exec(cmd);
    if (start) { startsRelay = true; return `__recipe_relay ${start[1] || ''}   ${comment}`; }
    if (/[^&]&$/.test(cmd)) {
      const daemon = opts.daemon.some((d) => raw.includes(d));
      background.push({ line: raw.trim(), daemon });
      return `${cmd} __recipe_bg $! ${background.length - 1}   ${comment}`;
    }
    return raw;
  }).join('\n');
  const relayCmd = [RELAY_BIN, '--host', '127.0.0.1', '--http-port', ports[8080], '--https-port', ports[8443], '--www', 'www', '--sdk-dir', 'pkg'].map(sq).join(' ');
  const prelude = `set -euo pipefail
shopt -s expand_aliases
__recipe_lines=(${background.map((b) => sq(b.line)).join(' ')})
__recipe_daemons=(${background.map((b) => (b.daemon ? 1 : 0)).join(' ')})
__recipe_pids=()
__recipe_n=0
__recipe_bg() { __recipe_pids[$2]=$1; }
__recipe_relay() {
  __recipe_n=$((__recipe_n + 1))
  local log=${sq(scratch)}/.recipe-relay-$__recipe_n.log
  ${relayCmd} "$@" >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do
    if grep -q '^listening http://' "$log"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "[recipe] the relay (npm start $*) exited:" >&2; cat "$log" >&2; return 1; fi
    sleep 0.05
  done
  echo "[recipe] the relay (npm start $*) did not start in 10 s:" >&2; cat "$log" >&2; return 1
}
__recipe_end() {
  local i rc
  for i in "\${!__recipe_pids[@]}"; do
    [ "\${__recipe_daemons[$i]}" = 1 ] && continue
    rc=0; wait "\${__recipe_pids[$i]}" || rc=$?
    if [ "$rc" != 0 ]; then echo "[recipe] background command failed (exit $rc): \${__recipe_lines[$i]}" >&2; exit 1; fi
  done
}
${startsRelay || opts.relay === 'none' ? '' : '__recipe_relay'}
`;
  return { script: `${prelude}# ---- the recipe ----\n${body}\n# ---- end ----\n__recipe_end\n` };
}

/** A scratch directory mirroring the repository root by symlinks. */
function scratchDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-recipe-'));
  for (const name of fs.readdirSync(ROOT)) fs.symlinkSync(path.join(ROOT, name), path.join(dir, name));
  return dir;
}

/** Runs `cmd args` in its own process group; resolves { code, out, timedOut, matched }. */
function runGroup(cmd, args, { cwd, env, timeoutMs, until }) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    const streams = { stdout: '', stderr: '' };
    let done = false;
    const killGroup = (sig) => { try { process.kill(-child.pid, sig); } catch { /* gone */ } };
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 3000).unref();
      // the group's stragglers may hold the pipes open: don't wait for them
      setTimeout(() => resolve({ ...result, out, streams }), 200);
    };
    const onData = (which) => (d) => {
      out += d;
      streams[which] += d;
      if (until.length && until.every((re) => re.test(streams.stdout) || re.test(streams.stderr))) finish({ code: 0, matched: true });
    };
    child.stdout.on('data', onData('stdout'));
    child.stderr.on('data', onData('stderr'));
    child.on('exit', (code, signal) => finish({ code: code ?? signal }));
    const timer = setTimeout(() => finish({ code: null, timedOut: true }), timeoutMs);
  });
}

async function runRecipe(recipe) {
  const { opts } = recipe;
  const ports = { 8080: await freePort(), 8443: await freePort() };
  for (const p of String(opts.ports || '').split(',').filter(Boolean)) ports[p.trim()] = await freePort();
  const scratch = scratchDir();
  const env = {
    ...process.env,
    NO_COLOR: '1',
    DENO_NO_UPDATE_CHECK: '1',
    WRANGLER_SEND_METRICS: 'false',
    HTTPIPE_RECIPE_SCRATCH: scratch,
  };
  if (opts.env) {
    for (const kv of substitute(opts.env, ports).split(/\s+/).filter(Boolean)) {
      const i = kv.indexOf('=');
      env[kv.slice(0, i)] = kv.slice(i + 1);
    }
  }
  const code = substitute(recipe.code, ports);
  let shell = code;
  if (recipe.lang === 'js') {
    // `from 'httpipe'` → pkg/, next to the module (the scratch root's node_modules is the repo's)
    const jsDir = path.join(scratch, '.recipe-js');
    fs.mkdirSync(path.join(jsDir, 'node_modules'), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'pkg'), path.join(jsDir, 'node_modules', 'httpipe'));
    fs.writeFileSync(path.join(jsDir, 'recipe.mjs'), code);
    shell = 'node .recipe-js/recipe.mjs';
  }
  const file = path.join(scratch, '.recipe.sh');
  fs.writeFileSync(file, shellScript(shell, opts, ports, scratch).script);
  const cmd = ['bash', [file]];
  const until = opts.until.map((u) => new RegExp(substitute(u, ports), 'm'));
  const timeoutMs = Number(opts.timeout || 60) * 1000;
  const t0 = performance.now();
  const r = await runGroup(cmd[0], cmd[1], { cwd: opts.cwd === 'root' ? ROOT : scratch, env, timeoutMs, until });
  const relayLogs = fs.readdirSync(scratch).filter((f) => f.startsWith('.recipe-relay-'))
    .map((f) => `--- ${f}\n${fs.readFileSync(path.join(scratch, f), 'utf8')}`).join('\n');
  const report = `${recipe.file || 'README.md'}:${recipe.line} as run (${((performance.now() - t0) / 1000).toFixed(1)} s):\n${code}\n--- output:\n${r.out}\n${relayLogs}`;
  fs.rmSync(scratch, { recursive: true, force: true });
  if (r.timedOut) assert.fail(`timed out after ${timeoutMs / 1000} s${opts.until.length ? ` waiting for ${opts.until.join(', ')}` : ''}\n${report}`);
  assert.equal(r.code, 0, `exit ${r.code}\n${report}`);
  for (const e of opts.expect) {
    const re = new RegExp(substitute(e, ports), 'm');
    assert.ok(re.test(r.streams.stdout) || re.test(r.streams.stderr), `expected ${re} in stdout or stderr\n${report}`);
  }
}

const recipes = DOCS.flatMap((f) => markedRecipes(fs.readFileSync(path.join(ROOT, f), 'utf8'), f));

/**
 * README.md's quick start as one script: its lines as written, `send` in the background with
 * its stderr kept, and `receive` given the code `send` printed instead of the example's.
 */
export function quickStart(text = fs.readFileSync(README, 'utf8')) {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => /^<!--\s*quick start\b/.test(l));
  assert.ok(at >= 0, 'README.md has a <!-- quick start --> marker');
  assert.match(lines[at + 1], /^```sh\s*$/, 'a sh block follows the quick start marker');
  const end = lines.findIndex((l, k) => k > at + 1 && /^```\s*$/.test(l));
  const block = lines.slice(at + 2, end);
  assert.ok(block.length <= 15, `the quick start has ${block.length} lines`);
  const example = /\b\d{1,3}-[a-z]+-[a-z]+\b/;
  const body = block.map((raw) => {
    const [cmd, comment] = splitComment(raw);
    if (/\bhttpipe send\b/.test(cmd)) {
      return `${cmd} 2> .send.log &   ${comment}
for _ in $(seq 300); do grep -q '^Code: ' .send.log && break; sleep 0.1; done
code=$(sed -n 's/^Code: //p' .send.log); echo "the code: $code"`;
    }
    if (/\bhttpipe receive\b/.test(cmd)) {
      assert.match(cmd, example, 'the receive line shows an example code');
      return `${cmd.replace(example, '"$code"')}   ${comment}`;
    }
    return raw;
  });
  return { line: at + 3, code: [...body, 'cmp README.md README-copy.md && echo same'].join('\n') };
}

// The harness itself: what would let a broken recipe pass must fail.
for (const [what, code, options] of [
  ['a failing command', 'false\necho never', ''],
  ['a failing background command', 'sh -c "sleep 0.2; exit 3" &\necho done', ''],
  ['output that does not match expect', 'echo hello', 'expect="^goodbye$"'],
  ['a recipe that outlives its timeout', 'sleep 30', 'timeout=1'],
  ['a command that is not there', 'no-such-command-for-the-harness', ''],
]) {
  test(`recipe harness: ${what} fails the recipe`, async () => {
    await assert.rejects(runRecipe({ line: 0, lang: 'sh', code, opts: parseOptions(options, 'self-test') }), assert.AssertionError);
  });
}

test('recipe harness: npm start lines, background peers, port substitution', async () => {
  const code = [
    'npm start &   # the relay',
    "seq 3 | curl -sS -T - http://127.0.0.1:8080/self-test -o /dev/null &",
    'curl -sS http://127.0.0.1:8080/self-test | tail -1',
  ].join('\n');
  await runRecipe({ line: 0, lang: 'sh', code, opts: parseOptions('expect="^3$"', 'self-test') });
});

test('README recipe markers: each is followed by a runnable block, options known', () => {
  assert.ok(recipes.length >= 5, `only ${recipes.length} marked recipes`);
});

test('README quick start: a file sent by code from the CLI arrives, as written', { timeout: 120_000 }, async () => {
  const { line, code } = quickStart();
  await runRecipe({ file: 'README.md', line, lang: 'sh', code, opts: parseOptions('expect="^same$" timeout=60', 'quick start') });
});

for (const recipe of recipes) {
  const name = recipe.opts.name || `${recipe.heading} (${recipe.file}:${recipe.line})`;
  test(`README recipe: ${name}`, { timeout: (Number(recipe.opts.timeout || 60) + 30) * 1000 }, () => runRecipe(recipe));
}
