// Errors say what to do (issue 29): docs/errors.md's table is the advice HttpipeError appends,
// word for word, and the failures a newcomer meets first carry it — a relay that is down
// (NETWORK), a peer that never comes (CONNECT_TIMEOUT), a plain stream read with a passphrase
// (DECRYPT_FAILED) — and an openWriter() whose transfer fails errors its writable with the
// HttpipeError (never `undefined`, never a hang): in Node against a closed port, and in Deno
// without --allow-read (WASM_LOAD_FAILED).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath, within } from './lib/sdk.mjs';

const sdk = await import(PKG);
const { HttpipeError } = sdk;
const DENO = path.join(ROOT, 'node_modules/.bin/deno');

/** docs/errors.md's table: code → its "what to do" cell (unescaped). */
function adviceTable() {
  const rows = fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8').split('\n')
    .filter((l) => /^\| `[A-Z_]+` \|/.test(l));
  return new Map(rows.map((l) => {
    const cells = l.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim().replaceAll('\\|', '|'));
    return [cells[0].replaceAll('`', ''), cells[2]];
  }));
}
const ADVICE = adviceTable();
const adviceOf = (code) => ADVICE.get(code);
/** True for a cell that describes the message instead of being appended to it. */
const described = (cell) => cell.startsWith('(');

