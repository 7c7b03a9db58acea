// Delivery receipts and resume (PROTOCOL.md §12) in the `httpipe` CLI, with the release
// binaries (target/release/httpipe and httpipe-relay, as `npm start` builds them): a real relay
// on free ports, real processes, and real cuts by a TCP proxy between one side and the relay
// (`cutAt`: the producer's connection, `cutDownAt`: the consumer's).
//   - CLI → CLI: the producer says the receiver confirmed the bytes (its receipt);
//   - CLI ↔ Node SDK, both ways, with receipts;
//   - a file source and a stdin source cut mid-transfer arrive byte-exact after resuming;
//   - a gap older than the replay window: both sides exit 5, no complete output file;
//   - the ZebraStream CLI as the peer: works as before, unconfirmed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRelay, ROOT, RELEASE_DIR } from './lib/relay.mjs';
import { cutProxy } from './lib/cut-proxy.mjs';
import { PKG, uniquePath, hashStream, randomBytes, sha256, within } from './lib/sdk.mjs';
import { skipUnless } from './lib/tools.mjs';

const HTTPIPE = process.env.HTTPIPE_CLI_BIN || path.join(RELEASE_DIR, 'httpipe');
const ZEBRASTREAM = path.join(ROOT, '.venv/bin/zebrastream');
const MiB = 1024 * 1024;
const PASS = 'receipts and resume';

let sdk;
let relay;
let dir;
before(async () => {
  if (!fs.existsSync(HTTPIPE)) throw new Error(`${HTTPIPE} not found: run cargo build --release -p httpipe-cli`);
  sdk = await import(PKG);
  relay = await startRelay();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-cli-resume-'));
});
after(async () => {
  await relay?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const relayPort = () => Number(new URL(relay.http).port);

/** The environment without the test runner's HTTPIPE_* / ZEBRASTREAM* settings. */
function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('HTTPIPE_') && !k.startsWith('ZEBRASTREAM')) env[k] = v;
  }
  return { ...env, ...extra };
}

/**
 * Runs `cmd args` with stdin from the file `inFile` (or nothing) and stdout to the file
 * `outFile` (or captured); resolves with { code, out, err }.
 */
function run(cmd, args, { inFile, outFile, env = {} } = {}) {
  const stdin = inFile ? fs.openSync(inFile, 'r') : 'ignore';
  const stdout = outFile ? fs.openSync(outFile, 'w') : 'pipe';
  const proc = spawn(cmd, args, { stdio: [stdin, stdout, 'pipe'], cwd: dir, env: cleanEnv(env) });
  let out = '';
  let err = '';
  proc.stdout?.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const done = new Promise((resolve) => proc.on('exit', (code) => {
    if (typeof stdin === 'number') fs.closeSync(stdin);
    if (typeof stdout === 'number') fs.closeSync(stdout);
    resolve({ code, out, err });
  }));
  return { proc, done };
}

const httpipe = (args, opts) => run(HTTPIPE, args, opts);

/** A file of `size` random bytes and its sha256. */
function randomFile(name, size) {
  const { bytes, sha256: digest } = randomBytes(size);
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return { file, digest };
}

const fileHash = (f) => sha256(fs.readFileSync(f));

test('CLI → CLI: the producer reports the receiver\'s receipt (stdin → stdout, and send → receive -o)', { timeout: 60_000 }, async () => {
  const size = 3 * MiB + 5;
  const { file, digest } = randomFile('confirm.bin', size);
  // write → read, plain
  let p = uniquePath('cli-confirm');
  const out = path.join(dir, 'confirm.out');
  const w = httpipe(['write', '--relay', relay.http, '-s', p], { inFile: file });
  const r = httpipe(['read', '--relay', relay.http, '-s', p], { outFile: out });
  const [wd, rd] = await within(Promise.all([w.done, r.done]), 50_000, 'write → read');
  assert.equal(rd.code, 0, rd.err);
  assert.equal(wd.code, 0, wd.err);
  assert.equal(fileHash(out), digest);
  assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\)`), wd.err);
  // send → receive -o FILE, encrypted: confirmed once the file is saved
  p = uniquePath('cli-confirm-enc');
  const saved = path.join(dir, 'confirm-saved.bin');
  const env = { HTTPIPE_PASSPHRASE: PASS };
  const s = httpipe(['send', '--relay', relay.http, '-s', p, file], { env });
  const rv = httpipe(['receive', '--relay', relay.http, '-s', p, '-o', saved], { env });
  const [sd, rvd] = await within(Promise.all([s.done, rv.done]), 50_000, 'send → receive');
  assert.equal(rvd.code, 0, rvd.err);
  assert.equal(sd.code, 0, sd.err);
  assert.equal(fileHash(saved), digest);
  assert.match(sd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\)`), sd.err);
});

