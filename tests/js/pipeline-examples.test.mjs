// The pipeline guide's examples run as written: the files in examples/records/ are quoted
// verbatim in docs/pipelines.md, and here they run as separate processes against the real relay.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';

const run = promisify(execFile);
const EX = path.join(ROOT, 'examples/records');
let relay;
let dir;
before(async () => { relay = await startRelay(); dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-records-')); });
after(async () => { await relay?.stop(); if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

const node = (file, args, env = {}) => run(process.execPath, [path.join(EX, file), ...args], { cwd: ROOT, timeout: 60_000, env: { ...process.env, ...env } });

test('docs/pipelines.md quotes every example file verbatim', () => {
  const guide = fs.readFileSync(path.join(ROOT, 'docs/pipelines.md'), 'utf8');
  for (const f of fs.readdirSync(EX).filter((f) => f.endsWith('.mjs'))) {
    assert.ok(guide.includes(fs.readFileSync(path.join(EX, f), 'utf8').trimEnd()), `docs/pipelines.md does not quote examples/records/${f} as it is`);
  }
});

for (const order of ['buyer first', 'supplier first']) {
  test(`supplier → buyer, encrypted, ${order}: every record lands in the store once`, { timeout: 90_000 }, async () => {
    const p = uniquePath('inventory');
    const store = path.join(dir, `store-${order.replace(' ', '-')}`);
    const args = [relay.http, p, 'shared passphrase'];
    const buyer = () => node('buyer.mjs', [...args, store]);
    const supplier = () => node('supplier.mjs', args, { RECORDS: '12345' });
    const [s, b] = order === 'buyer first'
      ? await Promise.all([buyer(), new Promise((r) => setTimeout(r, 300)).then(supplier)]).then(([b2, s2]) => [s2, b2])
      : await Promise.all([supplier(), new Promise((r) => setTimeout(r, 300)).then(buyer)]);
    assert.deepEqual(JSON.parse(s.stdout), { sent: 12345, bytes: JSON.parse(s.stdout).bytes });
    const summary = JSON.parse(b.stdout);
    assert.equal(summary.deadLettered, 0);
    const files = fs.readdirSync(store).filter((f) => f.startsWith('batch-'));
    assert.equal(files.length, summary.batches);
    const skus = new Set();
    for (const f of files) for (const row of JSON.parse(fs.readFileSync(path.join(store, f), 'utf8'))) skus.add(row.sku);
    assert.equal(skus.size, 12345);
    assert.ok(skus.has('SKU-0') && skus.has('SKU-12344'));
  });
}

test('hospital → research: every pull gets a fresh anonymised export encrypted to the research key; SIGTERM ends serving', { timeout: 120_000 }, async () => {
  const { spawn } = await import('node:child_process');
  const sdk = await import(PKG);
  const identity = sdk.generateIdentity();
  const keyFile = path.join(dir, 'research.key');
  fs.writeFileSync(keyFile, `# a test key\n${identity}\n`);
  const p = uniquePath('hospital');
  const hospital = spawn(process.execPath, [path.join(EX, 'hospital.mjs'), relay.http, p, sdk.identityToRecipient(identity)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  hospital.stdout.on('data', (d) => { out += d; });
  hospital.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => hospital.on('exit', (code) => r(code)));
  try {
    for (let pull = 1; pull <= 2; pull++) {
      const { stdout } = await node('research.mjs', [relay.http, p, keyFile]);
      const got = JSON.parse(stdout);
      assert.equal(got.rows, 5000, `pull ${pull}`);
      assert.deepEqual(got.columns, ['pseudonym', 'birthYear', 'region', 'diagnosis']);
      assert.match(got.first.pseudonym, /^[0-9a-f]{16}$/);
    }
    hospital.kill('SIGTERM');
    assert.equal(await exited, 0, err);
    assert.deepEqual(JSON.parse(out), { pulls: 2, failed: 0 });
  } finally {
    if (hospital.exitCode === null) hospital.kill('SIGKILL');
  }
});
