// A relay cluster on 127.0.0.1 for tests and the cluster benchmark (PROTOCOL.md §13): a
// throw-away Redis, N `httpipe-relay --cluster` nodes, and an nginx round-robin balancer in
// front of them. Every process runs as the current user on free ports with its files in a
// temporary directory, and is stopped by the caller (t.after / finally).
//
//   const redis = await startRedis();                 // { port, url, stop(), kill(), restart(), cli() }
//   const cluster = await startCluster({ nodes: 3, redis });   // { nodes: [relay...], urls, stop() }
//   const lb = await startNginx(cluster.urls);        // { http, h2c, stop() }
//   ...
//   await lb.stop(); await cluster.stop(); await redis.stop();
//
// redis-server and nginx are Debian packages that `scripts/setup.sh full` installs;
// `REDIS_SERVER` and `NGINX` are their paths for tools.mjs's skipUnless().
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startRelay } from './relay.mjs';

/** The first of `candidates` that exists (else the first, for the "missing" message). */
function which(...candidates) {
  return candidates.find((c) => fs.existsSync(c)) || candidates[0];
}
export const REDIS_SERVER = which('/usr/bin/redis-server', '/usr/local/bin/redis-server');
export const REDIS_CLI = which('/usr/bin/redis-cli', '/usr/local/bin/redis-cli');
// nginx lives in /usr/sbin, which a non-root PATH often lacks
export const NGINX = which('/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx', '/usr/local/bin/nginx');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on 127.0.0.1 (free when asked; the caller binds it at once). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Resolves once 127.0.0.1:port accepts a TCP connection, rejects after `ms` or when `dead()`. */
async function waitForPort(port, ms, dead, what) {
  const deadline = performance.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    const why = dead();
    if (why) throw new Error(`${what} exited before it listened: ${why}`);
    if (performance.now() > deadline) throw new Error(`${what} did not listen on ${port} within ${ms} ms`);
    await sleep(30);
  }
}

/** Spawns a server process, keeping its output for error messages; stop() = SIGTERM then SIGKILL. */
function spawnServer(cmd, args, opts = {}) {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  proc.once('error', (e) => { out += `\nspawn error: ${e.message}`; });
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;
  return {
    proc,
    exited,
    output: () => out,
    dead: () => (gone() ? `exit ${proc.exitCode ?? proc.signalCode}; output:\n${out}` : ''),
    async stop(signal = 'SIGTERM') {
      if (gone()) return;
      proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    },
  };
}

/**
 * redis-server on 127.0.0.1 and a free port, nothing persisted (`--save "" --appendonly no`),
 * its working directory a temporary one.
 * @returns {Promise<{ port: number, url: string, stop(): Promise<void>, kill(): Promise<void>,
 *   restart(): Promise<void>, cli(...args: string[]): string, running(): boolean }>}
 *   kill(): SIGKILL (a crash); restart(): a new, empty redis-server on the same port.
 */
export async function startRedis({ port } = {}) {
  port = port || await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-redis-'));
  let server;
  const launch = async () => {
    server = spawnServer(REDIS_SERVER, ['--bind', '127.0.0.1', '--port', String(port), '--save', '',
      '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no', '--loglevel', 'warning'], { cwd: dir });
    await waitForPort(port, 10_000, server.dead, 'redis-server');
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    running: () => !server.dead(),
    /** redis-cli against this server; its stdout. */
    cli: (...args) => execFileSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' }),
    kill: () => server.stop('SIGKILL'),
    restart: async () => { await server.stop('SIGKILL'); await launch(); },
    stop: async () => { await server.stop(); fs.rmSync(dir, { recursive: true, force: true }); },
  };
}

