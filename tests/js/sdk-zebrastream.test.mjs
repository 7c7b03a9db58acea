// Interop with the real ZebraStream client (zebrastream-io 0.5.4 in .venv) through our relay:
// its CLI `zebrastream write/read -U http://127.0.0.1:PORT/connect/v0/` and its Python library
// against the SDK in Node, plain and age-rt passphrase, both directions. Checksums equal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath, hashStream, randomBytes, sha256 } from './lib/sdk.mjs';
import { skipUnless } from './lib/tools.mjs';

const sdk = await import(PKG);
const ZEBRASTREAM = path.join(ROOT, '.venv/bin/zebrastream');
const PYTHON = path.join(ROOT, '.venv/bin/python');
const skip = skipUnless(ZEBRASTREAM, 'the ZebraStream client (.venv)');
let relay;
let dir;
before(async () => {
  relay = await startRelay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-zs-'));
});
after(async () => {
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs a command with stdin from `inFile` and stdout to `outFile` (paths or null). */
function run(cmd, args, { inFile, outFile } = {}) {
  const stdin = inFile ? fs.openSync(inFile, 'r') : 'ignore';
  const stdout = outFile ? fs.openSync(outFile, 'w') : 'pipe';
  const proc = spawn(cmd, args, { stdio: [stdin, stdout, 'pipe'], cwd: ROOT });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const done = new Promise((resolve) => proc.on('exit', (code) => {
    if (typeof stdin === 'number') fs.closeSync(stdin);
    if (typeof stdout === 'number') fs.closeSync(stdout);
    resolve({ code, err });
  }));
  return { proc, done };
}

const cli = (mode, p, passphrase) => [mode, '--stream-path', p, '--connect-url', `${relay.http}/connect/v0/`,
  '--access-token', 'open-mode-needs-none', ...(passphrase ? ['--passphrase', passphrase] : [])];

for (const passphrase of [undefined, 'zebra passphrase']) {
  const kind = passphrase ? 'age-rt passphrase' : 'plain';

  test(`zebrastream CLI write → SDK receive (${kind})`, { skip, timeout: 120_000 }, async () => {
    const { bytes, sha256: want } = randomBytes(5 << 20);
    const file = path.join(dir, 'in.bin');
    fs.writeFileSync(file, bytes);
    const p = uniquePath('zs-w');
    const py = run(ZEBRASTREAM, cli('write', p, passphrase), { inFile: file });
    try {
      const r = await sdk.receive({ relay: relay.http, path: p, passphrase, timeout: 60 });
      const got = await hashStream(r.stream);
      const res = await py.done;
      assert.equal(res.code, 0, res.err);
      assert.equal(got.bytes, bytes.byteLength);
      assert.equal(got.sha256, want);
    } finally { py.proc.kill('SIGKILL'); }
  });

  test(`SDK send → zebrastream CLI read (${kind})`, { skip, timeout: 120_000 }, async () => {
    const { bytes, sha256: want } = randomBytes(5 << 20);
    const out = path.join(dir, 'out.bin');
    const p = uniquePath('zs-r');
    const py = run(ZEBRASTREAM, cli('read', p, passphrase), { outFile: out });
    try {
      const report = await sdk.send(bytes, { relay: relay.http, path: p, passphrase });
      const res = await py.done;
      assert.equal(res.code, 0, res.err);
      assert.equal(report.relayState, '[STATE:TRANSFER_SUCCESSFUL]');
      // the ZebraStream client sends no receipts: the relay's verdict, marked unconfirmed
      assert.equal(report.receipt, undefined);
      assert.equal(sha256(fs.readFileSync(out)), want);
    } finally { py.proc.kill('SIGKILL'); }
  });
}

const PY_WRITE = `
import sys, zebrastream.io.file as zf
kw = dict(stream_path=sys.argv[1], connect_api_url=sys.argv[2], access_token='x')
if len(sys.argv) > 3: kw.update(passphrase=sys.argv[3], encryption_mode='age-rt')
with zf.open(mode='wb', **kw) as f:
    for i in range(64):
        f.write(bytes((i * 7 + j) % 256 for j in range(65536)))
`;
const PY_READ = `
import sys, hashlib, zebrastream.io.file as zf
kw = dict(stream_path=sys.argv[1], connect_api_url=sys.argv[2], access_token='x')
if len(sys.argv) > 3: kw['passphrase'] = sys.argv[3]
h = hashlib.sha256(); n = 0
with zf.open(mode='rb', **kw) as f:
    while True:
        b = f.read(1 << 16)
        if not b: break
        h.update(b); n += len(b)
print(n, h.hexdigest())
`;

for (const passphrase of [undefined, 'library passphrase']) {
  const kind = passphrase ? 'age-rt passphrase' : 'plain';

  test(`zebrastream Python library writer → SDK receive (${kind})`, { skip, timeout: 120_000 }, async () => {
    const p = uniquePath('zs-lib-w');
    const py = run(PYTHON, ['-c', PY_WRITE, p, `${relay.http}/connect/v0/`, ...(passphrase ? [passphrase] : [])]);
    try {
      const r = await sdk.receive({ relay: relay.http, path: p, passphrase, timeout: 60 });
      const got = await hashStream(r.stream);
      const res = await py.done;
      assert.equal(res.code, 0, res.err);
      const expected = Buffer.concat(Array.from({ length: 64 }, (_, i) => Buffer.from(Array.from({ length: 65536 }, (_, j) => (i * 7 + j) % 256))));
      assert.equal(got.bytes, expected.length);
      assert.equal(got.sha256, sha256(expected));
    } finally { py.proc.kill('SIGKILL'); }
  });

  test(`SDK openWriter (log lines) → zebrastream Python library reader (${kind})`, { skip, timeout: 120_000 }, async () => {
    const p = uniquePath('zs-lib-r');
    const py = spawn(PYTHON, ['-c', PY_READ, p, `${relay.http}/connect/v0/`, ...(passphrase ? [passphrase] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    py.stdout.on('data', (d) => { out += d; });
    py.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((r) => py.on('exit', r));
    try {
      const w = sdk.openWriter({ relay: relay.http, path: p, passphrase });
      const writer = w.writable.getWriter();
      const lines = [];
      for (let i = 0; i < 1000; i++) lines.push(`{"seq":${i},"msg":"log line ${i}"}\n`);
      for (const l of lines) await writer.write(new TextEncoder().encode(l));
      await writer.close();
      await w.done;
      assert.equal(await exited, 0, err);
      const all = Buffer.from(lines.join(''));
      assert.equal(out.trim(), `${all.length} ${sha256(all)}`);
    } finally { py.kill('SIGKILL'); }
  });
}
