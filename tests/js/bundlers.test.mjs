// The npm package as a bundler user meets it: `npm pack` of pkg/, `npm install <tarball>` into
// a copy of each tiny app in tests/bundlers/<tool>/, a production build with the real tool
// (the workspace's pinned devDependencies), and a send/receive round trip against the real
// relay in headless Chromium, over the plain port (HTTP/1.1: segmented upload) and the TLS
// port (HTTP/2: streaming upload). The page is served from its own origin (a small static
// server here, the Vite dev server, or `next start`); the relay answers CORS.
//   Vite (build and dev server), webpack 5, Next.js with Turbopack: no configuration (they emit
//     `new URL('./httpipe_wasm_bg.wasm', import.meta.url)` as an asset).
//   esbuild: --alias:httpipe=httpipe/inline (the module inside the JavaScript), or ESM output
//     with the .wasm copied next to the bundle; without either, a clear WASM_LOAD_FAILED.
//   Rollup (+ @rollup/plugin-node-resolve): the page imports httpipe/inline.
//   Next.js (app router; a client component sends, a route handler in the Node runtime
//     receives): `next build` + `next start`; `next build --webpack` with serverExternalPackages
//     (HTTPIPE_BUNDLERS_NEXT_WEBPACK=1).
// About 2–2.5 min on the 2-core machine, most of it `next build` (45–80 s; with --webpack
// another 50–150 s); the rest ~40 s. Screenshots: test-artifacts/bundler-<app>.png. HTTPIPE_KEEP_BUNDLER_WORK=1 keeps
// the built apps in tests/bundlers/.work/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { launchChromium, ARTIFACTS } from './lib/demo-browser.mjs';

const FIXTURES = path.join(ROOT, 'tests/bundlers');
// Inside the repository (git-ignored), so the apps resolve the tools and React from the
// workspace's node_modules; only httpipe is installed into each app, from the tarball.
const WORK = path.join(FIXTURES, '.work');
const BIN = path.join(ROOT, 'node_modules/.bin');
const SIZE = 8192;

let relay;
let browser;
let packDir;
let tarball;
const cleanups = [];

/** Runs a command to its end within `timeoutMs`; rejects with its output otherwise. */
function run(cmd, args, { cwd, env = {}, timeoutMs = 60000 } = {}) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => {
      try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* already gone */ }
      reject(new Error(`${cmd} ${args.join(' ')} still running after ${timeoutMs} ms; output:\n${out}`));
    }, timeoutMs);
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        console.log(`${path.basename(cmd)} ${args.filter((a) => !a.startsWith('/')).join(' ')} (${path.basename(cwd)}): ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        resolve(out);
      }
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code ?? signal}; output:\n${out}`));
    });
  });
}

