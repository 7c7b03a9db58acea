// Start-up (issue #27 item 2): from `import` to the first key, httpipe vs `age-encryption`
// (the age authors' TypeScript package), in one run, interleaved, medians.
//   - httpipe: `await import(entry)`, `await init()`, `generateIdentity()` + `identityToRecipient()`.
//   - age-encryption: `await import(...)`, `await generateIdentity()` + `await identityToRecipient()`.
// Chromium (headless, Debian's): a fresh browser context per run (nothing cached), pages from a
// local static server, timed from navigation start; httpipe from pkg/ as shipped (no bundler),
// age-encryption bundled into one minified file by esbuild (its dist/ imports bare specifiers
// a browser can't resolve).
// LATENCY_MS=N delays every response by N ms (a network's round trip: a chain of imports pays it
// once per level). Node and Deno: a fresh process per run, timed inside it (the runtime's own
// start-up excluded), httpipe from pkg/, age-encryption from node_modules (Node) or the bundle
// (Deno: it resolves no bare specifiers from a path).
// workerd (from npm, as `wrangler dev` runs it): a fresh workerd process per run serving one
// Worker whose first request makes the first key; timed from spawning workerd to that response,
// so the process's own start-up is in every figure: an empty Worker is the floor, and
// "above the floor" is what the package adds to a cold start (the .wasm compiled at load, the
// global scope, the first key). Cloudflare allows a Worker's global scope 1 s of start-up.
// RUNS=N (default 7). Prints medians in ms and the ratio httpipe / age-encryption.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { freePort } from '../tests/js/lib/wrangler.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.RUNS || 7);
const LATENCY_MS = Number(process.env.LATENCY_MS || 0);
const DENO = path.join(ROOT, 'node_modules/.bin/deno');
const WORKERD = path.join(ROOT, 'node_modules/.bin/workerd');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-startup-'));
await build({
  entryPoints: [path.join(ROOT, 'node_modules/age-encryption/dist/index.js')],
  bundle: true, minify: true, format: 'esm', outfile: path.join(tmp, 'age.js'), logLevel: 'error',
});

const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const file = url.pathname.startsWith('/pkg/')
    ? path.join(ROOT, 'pkg', url.pathname.slice(5))
    : path.join(tmp, url.pathname.slice(1) || 'index.html');
  setTimeout(() => {
    fs.readFile(file, (err, body) => {
      if (err) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    });
  }, LATENCY_MS);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const times = {};
const add = (k, v) => (times[k] ||= []).push(v);

// Each variant is a page whose module script imports the package and makes the first key; the
// time is performance.now() then: from navigation start, the page's own load included (the same
// for every variant). `httpipe + preload` is the page with
// <link rel="preload" href="…/httpipe_wasm_bg.wasm" as="fetch" crossorigin> in its head, so the
// .wasm loads beside index.js instead of after it (docs/sdk.md, "Start-up").
const PAGES = {
  httpipe: { head: '', script: "const m = await import('/pkg/index.js'); await m.init(); m.identityToRecipient(m.generateIdentity());" },
  'httpipe + preload': {
    head: '<link rel="preload" href="/pkg/httpipe_wasm_bg.wasm" as="fetch" type="application/wasm" crossorigin>',
    script: "const m = await import('/pkg/index.js'); await m.init(); m.identityToRecipient(m.generateIdentity());",
  },
  'age-encryption': { head: '', script: "const m = await import('/age.js'); await m.identityToRecipient(await m.generateIdentity());" },
};
Object.entries(PAGES).forEach(([which, { head, script }], i) => {
  fs.writeFileSync(path.join(tmp, `page${i}.html`), `<!doctype html><title>${which}</title>${head}
<script type="module">${script} window.__ms = performance.now();</script>`);
});