/** GET url → { status, headers, body } (text), with a timeout; rejects on a network error. */
export async function getText(url, ms = 5000) {
  const r = await fetch(url, { signal: AbortSignal.timeout(ms) });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

/**
 * The number of live cluster nodes a node's /healthz reports: its first line is `ok`, a later
 * line says `cluster: N nodes` (PROTOCOL.md §13.5, §9). undefined when no such line.
 */
export function healthzNodes(body) {
  const m = /^cluster\b[^\n]*?\b(\d+)\s+nodes?\b/im.exec(body);
  return m ? Number(m[1]) : undefined;
}

/** Polls every node's /healthz until each reports `want` live nodes. */
export async function waitForNodes(nodes, want, ms = 10_000) {
  const deadline = performance.now() + ms;
  let last = [];
  for (;;) {
    last = await Promise.all(nodes.map((n) => getText(`${n.http}/healthz`, 2000)
      .then((r) => `${r.status} ${r.body}`, (e) => `error ${e.message}`)));
    if (last.every((b) => b.startsWith('200 ok\n') && healthzNodes(b.slice(4)) === want)) return;
    if (performance.now() > deadline) {
      throw new Error(`the cluster nodes did not all report ${want} nodes within ${ms} ms; /healthz:\n${
        last.map((b, i) => `node ${i} (${nodes[i].http}): ${JSON.stringify(b)}`).join('\n')}`);
    }
    await sleep(100);
  }
}

/**
 * `nodes` relays (tests/js/lib/relay.mjs's startRelay) with `--cluster redis://...`, ready
 * when every node's /healthz lists all of them. Uses `redis` if given (not stopped by
 * stop()), else starts its own.
 * @param {{ nodes?: number, args?: string[], env?: Record<string,string>, redis?: Awaited<ReturnType<typeof startRedis>> }} [opts]
 */
export async function startCluster({ nodes = 3, args = [], env, redis } = {}) {
  const ownRedis = !redis;
  redis = redis || await startRedis();
  const started = [];
  const stopAll = async () => {
    await Promise.all(started.map((n) => n.stop()));
    if (ownRedis) await redis.stop();
  };
  try {
    for (let i = 0; i < nodes; i++) {
      started.push(await startRelay({ args: ['--cluster', redis.url, ...args], env }));
    }
    await waitForNodes(started, nodes);
  } catch (e) {
    await stopAll();
    throw e;
  }
  return {
    redis,
    nodes: started,
    urls: started.map((n) => n.http),
    stop: stopAll,
  };
}

/** nginx's version as [major, minor, patch] (`nginx -v` writes it to stderr). */
function nginxVersion() {
  const r = spawnSync(NGINX, ['-v'], { encoding: 'utf8' });
  const m = /nginx\/(\d+)\.(\d+)\.(\d+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? m.slice(1).map(Number) : [0, 0, 0];
}

/** The documented `location` directives (docs/cluster.md). */
export const PROXY_CONF = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../examples/cluster/proxy.conf');

/**
 * nginx (the Debian package) as a round-robin balancer in front of `upstreams` (base URLs
 * `http://127.0.0.1:PORT`), configured as docs/cluster.md says: its `location` includes
 * examples/cluster/proxy.conf, the documented file (streaming both ways, no body size limit,
 * day-long proxy timeouts, upstream HTTP/1.1, nginx's defaults for a dead node). One worker
 * (so the rotation is one strict cycle). Two listeners: `http` speaks HTTP/1.1, `h2c` HTTP/2
 * with prior knowledge (nginx's plain-text HTTP/2). Every response carries `X-Upstream: ADDR`,
 * the node that served it (nginx's `$upstream_addr`), so a test can check that a pair was
 * split (the one line the tests add to the documented configuration).
 * Known limit (nginx 1.22): an HTTP/1.1 client's upload stalls a few MiB after the upstream's
 * response began (nginx stops reading the client's body; the relay answers a producer at once),
 * so keep uploads through the `http` listener small; the `h2c` one streams them whole.
 * @returns {Promise<{ http: string, h2c: string, dir: string, output(): string, stop(): Promise<void> }>}
 */
export async function startNginx(upstreams) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-nginx-'));
  const [httpPort, h2Port] = [await freePort(), await freePort()];
  const [maj, min, patch] = nginxVersion();
  // nginx 1.25.1 made HTTP/2 a server-level switch (`http2 on`); before, `listen ... http2`
  const newH2 = maj > 1 || (maj === 1 && (min > 25 || (min === 25 && patch >= 1)));
  const h2Listen = newH2 ? `listen 127.0.0.1:${h2Port};\n    http2 on;` : `listen 127.0.0.1:${h2Port} http2;`;
  const tmp = (name) => { const d = path.join(dir, name); fs.mkdirSync(d); return d; };
  const locations = `
    location / {
      include ${PROXY_CONF};
      add_header X-Upstream $upstream_addr always;
    }`;
  const conf = `
${process.getuid?.() === 0 ? 'user root root;' : ''}
worker_processes 1;
events { worker_connections 4096; }
http {
  # nginx's default access log (the combined format: every request line with its query):
  # tests check that no capability appears in it (PROTOCOL.md §5.1 channel keys)
  access_log ${path.join(dir, 'access.log')};
  client_body_temp_path ${tmp('client_body')};
  proxy_temp_path ${tmp('proxy')};
  fastcgi_temp_path ${tmp('fastcgi')};
  uwsgi_temp_path ${tmp('uwsgi')};
  scgi_temp_path ${tmp('scgi')};
  upstream httpipe {
${upstreams.map((u) => `    server ${new URL(u).host};`).join('\n')}
  }
  server {
    listen 127.0.0.1:${httpPort};
    ${locations}
  }
  server {
    ${h2Listen}
    ${locations}
  }
}
`;
  const confFile = path.join(dir, 'nginx.conf');
  fs.writeFileSync(confFile, conf);
  const server = spawnServer(NGINX, ['-p', `${dir}/`, '-c', confFile, '-e', 'stderr',
    '-g', `daemon off; master_process on; pid ${path.join(dir, 'nginx.pid')}; error_log stderr;`]);
  try {
    await waitForPort(httpPort, 10_000, server.dead, 'nginx');
    await waitForPort(h2Port, 10_000, server.dead, 'nginx');
  } catch (e) {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    http: `http://127.0.0.1:${httpPort}`,
    h2c: `http://127.0.0.1:${h2Port}`,
    dir,
    accessLog: path.join(dir, 'access.log'),
    output: server.output,
    // SIGTERM is nginx's fast shutdown: open connections are closed at once
    stop: async () => { await server.stop('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); },
  };
}

/**
 * One HTTP request with a streamed body and a streamed response, over HTTP/1.1 (node:http,
 * its own connection) or HTTP/2 with prior knowledge (`h2: true`, node:http2, its own
 * session). The body is written with write()/end() (or `body` for a whole one);
 * `response` resolves at the response head with { status, headers, body } where body is a
 * Node Readable; cancel() drops the request (HTTP/1.1: closes the connection; h2:
 * RST_STREAM(CANCEL) and the session closed).
 * @param {string} url
 * @param {{ method?: string, headers?: Record<string,string|string[]>, body?: Buffer|string|null, h2?: boolean }} [opts]
 */
export function request(url, { method = 'GET', headers = {}, body, h2 = false } = {}) {
  const u = new URL(url);
  let out;
  let resolveHead;
  let rejectHead;
  const response = new Promise((res, rej) => { resolveHead = res; rejectHead = rej; });
  response.catch(() => {});
  let cancel;
  if (h2) {
    const session = http2.connect(u.origin);
    session.on('error', (e) => rejectHead(e));
    const stream = session.request({ ':method': method, ':path': u.pathname + u.search, ...headers },
      { endStream: method === 'GET' && body === undefined });
    stream.on('response', (h) => {
      const { ':status': status, ...rest } = h;
      resolveHead({ status, headers: rest, body: stream });
    });
    stream.on('error', (e) => rejectHead(e));
    stream.on('close', () => { rejectHead(new Error(`h2 stream closed before a response (code ${stream.rstCode})`)); session.close(); });
    out = stream;
    cancel = () => { stream.close(http2.constants.NGHTTP2_CANCEL); session.destroy(); };
  } else {
    const req = http.request(url, { method, headers, agent: false });
    req.on('response', (res) => resolveHead({ status: res.statusCode, headers: res.headers, body: res }));
    req.on('error', (e) => rejectHead(e));
    req.on('close', () => rejectHead(new Error('connection closed before a response')));
    req.setNoDelay(true);
    req.flushHeaders();
    out = req;
    cancel = () => req.destroy();
  }
  out.on('error', () => {}); // surfaced through `response` or the body's reader
  if (body !== undefined && body !== null) out.end(body);
  else if (method === 'GET' && !h2) out.end();
  return {
    response,
    /** Writes a chunk, resolving when the stream accepts more. */
    write: (chunk) => new Promise((resolve, reject) => {
      if (out.write(chunk)) { resolve(); return; }
      const onDrain = () => { out.off('error', onError); resolve(); };
      const onError = (e) => { out.off('drain', onDrain); reject(e); };
      out.once('drain', onDrain);
      out.once('error', onError);
    }),
    end: () => out.end(),
    cancel,
  };
}

/** A response body (Node Readable) as text, rejecting if it ends abnormally. */
export async function readText(body) {
  let s = '';
  body.setEncoding('utf8');
  for await (const c of body) s += c;
  return s;
}

/** A response body as one Buffer. */
export async function readAll(body) {
  const parts = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts);
}