/** A long-running process (next start); stopped in `after`. Resolves once `ready` matches its output. */
function startProcess(cmd, args, { cwd, env = {}, ready, timeoutMs = 30000 }) {
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    const stop = () => new Promise((done) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return done();
      proc.once('exit', () => done());
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { return done(); }
      setTimeout(() => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 3000).unref();
    });
    cleanups.push(stop);
    const timer = setTimeout(() => reject(new Error(`${cmd} not ready after ${timeoutMs} ms; output:\n${out}`)), timeoutMs);
    const onData = (d) => {
      out += d;
      if (ready.test(out)) { clearTimeout(timer); resolve({ proc, output: () => out, stop }); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${cmd} exited with ${code}; output:\n${out}`)); });
  });
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.map': 'application/json', '.wasm': 'application/wasm' };

/** Serves a built app's directory on 127.0.0.1 (a free port); stopped in `after`. */
async function serveStatic(dir) {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = path.join(dir, rel);
    if (!file.startsWith(dir)) { res.writeHead(403).end(); return; }
    if (rel.endsWith('/')) file = path.join(file, 'index.html');
    fs.readFile(file, (err, body) => {
      if (err) { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found'); return; }
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' }).end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return `http://127.0.0.1:${server.address().port}`;
}

async function freePort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** A fresh copy of tests/bundlers/<tool> in .work/ with the tarball installed. */
async function prepare(tool, { shared = true, importFrom = 'httpipe', name = tool } = {}) {
  const dir = path.join(WORK, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(FIXTURES, tool), dir, { recursive: true });
  if (shared) {
    fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
    const page = fs.readFileSync(path.join(FIXTURES, 'shared/index.js'), 'utf8');
    fs.writeFileSync(path.join(dir, 'src/index.js'), page.replace("from 'httpipe';", `from '${importFrom}';`));
  }
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts', tarball], { cwd: dir, timeoutMs: 60000 });
  assert.ok(fs.existsSync(path.join(dir, 'node_modules/httpipe/package.json')), 'httpipe installed from the tarball');
  return dir;
}

/**
 * Opens the app in Chromium with both relay ports in the query, waits for its result and
 * returns it with the .wasm responses the page saw and its console errors.
 */
async function openApp(tool, origin, extra = []) {
  const page = await browser.context.newPage();
  const wasm = [];
  const errors = [];
  page.on('response', (r) => { if (/\.wasm(\?|$)/.test(r.url())) wasm.push({ url: r.url(), status: r.status() }); });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    const q = new URLSearchParams([['relay', relay.http], ['relay', relay.https], ['path', `/bundler/${tool}-${process.pid}-${Date.now()}`], ['size', String(SIZE)], ...extra]);
    await page.goto(`${origin}/?${q}`, { timeout: 30000 });
    await page.waitForSelector('body[data-result]', { timeout: 45000 }).catch((e) => {
      throw new Error(`${tool}: no result in the page (${e.message}); page errors: ${errors.join(' | ') || 'none'}; wasm: ${JSON.stringify(wasm)}`);
    });
    const results = JSON.parse(await page.getAttribute('body', 'data-result'));
    const pq = JSON.parse(await page.getAttribute('body', 'data-pq') ?? 'null');
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `bundler-${tool}.png`), timeout: 10000 }).catch(() => {});
    return { results, pq, wasm, errors };
  } finally {
    await page.close().catch(() => {});
  }
}

/**
 * Both round trips complete with equal bytes; HTTP/1.1 segmented, HTTP/2 streaming. The shared
 * page (not Next's) then round-trips a post-quantum encryption: the second module was not
 * fetched before it, and works from where the bundler put it.
 */
function assertRoundTrips(tool, { results, pq, wasm, errors }) {
  const detail = `${tool}: ${JSON.stringify(results)}; post-quantum: ${JSON.stringify(pq)}; wasm: ${JSON.stringify(wasm)}; page errors: ${errors.join(' | ') || 'none'}`;
  if (!tool.startsWith('next')) {
    assert.ok(pq, detail);
    assert.equal(pq.error, undefined, detail);
    assert.deepEqual([pq.before, pq.equal, pq.recipient], [false, true, 'age1pq1'], detail);
  }
  assert.equal(results.length, 2, detail);
  for (const r of results) {
    assert.equal(r.error, undefined, detail);
    assert.equal(r.bytes, SIZE, detail);
    assert.equal(r.equal, true, detail);
  }
  assert.equal(results[0].transport, 'segmented', detail);
  assert.equal(results[1].transport, 'stream', detail);
}

before(async () => {
  relay = await startRelay();
  browser = await launchChromium();
  packDir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-pack-'));
  const out = await run('npm', ['pack', '--pack-destination', packDir, '--json'], { cwd: path.join(ROOT, 'pkg'), timeoutMs: 60000 });
  tarball = path.join(packDir, JSON.parse(out.slice(out.indexOf('['))).at(0).filename);
  assert.ok(fs.existsSync(tarball), `npm pack wrote ${tarball}`);
});

after(async () => {
  for (const stop of cleanups.reverse()) await stop().catch(() => {});
  await browser?.close();
  await relay?.stop();
  if (packDir) fs.rmSync(packDir, { recursive: true, force: true });
  if (!process.env.HTTPIPE_KEEP_BUNDLER_WORK) fs.rmSync(WORK, { recursive: true, force: true });
});

