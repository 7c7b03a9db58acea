// Starts the real relay binary ($CARGO_TARGET_DIR/release/httpipe-relay, else
// target/release/httpipe-relay; HTTPIPE_RELAY_BIN overrides) on 127.0.0.1 with free ports
// (port 0) and reads the chosen ports from its start-up lines:
//   listening http://127.0.0.1:PORT
//   listening https://127.0.0.1:PORT
// Usage:
//   const relay = await startRelay();            // { http, https, proc, stop() }
//   ... fetch(`${relay.http}/path`) ...
//   await relay.stop();
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** Where cargo puts release binaries: $CARGO_TARGET_DIR/release (relative to the repo), else target/release. */
export const RELEASE_DIR = path.join(path.resolve(ROOT, process.env.CARGO_TARGET_DIR || 'target'), 'release');
export const RELAY_BIN = process.env.HTTPIPE_RELAY_BIN || path.join(RELEASE_DIR, 'httpipe-relay');

/**
 * @param {{ args?: string[], env?: Record<string,string>, timeoutMs?: number, port?: number|string }} [opts]
 *   `port`: the HTTP port (default 0, a free one), e.g. to restart a relay on the same port
 * @returns {Promise<{ http: string, https: string|undefined, proc: import('node:child_process').ChildProcess, output: () => string, stop: () => Promise<void> }>}
 */
/** The httpipe CLI as `npm start` builds it (HTTPIPE_CLI_BIN overrides). */
export const HTTPIPE_CLI = process.env.HTTPIPE_CLI_BIN || path.join(RELEASE_DIR, 'httpipe');

/** Runs the CLI; resolves { code, stderr } at its exit. `onStderr(text so far)` sees its progress. */
export function runCli(args, { cwd, onStderr } = {}) {
  const proc = spawn(HTTPIPE_CLI, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => { stderr += d; onStderr?.(stderr); });
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stderr })));
}

// Relays a test left running (it failed before its stop(): a browser that did not start, an
// assertion before the try) die with the test file's process, which scripts/test.sh lets exit
// once its tests are done (--test-force-exit) instead of waiting on them.
const running = new Set();
process.on('exit', () => { for (const proc of running) proc.kill('SIGKILL'); });

export async function startRelay(opts = {}) {
  if (!fs.existsSync(RELAY_BIN)) {
    throw new Error(`relay binary not found at ${RELAY_BIN}: run cargo build --release`);
  }
  const args = ['--host', '127.0.0.1', '--http-port', String(opts.port ?? 0), '--https-port', '0',
    '--www', path.join(ROOT, 'www'), '--sdk-dir', path.join(ROOT, 'pkg'), ...(opts.args || [])];
  const proc = spawn(RELAY_BIN, args, { env: { ...process.env, ...(opts.env || {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let out = '';
  const urls = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`relay did not start in time; output:\n${out}`)), opts.timeoutMs || 15000);
    const found = {};
    const onData = (d) => {
      out += d.toString();
      for (const m of out.matchAll(/listening (https?):\/\/(\S+)/g)) found[m[1]] = `${m[1]}://${m[2]}`;
      if (found.http && found.https) { clearTimeout(timer); resolve(found); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`relay exited with ${code}; output:\n${out}`)); });
  });
  return {
    http: urls.http,
    https: urls.https,
    proc,
    output: () => out,
    stop: () => new Promise((resolve) => {
      // A process killed by a signal has exitCode null but signalCode set: it is gone too.
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
    }),
  };
}