test('CLI write → Node SDK receive, and Node SDK send → CLI read: receipts both ways', { timeout: 60_000 }, async () => {
  const size = 2 * MiB + 1;
  const { file, digest } = randomFile('sdk.bin', size);
  const env = { HTTPIPE_PASSPHRASE: PASS };
  // CLI producer, SDK consumer (its receipt commits to the plaintext, signed)
  let p = uniquePath('cli-to-sdk');
  const w = httpipe(['write', '--relay', relay.http, '-s', p], { inFile: file, env });
  const got = await within(sdk.receive({ relay: relay.http, path: p, passphrase: PASS })
    .then((x) => hashStream(x.stream)), 40_000, 'SDK receive');
  const wd = await within(w.done, 40_000, 'CLI write');
  assert.equal(got.sha256, digest);
  assert.equal(wd.code, 0, wd.err);
  assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\)`), wd.err);
  // SDK producer, CLI consumer: the SDK's report carries the CLI's authenticated receipt
  p = uniquePath('sdk-to-cli');
  const out = path.join(dir, 'sdk.out');
  const r = httpipe(['read', '--relay', relay.http, '-s', p], { outFile: out, env });
  const report = await within(sdk.send(fs.readFileSync(file), { relay: relay.http, path: p, passphrase: PASS }), 40_000, 'SDK send');
  const rd = await within(r.done, 40_000, 'CLI read');
  assert.equal(rd.code, 0, rd.err);
  assert.equal(fileHash(out), digest);
  assert.equal(report.receipt?.bytes, size);
  assert.equal(report.receipt?.authenticated, true);
  // the same, plain (the receipt commits to the bytes as they arrived: not authenticated)
  p = uniquePath('sdk-to-cli-plain');
  const r2 = httpipe(['read', '--relay', relay.http, '-s', p], { outFile: out });
  const plain = await within(sdk.send(fs.readFileSync(file), { relay: relay.http, path: p }), 40_000, 'SDK send');
  assert.equal((await r2.done).code, 0);
  assert.equal(plain.receipt?.bytes, size);
  assert.equal(plain.receipt?.authenticated, false);
});

test('read -- COMMAND confirms once the command has the whole stream, not after its own work', { timeout: 60_000 }, async () => {
  const size = 1 * MiB + 3;
  const { file, digest } = randomFile('cmd.bin', size);
  const p = uniquePath('cli-cmd');
  const out = path.join(dir, 'cmd.out');
  // The command works on for 4 s after its input ended; the producer waits 2 s for the receipt.
  const w = httpipe(['write', '--relay', relay.http, '-s', p, '--receipt-timeout', '2'], { inFile: file });
  const r = httpipe(['read', '--relay', relay.http, '-s', p, '--', 'sh', '-c', `cat > '${out}'; sleep 4`]);
  const wd = await within(w.done, 40_000, 'write');
  assert.equal(wd.code, 0, wd.err);
  assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\)`), wd.err);
  assert.equal(r.proc.exitCode, null, 'the consumer command still works');
  const rd = await within(r.done, 40_000, 'read');
  assert.equal(rd.code, 0, rd.err);
  assert.equal(fileHash(out), digest);
});