async function chromiumRuns() {
  const { chromium } = await import('playwright-core');
  const { CHROMIUM, CHROMIUM_ARGS } = await import('../tests/js/lib/demo-browser.mjs');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const [i, which] of Object.keys(PAGES).entries()) {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${base}/page${i}.html`);
        await page.waitForFunction(() => window.__ms !== undefined, null, { timeout: 30_000 });
        add(`chromium ${which}`, await page.evaluate(() => window.__ms));
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
}

const ageFor = (runtime) => (runtime === 'node'
  ? path.join(ROOT, 'node_modules/age-encryption/dist/index.js')
  : path.join(tmp, 'age.js')); // Deno resolves no bare specifiers from a path: the bundle
const scripts = (runtime) => ({
  httpipe: `const t0 = performance.now();
const m = await import(${JSON.stringify(path.join(ROOT, 'pkg/index.js'))});
await m.init();
m.identityToRecipient(m.generateIdentity());
console.log(performance.now() - t0);`,
  'age-encryption': `const t0 = performance.now();
const m = await import(${JSON.stringify(ageFor(runtime))});
await m.identityToRecipient(await m.generateIdentity());
console.log(performance.now() - t0);`,
});

function processRuns(runtime) {
  for (let run = 0; run < RUNS; run++) {
    for (const which of ['httpipe', 'age-encryption']) {
      const file = path.join(tmp, `${which}.mjs`);
      fs.writeFileSync(file, scripts(runtime)[which]);
      const [cmd, args] = runtime === 'node' ? [process.execPath, [file]]
        : [DENO, ['run', '--no-prompt', '--allow-read', '--allow-env', file]];
      const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
      if (r.status !== 0) throw new Error(`${runtime} ${which}: ${r.stderr}`);
      add(`${runtime} ${which}`, Number(r.stdout.trim()));
    }
  }
}

// One Worker per variant, each in a directory of its own with a workerd config: its script and
// the files it imports (the package as shipped: workerd.js + the .wasm; or the age-encryption
// bundle), each a module of the kind its extension says (the config's `esModule` / `wasm`).
const kindOf = (file) => (file.endsWith('.wasm') ? 'wasm' : 'esModule');
const WORKERS = {
  httpipe: {
    script: "import { init, generateIdentity, identityToRecipient } from './workerd.js';\n"
      + 'export default { async fetch() { await init(); return new Response(identityToRecipient(generateIdentity())); } };',
    files: [path.join(ROOT, 'pkg/workerd.js'), path.join(ROOT, 'pkg/httpipe_wasm_bg.wasm'), path.join(ROOT, 'pkg/httpipe_xwing_bg.wasm')],
  },
  'age-encryption': {
    script: "import { generateIdentity, identityToRecipient } from './age.js';\n"
      + 'export default { async fetch() { return new Response(await identityToRecipient(await generateIdentity())); } };',
    files: [path.join(tmp, 'age.js')],
  },
  empty: { script: "export default { async fetch() { return new Response('ok'); } };", files: [] },
};

/** Spawns workerd for `which` and resolves the ms until its Worker's first response. */
async function workerdColdStart(which) {
  const dir = path.join(tmp, `workerd-${which}`);
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const { script, files } = WORKERS[which];
  fs.writeFileSync(path.join(dir, 'worker.js'), script);
  for (const f of files) fs.copyFileSync(f, path.join(dir, path.basename(f)));
  const modules = files.map((f) => `(name = "${path.basename(f)}", ${kindOf(f)} = embed "${path.basename(f)}")`);
  fs.writeFileSync(path.join(dir, 'config.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js"), ${modules.join(', ')} ],
  compatibilityDate = "2026-05-01",
  compatibilityFlags = ["nodejs_compat"],
);
`);
  const t0 = performance.now();
  const proc = spawn(WORKERD, ['serve', path.join(dir, 'config.capnp')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`workerd ${which} exited ${proc.exitCode}: ${err}`);
      if (performance.now() - t0 > 30_000) throw new Error(`workerd ${which}: no answer in 30 s: ${err}`);
      const r = await fetch(`http://127.0.0.1:${port}/`).catch(() => null);
      if (r) {
        const body = await r.text();
        if (!r.ok) throw new Error(`workerd ${which}: ${r.status} ${body}`);
        return performance.now() - t0;
      }
      await new Promise((res) => setTimeout(res, 2));
    }
  } finally {
    proc.kill('SIGKILL');
  }
}

async function workerdRuns() {
  for (let run = 0; run < RUNS; run++) {
    for (const which of Object.keys(WORKERS)) add(`workerd ${which}`, await workerdColdStart(which));
  }
}

try {
  if (process.env.NO_CHROMIUM !== '1') await chromiumRuns();
  if (process.env.NO_WORKERD !== '1' && fs.existsSync(WORKERD)) await workerdRuns();
  processRuns('node');
  if (process.env.NO_DENO !== '1' && fs.existsSync(DENO)) processRuns('deno');
} finally {
  server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}

const load = os.loadavg()[0].toFixed(1);
console.log(`to the first key, ms (Chromium: from navigation start; Node, Deno: from import; workerd: from spawning the process), median of ${RUNS}; latency ${LATENCY_MS} ms per response; load ${load}`);
console.log('| runtime | age-encryption | httpipe | httpipe / age-encryption |');
console.log('|---|---:|---:|---:|');
for (const rt of ['chromium', 'node', 'deno']) {
  const a = times[`${rt} age-encryption`];
  for (const which of ['httpipe', 'httpipe + preload']) {
    const h = times[`${rt} ${which}`];
    if (!a || !h) continue;
    const name = which === 'httpipe' ? rt : `${rt}, ${which.slice(10)}`;
    console.log(`| ${name} | ${median(a).toFixed(1)} | ${median(h).toFixed(1)} | ${(median(h) / median(a)).toFixed(2)} |`);
  }
}
const floor = times['workerd empty'];
if (floor) {
  const above = (k) => median(times[k]) - median(floor);
  console.log(`| workerd (cold start; an empty Worker: ${median(floor).toFixed(1)}) | ${median(times['workerd age-encryption']).toFixed(1)} | ${median(times['workerd httpipe']).toFixed(1)} | ${(median(times['workerd httpipe']) / median(times['workerd age-encryption'])).toFixed(2)} |`);
  console.log(`| workerd, above the empty Worker | ${above('workerd age-encryption').toFixed(1)} | ${above('workerd httpipe').toFixed(1)} | ${(above('workerd httpipe') / above('workerd age-encryption')).toFixed(2)} |`);
}