function carriesAdvice(code) {
  return (e) => {
    assert.ok(e instanceof HttpipeError, `not an HttpipeError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.endsWith(`; ${adviceOf(code)}`), `no advice for ${code}: ${e.message}`);
    return true;
  };
}

/** A port nothing listens on. */
async function deadPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

let relay;
let dir;
before(async () => {
  relay = await startRelay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-advice-'));
});
after(async () => {
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('docs/errors.md is the advice every HttpipeError carries, for every code', () => {
  const codes = ['UNAUTHORIZED', 'FORBIDDEN', 'CONNECT_TIMEOUT', 'PEER_DISCONNECTED', 'TRUNCATED', 'DECRYPT_FAILED',
    'WRONG_KEY', 'RELAY_ERROR', 'ABORTED', 'UNSUPPORTED', 'NETWORK', 'UNCONFIRMED', 'WRONG_CODE', 'RELAY_BUSY', 'WASM_LOAD_FAILED',
    'INVALID_RECORD', 'STEP_FAILED', 'SINK_FAILED'];
  assert.deepEqual([...ADVICE.keys()].sort(), [...codes].sort(), 'one row per code');
  for (const code of codes) {
    const e = new HttpipeError('what happened', code);
    assert.equal(e.code, code);
    const cell = adviceOf(code);
    if (described(cell)) assert.equal(e.message, 'what happened', `${code} is left as it is`);
    else assert.equal(e.message, `what happened; ${cell}`, code);
    // Said once: an error rebuilt from its message (wasm ↔ JS) does not repeat it.
    assert.equal(new HttpipeError(e.message, code).message, e.message);
  }
});

test('a relay that is down: NETWORK says to check that a relay runs at that URL', async () => {
  const port = await deadPort();
  const e = await sdk.send('hello', { relay: `http://127.0.0.1:${port}`, path: '/down' }).catch((x) => x);
  carriesAdvice('NETWORK')(e);
  assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${port}`), 'names the URL');
  await assert.rejects(sdk.receive({ relay: `http://127.0.0.1:${port}`, path: '/down' }), carriesAdvice('NETWORK'));
});

// Issue #26: a limit of the relay said "check relay and path"; it says what happened and to wait.
test('a relay at its per-address limit: RELAY_BUSY names the limit and says to try again', async () => {
  const small = await startRelay({ args: ['--max-waiting-per-address', '1'] });
  const ac = new AbortController();
  try {
    const first = sdk.receive({ relay: small.http, path: uniquePath('advice-busy'), signal: ac.signal });
    first.catch(() => {});
    await new Promise((r) => setTimeout(r, 300)); // it waits
    const e = await sdk.receive({ relay: small.http, path: uniquePath('advice-busy'), timeout: 5 }).catch((x) => x);
    carriesAdvice('RELAY_BUSY')(e);
    assert.match(e.message, /Too many waiting requests from your address \(at most 1\)/);
  } finally {
    ac.abort();
    await small.stop();
  }
});

test('no peer within the timeout: CONNECT_TIMEOUT says to start the other side or raise timeout', async () => {
  await assert.rejects(sdk.receive({ relay: relay.http, path: uniquePath('advice-timeout'), timeout: 1 }),
    carriesAdvice('CONNECT_TIMEOUT'));
});

test('a plain stream read with a passphrase: DECRYPT_FAILED says to receive without one', async () => {
  const p = uniquePath('advice-plain');
  const sent = sdk.send('this stream is not encrypted, line after line\n'.repeat(20), { relay: relay.http, path: p });
  sent.catch(() => {});
  const e = await (async () => {
    const { stream } = await sdk.receive({ relay: relay.http, path: p, passphrase: 'pw' });
    for await (const chunk of stream) void chunk;
  })().catch((x) => x);
  carriesAdvice('DECRYPT_FAILED')(e);
  assert.match(e.message, /not an age file[^]*if the sender did not encrypt, receive without `passphrase`/);
  // the sender learns why from the receiver's failed receipt
  const s = await sent.catch((x) => x);
  assert.ok(s instanceof HttpipeError, String(s));
  assert.equal(s.peerCode, 'DECRYPT_FAILED', s.message);
});

test('openWriter against a closed port: write() and closed reject with the HttpipeError, at once', async () => {
  const port = await deadPort();
  const w = sdk.openWriter({ relay: `http://127.0.0.1:${port}`, path: '/down' });
  const writer = w.writable.getWriter();
  const wrote = writer.write(new TextEncoder().encode('x'));
  const [a, b, c] = await within(Promise.all([wrote.catch((x) => x), writer.closed.catch((x) => x), w.done.catch((x) => x)]),
    20_000, 'the writer to fail');
  for (const e of [a, b, c]) carriesAdvice('NETWORK')(e);
  assert.equal(a, c, 'the same error as done');
  await assert.rejects(writer.write(new Uint8Array(1)), carriesAdvice('NETWORK'));
  // never written to: `closed` rejects all the same (it waited forever before, found by an
  // adversarial run: a producer waiting on a live source never learned of the failure)
  const idle = sdk.openWriter({ relay: `http://127.0.0.1:${port}`, path: '/down' }).writable.getWriter();
  carriesAdvice('NETWORK')(await within(idle.closed.then(() => null, (x) => x), 20_000, 'closed of an idle writer'));
});

test('openWriter still works: bytes written arrive, and done resolves', async () => {
  const p = uniquePath('advice-writer-ok');
  const r = sdk.receive({ relay: relay.http, path: p });
  const w = sdk.openWriter({ relay: relay.http, path: p });
  const writer = w.writable.getWriter();
  for (let i = 0; i < 3; i++) await writer.write(new TextEncoder().encode(`line ${i}\n`));
  // close() settles with the verdict, which needs the consumer to read the end (its receipt)
  const closed = writer.close();
  const { stream } = await r;
  let text = '';
  for await (const chunk of stream) text += new TextDecoder().decode(chunk);
  assert.equal(text, 'line 0\nline 1\nline 2\n');
  await closed;
  assert.equal((await w.done).relayState, '[STATE:TRANSFER_SUCCESSFUL]');
});

test('Deno without --allow-read: openWriter\'s writable errors WASM_LOAD_FAILED (no hang)', { timeout: 60_000 }, async () => {
  const script = path.join(dir, 'writer.mjs');
  fs.writeFileSync(script, `
    import { openWriter } from ${JSON.stringify(pathToFileURL(PKG).href)};
    const w = openWriter({ relay: 'http://127.0.0.1:9', path: '/x' });
    w.done.catch(() => {});
    const writer = w.writable.getWriter();
    try {
      await writer.write(new TextEncoder().encode('x'));
      await writer.close();
      console.log(JSON.stringify({ ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ name: e?.name, code: e?.code, message: e?.message }));
    }
  `);
  const proc = spawn(DENO, ['run', '--no-prompt', '--allow-net', script],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const code = await within(new Promise((r) => proc.on('exit', r)), 50_000, 'deno');
  assert.equal(code, 0, err);
  const got = JSON.parse(out.trim().split('\n').at(-1));
  assert.equal(got.name, 'HttpipeError', out + err);
  assert.equal(got.code, 'WASM_LOAD_FAILED', got.message);
  assert.match(got.message, /--allow-read/);
  assert.ok(got.message.endsWith(`; ${adviceOf('WASM_LOAD_FAILED')}`), got.message);
});