/**
 * A CLI transfer with one side through a cutting proxy; `producer` / `consumer` are argument
 * lists after the relay URL; the producer's stdin is `inFile`, the consumer's stdout `outFile`.
 */
async function cutTransfer({ side, cuts = [], stalls = [], producer, consumer, inFile, outFile, env = {} }) {
  const proxy = await cutProxy(relayPort());
  if (side === 'producer') proxy.cutAt(...cuts); else proxy.cutDownAt(...cuts);
  if (side === 'producer') proxy.stallAt(...stalls); else proxy.stallDownAt(...stalls);
  const via = (s) => (s === side ? proxy.url : relay.http);
  try {
    const w = httpipe([producer[0], '--relay', via('producer'), ...producer.slice(1)], { inFile, env });
    const r = httpipe([consumer[0], '--relay', via('consumer'), ...consumer.slice(1)], { outFile, env });
    const [wd, rd] = await within(Promise.all([w.done, r.done]), 90_000, 'the cut transfer');
    return { wd, rd, proxy };
  } finally {
    await proxy.close();
  }
}

// Ctrl-C in the CLI used to leave its peer waiting: the dropped transfer's last words were
// spawned, then killed with the process (a sender whose receiver was interrupted before the
// first byte waited forever; a receiver of an interrupted writer waited out its 60-s resume, or
// its 30-s receipt call though it had every byte). The CLI now gives them up to 2 s at exit.
test('a CLI interrupted by SIGINT tells its SDK peer at once and says what it stopped: read before the first byte, write mid-stream, write and send waiting for the receipt', { timeout: 90_000 }, async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // read, interrupted while the sender's source is slow to start
  {
    const p = uniquePath('int-read');
    const slow = new ReadableStream({ async pull(c) { await sleep(8000); c.enqueue(new Uint8Array(10)); c.close(); } });
    const sent = sdk.send(slow, { relay: relay.http, path: p }).then(() => null, (e) => e);
    const r = httpipe(['read', '--relay', relay.http, '-s', p]);
    await sleep(1500);
    r.proc.kill('SIGINT');
    const { code, err } = await r.done;
    assert.notEqual(code, 0, err);
    assert.match(err, /interrupted by SIGINT before the stream started; nothing was received/);
    const t0 = performance.now();
    const e = await within(sent, 5_000, 'the sender');
    assert.equal(e?.code, 'PEER_DISCONNECTED', e?.message);
    assert.match(e.message, /cancelled before the stream started/);
    assert.ok(performance.now() - t0 < 3_000);
  }
  // write -d 0, interrupted mid-stream: the receiver is told the sender failed, not left to
  // wait for a resume
  {
    const p = uniquePath('int-write');
    const w = httpipe(['write', '-d', '0', '--relay', relay.http, '-s', p, '--', 'sh', '-c', 'echo first; sleep 30']);
    const r = await sdk.receive({ relay: relay.http, path: p });
    const reader = r.stream.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'first\n');
    await sleep(500);
    w.proc.kill('SIGINT');
    const t0 = performance.now();
    const e = await within(reader.read().then(() => null, (x) => x), 10_000, 'the receiver');
    assert.equal(e?.code, 'TRUNCATED', e?.message);
    assert.match(e.message, /the sender failed with ABORTED/);
    assert.ok(performance.now() - t0 < 3_000, `told after ${performance.now() - t0} ms`);
    const wd = await w.done;
    assert.equal(wd.code, 1, wd.err);
    assert.match(wd.err, /interrupted by SIGINT; the stream was aborted/);
  }
  // interrupted while its input had ended, waiting for the receipt: the stream is not
  // aborted. A receipt that comes within the interrupt's 4 s is the verdict (`write`: the
  // receiver reads its end right after); none (`send`: a `receipt: 'manual'` receiver that
  // never confirms) says what is true, and the receiver still gets a clean end. `send` used to
  // ignore Ctrl-C there.
  for (const [what, argv, env, receipt] of [
    ['write, the receipt on its way', ['write'], {}, undefined],
    ['send, no receipt', ['send'], { HTTPIPE_PASSPHRASE: PASS }, 'manual'],
  ]) {
    const p = uniquePath('int-sent');
    const { file } = randomFile('int-sent.txt', 6);
    const rest = argv[0] === 'send' ? [file] : ['--', 'sh', '-c', 'echo first'];
    const w = httpipe([...argv, '--relay', relay.http, '-s', p, ...rest], { env });
    const r = await sdk.receive({ relay: relay.http, path: p, passphrase: env.HTTPIPE_PASSPHRASE, receipt });
    const reader = r.stream.getReader();
    assert.equal((await reader.read()).value.length, 6, what);
    await sleep(500);
    w.proc.kill('SIGINT');
    const t0 = performance.now();
    const e = await within(reader.read().then(({ done }) => (done ? null : 'more'), (x) => x), 10_000, what);
    assert.equal(e, null, `${what}: every byte arrived, the end is the sender's: ${e?.message}`);
    const wd = await within(w.done, 10_000, `the sender (${what})`);
    if (!receipt) {
      assert.equal(wd.code, 0, `${what}: ${wd.err}`);
      assert.match(wd.err, /delivered: the receiver confirmed 6 bytes/, what);
      assert.ok(performance.now() - t0 < 3_000, `${what}: exited after ${performance.now() - t0} ms`);
    } else {
      assert.equal(wd.code, 1, `${what}: ${wd.err}`);
      assert.match(wd.err, /interrupted by SIGINT before the receiver confirmed the stream; the whole input was read, but delivery is unconfirmed; ask the receiving side/, what);
      const took = performance.now() - t0;
      assert.ok(took > 3_500 && took < 7_000, `${what}: exited after ${took} ms (4 s for a receipt, then at most 2 s)`);
    }
  }
});

