// The npm package as published (pkg/, from scripts/build-sdk.sh): a wasm module that can't be
// loaded is an HttpipeError WASM_LOAD_FAILED naming what it tried (Node, Deno, Chromium: a
// bundler that didn't copy the .wasm, a dev server answering with its index.html).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, startRelay } from './lib/relay.mjs';
import { launchChromium } from './lib/demo-browser.mjs';

const PKG_DIR = path.join(ROOT, 'pkg');
const WASM = 'httpipe_wasm_bg.wasm';
const DENO = path.join(ROOT, 'node_modules/.bin/deno');

// A copy of the package without its .wasm file: what a bundler that didn't copy it serves.
// Each test imports its own copy, so each gets fresh module state.
const copies = [];
function brokenCopy() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-nowasm-'));
  copies.push(dir);
  fs.cpSync(PKG_DIR, dir, { recursive: true });
  fs.rmSync(path.join(dir, WASM));
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
    assert.match(e.message, /Serve httpipe_wasm_bg\.wasm next to the package's index\.js/);
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
  // a failure is not remembered: the next init() tries again
  await sdk.init(`${base}/ok.wasm`);
  assert.match(sdk.generateIdentity(), /^AGE-SECRET-KEY-1/);
});

test('Node: init() with a file: URL reads it from disk', async () => {
  const broken = brokenCopy();
  const sdk = await import(pathToFileURL(path.join(broken, 'index.js')).href);
  await assert.rejects(sdk.init(pathToFileURL(path.join(broken, 'nope.wasm'))), wasmLoadFailed('nope.wasm', 'ENOENT'));
  await sdk.init(pathToFileURL(path.join(PKG_DIR, WASM)));
  assert.match(sdk.identityToRecipient(sdk.generateIdentity()), /^age1/);
});

test('Deno: a package without its .wasm → WASM_LOAD_FAILED naming the file', { timeout: 60_000 }, async () => {
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
  } finally {
    await browser.close();
    await relay.stop();
  }
});