test('Vite: vite build, no configuration', { timeout: 120000 }, async () => {
  const dir = await prepare('vite');
  await run(path.join(BIN, 'vite'), ['build'], { cwd: dir, timeoutMs: 90000 });
  const result = await openApp('vite', await serveStatic(path.join(dir, 'dist')));
  assertRoundTrips('vite', result);
  assert.ok(result.wasm.some((w) => w.status === 200 && /\/assets\/httpipe_wasm_bg-[^/]+\.wasm$/.test(w.url)), `vite: the emitted .wasm was fetched: ${JSON.stringify(result.wasm)}`);
  assert.ok(result.wasm.some((w) => w.status === 200 && /\/assets\/httpipe_xwing_bg-[^/]+\.wasm$/.test(w.url)), `vite: the emitted post-quantum .wasm was fetched: ${JSON.stringify(result.wasm)}`);
});

test('Vite: the dev server, no configuration', { timeout: 60000 }, async () => {
  const dir = path.join(WORK, 'vite');
  assert.ok(fs.existsSync(path.join(dir, 'node_modules/httpipe')), 'the vite app was prepared by the previous test');
  const port = await freePort();
  await startProcess(path.join(BIN, 'vite'), ['--host', '127.0.0.1', '--port', String(port), '--strictPort'], { cwd: dir, ready: /ready in/i });
  const result = await openApp('vite-dev', `http://127.0.0.1:${port}`);
  assertRoundTrips('vite-dev', result);
  assert.ok(result.wasm.some((w) => w.status === 200), `vite dev: the .wasm was fetched: ${JSON.stringify(result.wasm)}`);
});

// esbuild leaves `new URL('./httpipe_wasm_bg.wasm', import.meta.url)` alone (it has no asset
// handling for it), and its default output format (IIFE) has no import.meta.url at all. The
// package's answer: httpipe/inline, an entry with the module inside the JavaScript, chosen with
// one flag (--alias:httpipe=httpipe/inline) or by importing it; or ESM output with the .wasm
// copied next to the bundle.
test('esbuild: --alias:httpipe=httpipe/inline (the default IIFE output), or ESM with the .wasm copied next to the bundle', { timeout: 90000 }, async () => {
  const dir = await prepare('esbuild');
  const esbuild = (out, ...args) => run(path.join(BIN, 'esbuild'), ['src/index.js', '--bundle', `--outdir=${out}`, ...args], { cwd: dir, timeoutMs: 30000 })
    .then(() => fs.copyFileSync(path.join(dir, 'index.html'), path.join(dir, out, 'index.html')));

  await esbuild('dist-inline', '--alias:httpipe=httpipe/inline');
  const inline = await openApp('esbuild', await serveStatic(path.join(dir, 'dist-inline')));
  assertRoundTrips('esbuild --alias:httpipe=httpipe/inline', inline);
  assert.deepEqual(inline.wasm, [], 'no .wasm request: the module is in the bundle');

  await esbuild('dist-esm', '--format=esm');
  for (const file of ['httpipe_wasm_bg.wasm', 'httpipe_xwing_bg.wasm']) {
    fs.copyFileSync(path.join(dir, 'node_modules/httpipe', file), path.join(dir, 'dist-esm', file));
  }
  const copied = await openApp('esbuild-esm-copy', await serveStatic(path.join(dir, 'dist-esm')));
  assertRoundTrips('esbuild --format=esm + cp httpipe_*_bg.wasm', copied);
});

test('esbuild without either: every call rejects with WASM_LOAD_FAILED saying what it tried (the IIFE bundle still loads)', { timeout: 60000 }, async () => {
  const dir = path.join(WORK, 'esbuild');
  assert.ok(fs.existsSync(path.join(dir, 'node_modules/httpipe')), 'the esbuild app was prepared by the previous test');
  const esbuild = (out, ...args) => run(path.join(BIN, 'esbuild'), ['src/index.js', '--bundle', `--outdir=${out}`, ...args], { cwd: dir, timeoutMs: 30000 })
    .then(() => fs.copyFileSync(path.join(dir, 'index.html'), path.join(dir, out, 'index.html')));

  await esbuild('dist-plain-esm', '--format=esm');
  const esm = await openApp('esbuild-plain-esm', await serveStatic(path.join(dir, 'dist-plain-esm')));
  for (const r of esm.results) assert.match(r.error ?? '', /^WASM_LOAD_FAILED: .*\/httpipe_wasm_bg\.wasm: HTTP 404/, JSON.stringify(esm.results));

  await esbuild('dist-plain-iife');
  const iife = await openApp('esbuild-plain-iife', await serveStatic(path.join(dir, 'dist-plain-iife')));
  for (const r of iife.results) assert.match(r.error ?? '', /^WASM_LOAD_FAILED: .*no import\.meta\.url.*httpipe\/inline/, JSON.stringify(iife.results));
});