test('a file source (send, encrypted) whose connection is cut twice arrives byte-exact after 2 resumes', { timeout: 120_000 }, async () => {
  const size = 24 * MiB + 3;
  const { file, digest } = randomFile('cut-file.bin', size);
  const p = uniquePath('cli-cut-file');
  const saved = path.join(dir, 'cut-file.saved');
  const { wd, rd, proxy } = await cutTransfer({
    side: 'producer',
    cuts: [Math.floor(size * 0.35), Math.floor(size * 0.7)],
    producer: ['send', '-s', p, file],
    consumer: ['receive', '-s', p, '-o', saved],
    env: { HTTPIPE_PASSPHRASE: PASS },
  });
  assert.equal(proxy.stats.cuts, 2);
  assert.equal(rd.code, 0, rd.err);
  assert.equal(wd.code, 0, wd.err);
  assert.equal(fileHash(saved), digest);
  assert.ok(!fs.existsSync(`${saved}.httpipe-part`));
  for (const [who, d] of [['sender', wd], ['receiver', rd]]) {
    assert.match(d.err, /reconnecting…/, `${who}: ${d.err}`);
    assert.match(d.err, /reconnected \(resumed 2×\)/, `${who}: ${d.err}`);
  }
  assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\) \\(after 2 reconnects\\)`), wd.err);
});

test('a stdin source (write, plain) whose receiver\'s connection is cut arrives byte-exact after resuming', { timeout: 120_000 }, async () => {
  const size = 24 * MiB;
  const { file, digest } = randomFile('cut-stdin.bin', size);
  const p = uniquePath('cli-cut-stdin');
  const out = path.join(dir, 'cut-stdin.out');
  const { wd, rd, proxy } = await cutTransfer({
    side: 'consumer',
    cuts: [Math.floor(size / 2)],
    producer: ['write', '-s', p],
    consumer: ['read', '-s', p],
    inFile: file,
    outFile: out,
  });
  assert.equal(proxy.stats.cuts, 1);
  assert.equal(rd.code, 0, rd.err);
  assert.equal(wd.code, 0, wd.err);
  assert.equal(fileHash(out), digest);
  assert.match(rd.err, /reconnecting…[^]*resumed 1×/, rd.err);
  assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\) \\(after 1 reconnect\\)`), wd.err);
});

