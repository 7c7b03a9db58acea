// The release relay (target/release/httpipe-relay, honouring CARGO_TARGET_DIR) on 127.0.0.1, a
// free port, plain HTTP: resolves { relay: ChildProcess, base: 'http://127.0.0.1:PORT' } once it
// says where it listens. For benchmarks that time the SDK, not the relay's debug build.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = path.resolve(ROOT, process.env.CARGO_TARGET_DIR || 'target');

export function startReleaseRelay() {
  return new Promise((resolve, reject) => {
    const relay = spawn(path.join(TARGET, 'release/httpipe-relay'), ['--host', '127.0.0.1', '--http-port', '0', '--no-tls']);
    let out = '';
    const onData = (d) => {
      out += d;
      const m = /listening (http:\/\/\S+)/.exec(out);
      if (m) resolve({ relay, base: m[1] });
    };
    relay.stdout.on('data', onData);
    relay.stderr.on('data', onData);
    relay.on('exit', (c) => reject(new Error(`relay exited ${c}: ${out}`)));
  });
}