test('webpack 5: webpack --mode production, no configuration', { timeout: 150000 }, async () => {
  const dir = await prepare('webpack');
  await run(path.join(BIN, 'webpack'), ['--mode', 'production'], { cwd: dir, timeoutMs: 120000 });
  fs.copyFileSync(path.join(dir, 'index.html'), path.join(dir, 'dist/index.html'));
  const result = await openApp('webpack', await serveStatic(path.join(dir, 'dist')));
  assertRoundTrips('webpack', result);
  assert.equal(result.wasm.filter((w) => w.status === 200).length, 2, `webpack: both emitted .wasm files were fetched: ${JSON.stringify(result.wasm)}`);
});

test('Rollup (+ @rollup/plugin-node-resolve): the page imports httpipe/inline', { timeout: 60000 }, async () => {
  const dir = await prepare('rollup', { importFrom: 'httpipe/inline' });
  await run(path.join(BIN, 'rollup'), ['-c'], { cwd: dir, timeoutMs: 45000 });
  fs.copyFileSync(path.join(dir, 'index.html'), path.join(dir, 'dist/index.html'));
  const result = await openApp('rollup', await serveStatic(path.join(dir, 'dist')));
  assertRoundTrips('rollup', result);
  assert.deepEqual(result.wasm, [], 'no .wasm request: the module is in the bundle');
});

test('Next.js (app router, Turbopack): next build + next start, no configuration; a client component sends, a route handler receives', { timeout: 300000 }, async () => {
  const dir = await prepare('next', { shared: false });
  const env = { NEXT_TELEMETRY_DISABLED: '1' };
  await run(path.join(BIN, 'next'), ['build'], { cwd: dir, env, timeoutMs: 240000 });
  const port = await freePort();
  await startProcess(path.join(BIN, 'next'), ['start', '-H', '127.0.0.1', '-p', String(port)], { cwd: dir, env, ready: /Ready in|started server/i });
  // The route handler receives through the relay's plain port (Node would refuse the TLS
  // port's self-signed certificate); the page sends to both ports.
  const result = await openApp('next', `http://127.0.0.1:${port}`, [['via', relay.http]]);
  assertRoundTrips('next', result);
  assert.ok(result.wasm.some((w) => w.status === 200 && w.url.includes('/_next/static/')), `next: the emitted .wasm was fetched: ${JSON.stringify(result.wasm)}`);
});

// `next build --webpack`: the browser side works as is, but webpack turns the module's URL in
// the server bundle into a root-relative '/_next/static/media/...' that Node can't load
// (WASM_LOAD_FAILED in the route handler); serverExternalPackages lets Node import the
// package from node_modules, which reads the .wasm from disk.
// Off by default: a second Next.js build (1–2.5 min on the 2-core machine) would take the file
// past 4 minutes. HTTPIPE_BUNDLERS_NEXT_WEBPACK=1 runs it.
const NEXT_WEBPACK = process.env.HTTPIPE_BUNDLERS_NEXT_WEBPACK === '1';
test('Next.js (app router, next build --webpack): serverExternalPackages: [\'httpipe\']', {
  timeout: 300000, skip: NEXT_WEBPACK ? false : 'set HTTPIPE_BUNDLERS_NEXT_WEBPACK=1 to run it (one more Next.js build)',
}, async () => {
  const dir = await prepare('next', { shared: false, name: 'next-webpack' });
  fs.writeFileSync(path.join(dir, 'next.config.mjs'), "export default { serverExternalPackages: ['httpipe'] };\n");
  const env = { NEXT_TELEMETRY_DISABLED: '1' };
  await run(path.join(BIN, 'next'), ['build', '--webpack'], { cwd: dir, env, timeoutMs: 240000 });
  const port = await freePort();
  await startProcess(path.join(BIN, 'next'), ['start', '-H', '127.0.0.1', '-p', String(port)], { cwd: dir, env, ready: /Ready in|started server/i });
  const result = await openApp('next-webpack', `http://127.0.0.1:${port}`, [['via', relay.http]]);
  assertRoundTrips('next --webpack', result);
});