test('a stdin gap older than the replay window: both sides exit 5 saying so, no complete output file', { timeout: 90_000 }, async () => {
  const size = 16 * MiB;
  const { file } = randomFile('gap.bin', size);
  const p = uniquePath('cli-gap');
  const saved = path.join(dir, 'gap.saved');
  // A window of 0 bytes keeps nothing: whatever was in flight at the cut is gone.
  const { wd, rd } = await cutTransfer({
    side: 'producer',
    cuts: [8 * MiB],
    producer: ['write', '-s', p, '--resume-window', '0'],
    consumer: ['receive', '-s', p, '-o', saved],
    inFile: file,
  });
  assert.equal(rd.code, 5, rd.err);
  assert.equal(wd.code, 5, wd.err);
  for (const d of [wd, rd]) {
    assert.match(d.err, /cannot resume: .*replay window holds only bytes/, d.err);
    assert.match(d.err, /--resume-window/, d.err);
    // nothing reconnected, so no line says so (issue 29: "reconnected (resumed 0×)")
    assert.doesNotMatch(d.err, /reconnected|resumed 0×/, d.err);
  }
  assert.ok(!fs.existsSync(saved), 'no output file');
  assert.ok(!fs.existsSync(`${saved}.httpipe-part`), 'no partial file left');
});

test('resume off on one side: a cut fails both at once as before (exit 5 / 5 or 1)', { timeout: 60_000 }, async () => {
  const { file } = randomFile('off.bin', 8 * MiB);
  const p = uniquePath('cli-resume-off');
  const { wd, rd } = await cutTransfer({
    side: 'producer',
    cuts: [4 * MiB],
    producer: ['write', '-s', p],
    consumer: ['read', '-s', p, '--resume', 'off'],
    inFile: file,
    outFile: path.join(dir, 'off.out'),
  });
  assert.equal(rd.code, 5, rd.err);
  assert.ok([1, 5].includes(wd.code), wd.err);
  assert.doesNotMatch(rd.err, /reconnecting/);
});

// §12.4: a connection that stops without closing (a tunnel, a NAT that forgot the mapping):
// no side sees a break; both wait STALL_AFTER_S (10 s), meet on the transfer's channel and go
// on as after a break — the CLI's stall watch is the core's, as in the SDK.
const CLI_STALLS = [
  ['plain', 'consumer', ['write', 'read'], {}],
  ['age-rt passphrase', 'producer', ['send', 'receive'], { HTTPIPE_PASSPHRASE: PASS }],
];
for (const [name, side, [up, down], env] of CLI_STALLS) {
  test(`CLI → CLI, ${name}: the ${side}'s connection stalls without closing → both meet and resume; exact`, { timeout: 90_000 }, async () => {
    const size = 16 * MiB + 5;
    const { file, digest } = randomFile(`stall-${side}.bin`, size);
    const p = uniquePath(`cli-stall-${side}`);
    const out = path.join(dir, `stall-${side}.out`);
    const started = performance.now();
    const { wd, rd, proxy } = await cutTransfer({
      side,
      stalls: [6 * MiB],
      producer: up === 'send' ? [up, '-s', p, file] : [up, '-s', p],
      consumer: down === 'receive' ? [down, '-s', p, '-o', out] : [down, '-s', p],
      inFile: up === 'send' ? undefined : file,
      outFile: down === 'receive' ? undefined : out,
      env,
    });
    assert.equal(proxy.stats.stalls, 1, 'the connection stalled');
    assert.equal(rd.code, 0, rd.err);
    assert.equal(wd.code, 0, wd.err);
    assert.equal(fileHash(out), digest);
    assert.match(rd.err, /resumed 1×/, rd.err);
    assert.match(wd.err, new RegExp(`delivered: the receiver confirmed ${size} bytes \\([^)]*\\) \\(after 1 reconnect\\)`), wd.err);
    // 10 s of waiting, then the meeting: well before a TCP timeout
    assert.ok(performance.now() - started < 45_000, `took ${performance.now() - started} ms`);
  });
}

