// `wrangler dev` (local workerd from npm) for the Worker tests, on free 127.0.0.1 ports.
//   const w = await startWrangler(dir, ['--var', 'KEY:value']);  // w.url, w.output()
//   await w.stop();
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { ROOT } from './relay.mjs';

const WRANGLER = path.join(ROOT, 'node_modules/.bin/wrangler');

/** A port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Starts `wrangler dev` in `cwd` and resolves once it is ready (90 s at most). */
export async function startWrangler(cwd, extraArgs = []) {
  const port = await freePort();
  const proc = spawn(WRANGLER, ['dev', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(await freePort()), ...extraArgs], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', CI: 'true', NO_COLOR: '1' },
    detached: true,
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${out}`)), 90_000);
    const onData = (d) => {
      out += d;
      if (/Ready on http/.test(out)) { clearTimeout(timer); resolve(); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`wrangler exited ${code}:\n${out}`)); });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    proc,
    /** What wrangler and workerd printed so far (stdout and stderr). */
    output: () => out,
    /** Ends the whole process group (wrangler starts workerd as a child). */
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => { proc.once('exit', r); setTimeout(r, 5000).unref(); });
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ }
      await exited;
      try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    },
  };
}
