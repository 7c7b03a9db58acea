// The npm package as published (pkg/, from scripts/build-sdk.sh): a wasm module that can't be
// loaded is an HttpipeError WASM_LOAD_FAILED naming what it tried (Node, Deno, Chromium: a
// bundler that didn't copy the .wasm, a dev server answering with its index.html); the
// tarball holds exactly what the entries import plus README, LICENSEs and package.json; the
// version is the root crate's; every runtime export is declared in index.d.ts and the other
// way round; `npm publish --dry-run` is clean.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, startRelay } from './lib/relay.mjs';
import { launchChromium } from './lib/demo-browser.mjs';

const PKG_DIR = path.join(ROOT, 'pkg');
const WASM = 'httpipe_wasm_bg.wasm';
const XWING = 'httpipe_xwing_bg.wasm';
const DENO = path.join(ROOT, 'node_modules/.bin/deno');

// A copy of the package without its .wasm file: what a bundler that didn't copy it serves.
// Each test imports its own copy, so each gets fresh module state.
const copies = [];
function brokenCopy(without = WASM) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-nowasm-'));
  copies.push(dir);
  fs.cpSync(PKG_DIR, dir, { recursive: true });
  fs.rmSync(path.join(dir, without));
  return dir;
}
let server;
let base;
before(async () => {
  // /missing.wasm → 404; /spa/... → 200 text/html (a dev server's fallback page); /ok.wasm → the module
  server = http.createServer((req, res) => {
    if (req.url.startsWith('/spa/')) { res.setHeader('content-type', 'text/html'); res.end('<!doctype html><title>app</title>'); return; }
    if (req.url === '/ok.wasm') { res.setHeader('content-type', 'application/wasm'); res.end(fs.readFileSync(path.join(PKG_DIR, WASM))); return; }
    res.statusCode = 404; res.end('not found');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => {
  server?.close();
  for (const dir of copies) fs.rmSync(dir, { recursive: true, force: true });
});

function wasmLoadFailed(...mustName) {
  return (e) => {
    assert.equal(e.name, 'HttpipeError', String(e));
    assert.equal(e.code, 'WASM_LOAD_FAILED', String(e));
    for (const s of mustName) assert.ok(e.message.includes(s), `message should name ${s}: ${e.message}`);
    // ...and say what to do
    assert.match(e.message, /; serve httpipe_wasm_bg\.wasm next to the package's index\.js/);
    assert.match(e.message, /init\(url \| bytes \| WebAssembly\.Module \| Response\)/);
    assert.match(e.message, /"Bundlers" in the httpipe README/);
    return true;
  };
}

test('Node: a package without its .wasm → WASM_LOAD_FAILED naming the file (init, send, generateIdentity); a later init() with the module works', async () => {
  const broken = brokenCopy();
  const sdk = await import(pathToFileURL(path.join(broken, 'index.js')).href);
  const where = pathToFileURL(path.join(broken, WASM)).href;
  assert.throws(() => sdk.generateIdentity(), wasmLoadFailed(where, 'ENOENT'));
  await assert.rejects(sdk.init(), wasmLoadFailed(where, 'ENOENT'));
  await assert.rejects(sdk.send('x', { relay: 'http://127.0.0.1:9', path: '/x' }), wasmLoadFailed(where));
  await assert.rejects(sdk.receive({ relay: 'http://127.0.0.1:9', path: '/x' }), wasmLoadFailed(where));
  const { readable, writable } = sdk.encryptStream({ passphrase: 'pw' });
  const w = writable.getWriter();
  w.write(new Uint8Array(1)).catch(() => {});
  await assert.rejects(readable.getReader().read(), wasmLoadFailed(where));
  // the URLs, bytes and pages it was given are named too
  await assert.rejects(sdk.init('http://127.0.0.1:1/nope.wasm'), wasmLoadFailed('http://127.0.0.1:1/nope.wasm', 'fetch failed'));
  await assert.rejects(sdk.init(`${base}/missing.wasm`), wasmLoadFailed(`${base}/missing.wasm`, 'HTTP 404'));
  await assert.rejects(sdk.init(new URL(`${base}/spa/httpipe_wasm_bg.wasm`)),
    wasmLoadFailed(`${base}/spa/httpipe_wasm_bg.wasm`, 'Content-Type text/html: a web page, not the .wasm file'));
  await assert.rejects(sdk.init(new Uint8Array([1, 2, 3])), wasmLoadFailed('the 3 bytes given to init()', 'CompileError'));
  await assert.rejects(sdk.init(Promise.reject(new Error('no module for you'))), wasmLoadFailed('no module for you'));
  // what init() can't take is refused as such (UNSUPPORTED), not as a module that failed to load
  const takes = 'takes a URL, a Request, a Response, bytes or a WebAssembly.Module (or a promise of one), not';
  await assert.rejects(sdk.init(42), { name: 'HttpipeError', code: 'UNSUPPORTED', message: `init() ${takes} the number 42` });
  await assert.rejects(sdk.init(Promise.resolve({ wasm: 1 })), { code: 'UNSUPPORTED', message: `init() ${takes} [object Object]` });
  // a failure is not remembered: the next init() tries again
  await sdk.init(`${base}/ok.wasm`);
  assert.match(sdk.generateIdentity(), /^AGE-SECRET-KEY-1/);
});

/** The same for the post-quantum module: its own name and advice. */
function xwingLoadFailed(...mustName) {
  return (e) => {
    assert.equal(e.name, 'HttpipeError', String(e));
    assert.equal(e.code, 'WASM_LOAD_FAILED', String(e));
    assert.match(e.message, /^could not load the post-quantum module from /);
    for (const s of mustName) assert.ok(e.message.includes(s), `message should name ${s}: ${e.message}`);
    assert.match(e.message, /; serve httpipe_xwing_bg\.wasm next to the package's index\.js .*loadPostQuantum\(url \| bytes \| WebAssembly\.Module \| Response\)$/);
    assert.doesNotMatch(e.message, /serve httpipe_wasm_bg/);
    return true;
  };
}

test('Node: a package without its post-quantum module works until a post-quantum key is used, which fails WASM_LOAD_FAILED naming it', async () => {
  const broken = brokenCopy(XWING);
  const sdk = await import(pathToFileURL(path.join(broken, 'index.js')).href);
  const where = pathToFileURL(path.join(broken, XWING)).href;
  assert.match(sdk.identityToRecipient(sdk.generateIdentity()), /^age1/);
  const pq = sdk.generateHybridIdentity(); // 32 random bytes: no post-quantum module needed
  assert.match(pq, /^AGE-SECRET-KEY-PQ-1/);
  assert.throws(() => sdk.identityToRecipient(pq), xwingLoadFailed(where, 'ENOENT'));
  const { readable, writable } = sdk.decryptStream({ identities: [pq] });
  writable.getWriter().write(new Uint8Array(1)).catch(() => {});
  await assert.rejects(readable.getReader().read(), xwingLoadFailed(where, 'ENOENT'));
  await assert.rejects(sdk.receive({ relay: 'http://127.0.0.1:9', path: '/x', identities: [`# a key file\n${pq}\n`] }), xwingLoadFailed(where));
  await assert.rejects(sdk.loadPostQuantum(new Uint8Array([1, 2])), xwingLoadFailed('the 2 bytes given to loadPostQuantum()', 'CompileError'));
  // a promise that rejects names what the caller gave, not the default file it never tried
  await assert.rejects(sdk.loadPostQuantum(Promise.reject(new Error('my fetch failed'))), (e) => {
    assert.match(e.message, /^could not load the post-quantum module from what was given to loadPostQuantum\(\): my fetch failed;/);
    return true;
  });
  await assert.rejects(sdk.loadPostQuantum(null), {
    code: 'UNSUPPORTED',
    message: 'loadPostQuantum() takes a URL, a Request, a Response, bytes or a WebAssembly.Module (or a promise of one), not null',
  });
  // given the module, everything works (and a failure was not remembered)
  await sdk.loadPostQuantum(pathToFileURL(path.join(PKG_DIR, XWING)));
  assert.match(sdk.identityToRecipient(pq), /^age1pq1/);
});

/**
 * A wasm module with the post-quantum module's exports and none of its work: one page of
 * memory, `httpipe_xwing_io` returning `io`, the four operations returning `answer`, `wipe`
 * nothing. (Written byte by byte: the binary format's sections 1, 3, 5, 7 and 10.)
 */
function fakeXWing(io, answer) {
  const leb = (n) => { const out = []; for (;;) { const b = n & 0x7f; n >>= 7; if ((n === 0 && !(b & 0x40)) || (n === -1 && (b & 0x40))) { out.push(b); return out; } out.push(b | 0x80); } };
  const vec = (items) => [...leb(items.length), ...items.flat()];
  const section = (id, body) => [id, ...leb(body.length), ...body];
  const name = (s) => vec([...Buffer.from(s)]);
  const fns = [['httpipe_xwing_io', io], ['httpipe_xwing_check', answer], ['httpipe_xwing_public_key', answer],
    ['httpipe_xwing_encapsulate', answer], ['httpipe_xwing_decapsulate', answer], ['httpipe_xwing_wipe', null]];
  const body = (n) => (n === null ? [0, 0x0b] : [0, 0x41, ...leb(n), 0x0b]);
  return new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, vec([[0x60, 0, 1, 0x7f], [0x60, 0, 0]])),
    ...section(3, vec(fns.map(([, n]) => [n === null ? 1 : 0]))),
    ...section(5, vec([[0, 1]])),
    ...section(7, vec([[...name('memory'), 2, 0], ...fns.map(([f], i) => [...name(f), 0, i])])),
    ...section(10, vec(fns.map(([, n]) => vec(body(n))))),
  ]);
}

// Regression: a module with the right exports whose buffer address left no room (65530 in a
// 64 KiB memory) made the main module panic ("unexpected failure: unreachable"); one that
// answered 0 for a seed's key gave an all-zero age1pq1 recipient.
test('Node: a post-quantum module that is not ours is refused, never a panic or an empty key', async () => {
  for (const io of [65530, -5]) {
    const sdk = await import(`${pathToFileURL(path.join(brokenCopy(XWING), 'index.js')).href}`);
    await assert.rejects(sdk.loadPostQuantum(fakeXWing(io, 1)), xwingLoadFailed('bytes given to loadPostQuantum()', 'its buffer is not inside its memory: not httpipe_xwing_bg.wasm'));
  }
  {
    const sdk = await import(`${pathToFileURL(path.join(brokenCopy(XWING), 'index.js')).href}`);
    const pq = sdk.generateHybridIdentity();
    await sdk.loadPostQuantum(fakeXWing(0, 0));
    const refused = (e) => {
      assert.equal(e.code, 'UNSUPPORTED', String(e));
      assert.match(e.message, /the post-quantum module failed \(is it httpipe_xwing_bg\.wasm\?\)/);
      return true;
    };
    assert.throws(() => sdk.identityToRecipient(pq), refused);
    const { readable, writable } = sdk.decryptStream({ identities: [pq] });
    writable.getWriter().write(new Uint8Array(1)).catch(() => {});
    await assert.rejects(readable.getReader().read(), refused);
    assert.match(sdk.identityToRecipient(sdk.generateIdentity()), /^age1/, 'X25519 goes on working');
  }
});

test('Node: init() with a file: URL reads it from disk', async () => {
  const broken = brokenCopy();
  const sdk = await import(pathToFileURL(path.join(broken, 'index.js')).href);
  await assert.rejects(sdk.init(pathToFileURL(path.join(broken, 'nope.wasm'))), wasmLoadFailed('nope.wasm', 'ENOENT'));
  await sdk.init(pathToFileURL(path.join(PKG_DIR, WASM)));
  assert.match(sdk.identityToRecipient(sdk.generateIdentity()), /^age1/);
});

test('Deno: a package without its .wasm → WASM_LOAD_FAILED naming the file; without --allow-read, naming the flag once', { timeout: 60_000 }, async () => {
  const broken = brokenCopy();
  const script = `
    const sdk = await import(${JSON.stringify(pathToFileURL(path.join(broken, 'index.js')).href)});
    const out = {};
    try { sdk.generateIdentity(); } catch (e) { out.sync = { code: e.code, message: e.message }; }
    try { await sdk.init(); } catch (e) { out.init = { code: e.code, message: e.message }; }
    console.log(JSON.stringify(out));`;
  const r = spawnSync(DENO, ['eval', '--quiet', script], { encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  assert.equal(r.status, 0, r.stderr);
  const stdout = r.stdout;
  const out = JSON.parse(stdout.trim().split('\n').at(-1));
  const where = pathToFileURL(path.join(broken, WASM)).href;
  for (const k of ['sync', 'init']) {
    assert.ok(out[k], `${k}: ${stdout}`);
    wasmLoadFailed(where)({ name: 'HttpipeError', ...out[k] });
  }
  // without --allow-read, the flag is named once (Deno's own message names it already)
  const file = path.join(broken, 'denied.mjs');
  fs.writeFileSync(file, `const sdk = await import(${JSON.stringify(pathToFileURL(path.join(PKG_DIR, 'index.js')).href)});
    try { await sdk.init(); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`);
  const denied = spawnSync(DENO, ['run', '--allow-env', file], { encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  const e = JSON.parse(denied.stdout.trim().split('\n').at(-1));
  assert.equal(e.code, 'WASM_LOAD_FAILED', denied.stdout + denied.stderr);
  assert.equal(e.message.split('--allow-read').length, 2, e.message);
});

test('Chromium: the .wasm missing (404) or answered by an HTML page → WASM_LOAD_FAILED naming its URL; init() works once it is there', { timeout: 120_000 }, async () => {
  const relay = await startRelay();
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${relay.http}/version`);
    const wasmUrl = `${relay.http}/assets/pkg/${WASM}`;
    const attempt = () => page.evaluate(async () => {
      const sdk = await import('/assets/pkg/index.js');
      try { await sdk.init(); return { ok: true, id: sdk.generateIdentity().slice(0, 16) }; } catch (e) { return { name: e.name, code: e.code, message: e.message }; }
    });
    await page.route(`**/${WASM}`, (route) => route.fulfill({ status: 404, body: 'not found' }));
    wasmLoadFailed(wasmUrl, 'HTTP 404')(await attempt());
    await page.unroute(`**/${WASM}`);
    await page.route(`**/${WASM}`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>app</title>' }));
    wasmLoadFailed(wasmUrl, 'text/html: a web page, not the .wasm file')(await attempt());
    await page.unroute(`**/${WASM}`);
    assert.deepEqual(await attempt(), { ok: true, id: 'AGE-SECRET-KEY-1' });

    // the post-quantum module: not fetched for anything else; a 404 names it; then it loads
    const xwingUrl = `${relay.http}/assets/pkg/${XWING}`;
    const pq = () => page.evaluate(async () => {
      const sdk = await import('/assets/pkg/index.js');
      const fetched = () => performance.getEntriesByType('resource').filter((e) => e.name.includes('httpipe_xwing')).length;
      const id = sdk.generateHybridIdentity();
      const out = { fetchedBefore: fetched() };
      try { sdk.identityToRecipient(id); } catch (e) { out.sync = { code: e.code, message: e.message }; }
      try { await sdk.loadPostQuantum(); out.recipient = sdk.identityToRecipient(id).slice(0, 7); } catch (e) { out.load = { name: e.name, code: e.code, message: e.message }; }
      return out;
    });
    await page.route(`**/${XWING}`, (route) => route.fulfill({ status: 404, body: 'not found' }));
    const missing = await pq();
    assert.equal(missing.fetchedBefore, 0, JSON.stringify(missing));
    assert.equal(missing.sync.code, 'UNSUPPORTED');
    assert.match(missing.sync.message, /post-quantum module.*`await loadPostQuantum\(\)` first/);
    xwingLoadFailed(xwingUrl, 'HTTP 404')(missing.load);
    await page.unroute(`**/${XWING}`);
    assert.deepEqual((({ recipient, load }) => ({ recipient, load }))(await pq()), { recipient: 'age1pq1', load: undefined });

    // Regression: a slow post-quantum module held a call whose AbortSignal fired for as long as
    // the download took; and a location of the caller's own, asked for while the default one was
    // in flight (and failing), was never tried.
    const pqRecipient = (await import(pathToFileURL(path.join(PKG_DIR, 'index.js')).href)).identityToRecipient(
      (await import(pathToFileURL(path.join(PKG_DIR, 'index.js')).href)).generateHybridIdentity());
    const slow = await browser.context.newPage();
    await slow.goto(`${relay.http}/version`);
    await slow.route(`**/${XWING}`, async (route) => { await new Promise((r) => setTimeout(r, 5000)); await route.continue().catch(() => {}); });
    const aborted = await slow.evaluate(async ({ relayUrl, recipient }) => {
      const sdk = await import('/assets/pkg/index.js');
      const t0 = performance.now();
      try { await sdk.send('x', { relay: relayUrl, path: '/pq-abort', recipients: [recipient], signal: AbortSignal.timeout(300) }); return 'sent'; } catch (e) { return { code: e.code, ms: performance.now() - t0 }; }
    }, { relayUrl: relay.http, recipient: pqRecipient });
    assert.equal(aborted.code, 'ABORTED', JSON.stringify(aborted));
    assert.ok(aborted.ms < 3000, `ABORTED after ${aborted.ms} ms, not when the 5-s download ended`);
    await slow.close();

    const custom = await browser.context.newPage();
    const requested = [];
    custom.on('request', (r) => { if (r.url().endsWith('.wasm')) requested.push(new URL(r.url()).pathname); });
    await custom.goto(`${relay.http}/version`);
    await custom.route(`**/${XWING}`, async (route) => { await new Promise((r) => setTimeout(r, 1500)); await route.fulfill({ status: 404, body: 'not found' }); });
    await custom.route('**/mine/pq.wasm', (route) => route.fulfill({ status: 200, contentType: 'application/wasm', body: fs.readFileSync(path.join(PKG_DIR, XWING)) }));
    const both = await custom.evaluate(async (recipient) => {
      const sdk = await import('/assets/pkg/index.js');
      await sdk.init();
      const run = (s, t) => new Response(new Blob([s]).stream().pipeThrough(t));
      const sealing = run('waits for the default location', sdk.encryptStream({ recipients: [recipient] })).arrayBuffer().then((b) => b.byteLength, (e) => e.code);
      await new Promise((r) => setTimeout(r, 200));
      const mine = await sdk.loadPostQuantum('/mine/pq.wasm').then(() => 'loaded', (e) => `${e.code}: ${e.message}`);
      return { mine, sealed: await sealing };
    }, pqRecipient);
    assert.equal(both.mine, 'loaded', JSON.stringify(both));
    assert.equal(typeof both.sealed, 'number', JSON.stringify(both));
    assert.ok(requested.includes('/mine/pq.wasm'), JSON.stringify(requested));
    await custom.close();
  } finally {
    await browser.close();
    await relay.stop();
  }
});

// ---- the tarball ----

/** Relative files a module imports, re-exports or loads with `new URL('...', import.meta.url)`. */
function imports(file) {
  const src = fs.readFileSync(file, 'utf8');
  const specs = [
    ...src.matchAll(/^\s*(?:import|export)\s[^;]*?from\s*['"](\.[^'"]+)['"]/gm),
    ...src.matchAll(/^\s*import\s*['"](\.[^'"]+)['"]/gm),
    ...src.matchAll(/new URL\(\s*['"](\.?\.?\/?[^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g),
    ...src.matchAll(/@ts-self-types="(\.[^"]+)"/g),
  ].map((m) => m[1]);
  return specs.map((s) => path.resolve(path.dirname(file), s));
}

function closure(entries) {
  const seen = new Set();
  const todo = entries.map((e) => path.join(PKG_DIR, e));
  while (todo.length) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    assert.ok(fs.existsSync(f), `${path.relative(PKG_DIR, f)} is imported but not in pkg/`);
    if (/\.(m?js|d\.ts)$/.test(f)) todo.push(...imports(f));
  }
  return [...seen].map((f) => path.relative(PKG_DIR, f));
}

const manifest = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8'));

function exportTargets(exp) {
  if (typeof exp === 'string') return [exp];
  return Object.values(exp).flatMap(exportTargets);
}

test('npm pack: exactly what the entries import, their types, README, LICENSEs, package.json', () => {
  const json = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PKG_DIR, encoding: 'utf8' });
  const [packed] = JSON.parse(json);
  const files = packed.files.map((f) => f.path).sort();
  const entries = [...new Set(exportTargets(manifest.exports).map((t) => t.replace(/^\.\//, '')))];
  const expected = [...new Set([...closure(entries), 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE', 'package.json'])].sort();
  assert.deepEqual(files, expected);
  assert.equal(packed.name, 'httpipe');
  assert.equal(packed.version, manifest.version);
  // the package README is js/README.md, not the workspace's
  assert.equal(fs.readFileSync(path.join(PKG_DIR, 'README.md'), 'utf8'), fs.readFileSync(path.join(ROOT, 'js/README.md'), 'utf8'));
  for (const f of ['LICENSE-MIT', 'LICENSE-APACHE']) {
    assert.equal(fs.readFileSync(path.join(PKG_DIR, f), 'utf8'), fs.readFileSync(path.join(ROOT, f), 'utf8'));
  }
  console.log(`# npm pack: ${files.length} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked`);
});

test('package.json: version = the root crate\'s (Cargo.toml), publish metadata present', () => {
  const meta = JSON.parse(execFileSync('cargo', ['metadata', '--no-deps', '--format-version', '1', '--offline'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 }));
  assert.equal(manifest.version, meta.packages.find((p) => p.name === 'httpipe').version);
  assert.match(manifest.version, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  assert.equal(JSON.parse(fs.readFileSync(path.join(ROOT, 'js/package.json'), 'utf8')).version, undefined, 'js/package.json must not carry a version');
  for (const k of ['description', 'license', 'repository', 'homepage', 'bugs', 'keywords', 'author', 'engines', 'sideEffects', 'exports', 'types', 'files']) {
    assert.ok(manifest[k] !== undefined, `package.json lacks ${k}`);
  }
  assert.equal(manifest.license, 'MIT OR Apache-2.0');
  assert.equal(manifest.engines.node, '>=20');
});

test('npm publish --dry-run: no warning but the one about not being logged in', () => {
  const r = spawnSync('npm', ['publish', '--dry-run', '--offline', '--ignore-scripts'], { cwd: PKG_DIR, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\+ httpipe@\d/m);
  const warnings = r.stderr.split('\n').filter((l) => /\b(warn|WARN|ERR!?)\b/.test(l) && !/requires you to be logged in/.test(l));
  assert.deepEqual(warnings, []);
});

test('index.d.ts declares every runtime export, and nothing more', async () => {
  const sdk = await import(pathToFileURL(path.join(PKG_DIR, 'index.js')).href);
  const runtime = Object.keys(sdk).sort();
  const dts = fs.readFileSync(path.join(PKG_DIR, 'index.d.ts'), 'utf8');
  const declared = [...new Set([...dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)].map((m) => m[1]))].sort();
  assert.deepEqual(runtime, declared);
  // the workerd entry (a bundle of its own: it can't be imported in Node) exports the same names
  const exported = (f) => {
    const blocks = [...fs.readFileSync(path.join(PKG_DIR, f), 'utf8').matchAll(/^export \{([^}]*)\};/gm)];
    assert.equal(blocks.length, 1, `${f}: one export list`);
    return blocks[0][1].split(',').map((s) => s.trim().split(/\s+as\s+/).at(-1)).filter(Boolean).sort();
  };
  assert.deepEqual(exported('index.js'), runtime);
  assert.deepEqual(exported('workerd.js'), runtime);
});