test('CLI ↔ SDK: a stall on the CLI\'s side resumes both ways (SDK send → CLI read plain; CLI write → SDK receive age-rt)', { timeout: 120_000 }, async () => {
  const size = 16 * MiB + 7;
  const { file, digest } = randomFile('stall-sdk.bin', size);
  // SDK producer, CLI consumer behind the stalling proxy
  let proxy = await cutProxy(relayPort());
  proxy.stallDownAt(6 * MiB);
  let p = uniquePath('sdk-cli-stall');
  const out = path.join(dir, 'stall-sdk.out');
  try {
    const r = httpipe(['read', '--relay', proxy.url, '-s', p], { outFile: out });
    const report = await within(sdk.send(fs.readFileSync(file), { relay: relay.http, path: p }), 60_000, 'SDK send');
    const rd = await within(r.done, 30_000, 'CLI read');
    assert.equal(proxy.stats.stalls, 1, 'the CLI\'s connection stalled');
    assert.equal(rd.code, 0, rd.err);
    assert.equal(fileHash(out), digest);
    assert.equal(report.resumes, 1, 'the SDK resumed once');
    assert.equal(report.receipt?.bytes, size);
  } finally {
    await proxy.close();
  }
  // CLI producer behind the stalling proxy, SDK consumer, encrypted
  proxy = await cutProxy(relayPort());
  proxy.stallAt(6 * MiB);
  p = uniquePath('cli-sdk-stall');
  try {
    const w = httpipe(['write', '--relay', proxy.url, '-s', p], { inFile: file, env: { HTTPIPE_PASSPHRASE: PASS } });
    const got = await within(sdk.receive({ relay: relay.http, path: p, passphrase: PASS })
      .then((x) => hashStream(x.stream)), 60_000, 'SDK receive');
    const wd = await within(w.done, 30_000, 'CLI write');
    assert.equal(proxy.stats.stalls, 1, 'the CLI\'s connection stalled');
    assert.equal(got.sha256, digest);
    assert.equal(wd.code, 0, wd.err);
    assert.match(wd.err, /after 1 reconnect/, wd.err);
  } finally {
    await proxy.close();
  }
});

const skipZs = skipUnless(ZEBRASTREAM, 'the ZebraStream client (.venv)');
const zs = (mode, p) => [mode, '--stream-path', p, '--connect-url', `${relay.http}/connect/v0/`,
  '--access-token', 'open-mode-needs-none', '--passphrase', PASS];

test('ZebraStream CLI peers: httpipe write → zebrastream read is unconfirmed; zebrastream write → httpipe read works', { skip: skipZs, timeout: 120_000 }, async () => {
  const size = 1 * MiB + 9;
  const { file, digest } = randomFile('zs.bin', size);
  const env = { HTTPIPE_PASSPHRASE: PASS };
  let p = uniquePath('cli-zs-r');
  const out = path.join(dir, 'zs.out');
  const w = httpipe(['write', '--relay', relay.http, '-s', p], { inFile: file, env });
  const r = run(ZEBRASTREAM, zs('read', p), { outFile: out });
  const [wd, rd] = await within(Promise.all([w.done, r.done]), 100_000, 'httpipe → zebrastream');
  assert.equal(rd.code, 0, rd.err);
  assert.equal(wd.code, 0, wd.err);
  assert.equal(fileHash(out), digest);
  assert.match(wd.err, /the receiver did not confirm/, wd.err);
  assert.doesNotMatch(wd.err, /delivered:/);

  p = uniquePath('cli-zs-w');
  const out2 = path.join(dir, 'zs2.out');
  const zw = run(ZEBRASTREAM, zs('write', p), { inFile: file });
  const hr = httpipe(['read', '--relay', relay.http, '-s', p], { outFile: out2, env });
  const [zwd, hrd] = await within(Promise.all([zw.done, hr.done]), 100_000, 'zebrastream → httpipe');
  assert.equal(hrd.code, 0, hrd.err);
  assert.equal(zwd.code, 0, zwd.err);
  assert.equal(fileHash(out2), digest);
});
