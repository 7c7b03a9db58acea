// Unit tests of the demo's pure modules (link/fragment handling, formatting and progress,
// state machines, error messages). The browser behaviour is in demo-browser.test.mjs.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  buildLink, parseFragment, parseTyped, randomPath, randomPassphrase, safeFileName, codeLink, looksLikeCode, normaliseCode,
  tokenMode,
} from '../../www/js/link.js';
import { formatBytes, formatDuration, ProgressMeter, STALL_MS } from '../../www/js/format.js';
import { walkDrop, fromInput, zipName } from '../../www/js/folders.js';
import { StateMachine, SENDER, RECEIVER } from '../../www/js/machine.js';
import { describeError, headline } from '../../www/js/errors.js';

const ID = 'AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX';

test('link round-trips path, key and metadata through the fragment only', () => {
  const link = buildLink('https://relay.example:8443', {
    path: '/s/abc', identity: ID, name: 'report & notes #1.pdf', size: 123456, type: 'application/pdf', kind: 'file',
  });
  const u = new URL(link);
  assert.equal(u.pathname, '/');
  assert.equal(u.search, '', 'nothing in the query string: it would reach the relay');
  assert.ok(u.hash.includes('AGE-SECRET-KEY-1'));
  assert.deepEqual(parseFragment(u.hash), {
    path: '/s/abc', identity: ID, passphrase: false, name: 'report & notes #1.pdf', size: 123456, type: 'application/pdf', kind: 'file',
  });
});

test('passphrase links carry no key and ask for the passphrase', () => {
  const link = buildLink('http://127.0.0.1:8080', { path: '/s/x', passphrase: true, name: 'a.txt', size: 0 });
  const t = parseFragment(new URL(link).hash);
  assert.equal(t.identity, undefined);
  assert.equal(t.passphrase, true);
  assert.equal(t.size, 0);
  assert.ok(!link.includes('AGE-SECRET'));
});

test('bad fragments are not receive links', () => {
  assert.equal(parseFragment(''), null);
  assert.equal(parseFragment('#hello'), null);
  assert.equal(parseFragment('#r=relative'), null);
  assert.equal(parseFragment('#r=/s/x&k=not-a-key'), null);
  assert.equal(parseFragment('#r=/s/x&s=-5').size, undefined);
  assert.equal(parseFragment('#r=/s/x&s=1e400').size, undefined);
});

test('typed input: whole link, bare path, path without slash, URL with a path', () => {
  const link = buildLink('https://h', { path: '/s/q', identity: ID });
  assert.equal(parseTyped(link).identity, ID);
  assert.deepEqual(parseTyped('  /s/abc '), { path: '/s/abc', passphrase: true });
  assert.deepEqual(parseTyped('s/abc'), { path: '/s/abc', passphrase: true });
  assert.deepEqual(parseTyped('https://h/team/feed'), { path: '/team/feed', passphrase: true });
  assert.equal(parseTyped(''), null);
  assert.equal(parseTyped('two words'), null);
  assert.equal(parseTyped('https://h/'), null);
});

test('random paths and passphrases are fresh, long enough and unreserved', () => {
  const paths = new Set(Array.from({ length: 200 }, randomPath));
  assert.equal(paths.size, 200);
  for (const p of paths) assert.match(p, /^\/s\/[a-z2-9]{16}$/);
  const pass = randomPassphrase();
  assert.match(pass, /^([a-z2-9]{5}-){4}[a-z2-9]{5}$/);
  assert.notEqual(pass, randomPassphrase());
});

test('file names from links are made safe for save dialogs', () => {
  assert.equal(safeFileName('../../etc/passwd'), '_.._etc_passwd');
  assert.equal(safeFileName('a\\b\u0000c'), 'a_b_c');
  assert.equal(safeFileName(''), 'httpipe-download');
  assert.equal(safeFileName(undefined), 'httpipe-download');
  assert.equal(safeFileName('Urlaub 2026 — 🎞.mp4'), 'Urlaub 2026 — 🎞.mp4');
});

test('formatting of sizes and durations', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1536), '1.50 KiB');
  assert.equal(formatBytes(200 * 1024 * 1024), '200 MiB');
  assert.equal(formatBytes(-1), '?');
  assert.equal(formatDuration(42), '42 s');
  assert.equal(formatDuration(185), '3 min 5 s');
  assert.equal(formatDuration(3720), '1 h 2 min');
});

test('progress meter: percent, rate and ETA from a controlled clock', () => {
  let t = 0;
  const m = new ProgressMeter(100 * 1024 * 1024, () => t);
  t = 1000; m.update(10 * 1024 * 1024);
  t = 2000; m.update(20 * 1024 * 1024);
  const s = m.snapshot();
  assert.equal(Math.round(s.percent), 20);
  assert.ok(Math.abs(s.rate - 10 * 1024 * 1024) < 1, `rate ${s.rate}`);
  assert.ok(Math.abs(s.eta - 8) < 0.01, `eta ${s.eta}`);
  assert.equal(m.describe(), '20.0 MiB of 100 MiB · 20% · 10.0 MiB/s · 8 s left');
  const unknown = new ProgressMeter(undefined, () => t);
  unknown.update(5);
  assert.equal(unknown.snapshot().percent, undefined);
  assert.equal(new ProgressMeter(0, () => t).snapshot().percent, 100);
});

test('state machines allow the transfer life cycle and reject the rest', () => {
  const seen = [];
  const s = new StateMachine('idle', SENDER, (to, data, from) => seen.push(`${from}>${to}`));
  s.go('waiting'); s.go('sending'); s.go('error', {}); s.go('waiting'); s.go('sending'); s.go('done');
  assert.deepEqual(seen, ['idle>waiting', 'waiting>sending', 'sending>error', 'error>waiting', 'waiting>sending', 'sending>done']);
  assert.throws(() => s.go('sending'), /invalid transition done -> sending/);
  const r = new StateMachine('idle', RECEIVER, () => {});
  r.go('waiting'); r.go('ready'); r.go('receiving');
  assert.equal(r.can('ready'), false);
  r.go('cancelled');
  assert.equal(r.can('waiting'), true);
});

test('error codes become sentences that differ by side', () => {
  const e = (code) => Object.assign(new Error(`x ${code}`), { code });
  assert.match(describeError(e('PEER_DISCONNECTED'), 'send').title, /other side left/);
  assert.match(describeError(e('WRONG_KEY'), 'receive').title, /Wrong passphrase/);
  assert.match(describeError(e('WRONG_KEY'), 'receive').title, /Nothing was saved/);
  assert.match(describeError(e('TRUNCATED'), 'receive').title, /cut short.*nothing was saved/);
  assert.match(describeError(e('NETWORK'), 'send').title, /Can't reach the relay/);
  assert.match(describeError(new TypeError('Failed to fetch'), 'receive').title, /Can't reach the relay/);
  assert.equal(describeError(new Error('boom'), 'send').title, 'Something went wrong.');
  assert.equal(describeError(new Error('boom'), 'send').detail, 'boom');
});

test('failure headlines name the cause', () => {
  assert.equal(headline('PEER_DISCONNECTED', 'send'), 'The other side left.');
  assert.equal(headline('NETWORK', 'receive'), "Can't reach the relay.");
  assert.equal(headline('WRONG_KEY', 'receive'), 'Wrong passphrase or key.');
  assert.equal(headline('TRUNCATED', 'receive'), 'Cut short: nothing was saved.');
  assert.equal(headline('RELAY_ERROR', 'send'), 'The transfer failed.');
  assert.equal(headline('UNKNOWN', 'receive'), 'The transfer failed.');
});

test('short-code links carry just the code and open the receive screen', () => {
  const link = codeLink('https://relay.example', '7 Guitarist  revenge');
  assert.equal(link, 'https://relay.example/#code=7-guitarist-revenge');
  assert.deepEqual(parseFragment(new URL(link).hash), { code: '7-guitarist-revenge' });
  assert.equal(parseFragment('#code=guitarist'), null, 'not a code');
  assert.equal(parseFragment('#code=7-guitarist-revenge-extra'), null);
  // typed into "code or link": codes as heard, links of either kind, paths
  assert.deepEqual(parseTyped(' 7 - Guitarist - REVENGE '), { code: '7-guitarist-revenge' });
  assert.deepEqual(parseTyped(link), { code: '7-guitarist-revenge' });
  assert.equal(looksLikeCode('07-a-b'), false, 'no leading zero');
  assert.equal(looksLikeCode('9999-a-b'), true, 'channels are 1-9999 (PROTOCOL.md §14.1)');
  assert.equal(looksLikeCode('10000-a-b'), false, 'channels are 1-9999');
  assert.equal(normaliseCode('12  ADROITNESS-adviser'), '12-adroitness-adviser');
  assert.deepEqual(parseTyped('/s/abc'), { path: '/s/abc', passphrase: true });
});

// Issue #26: relays in auth mode offer codes to holders of a code token (PROTOCOL.md §6); the
// page reads which kind a token is from its (unverified) claims, and says what a busy relay is.
test('the kind of an access token, and a busy relay', () => {
  const claims = (m) => Buffer.from(JSON.stringify({ p: '/code/v1', m, r: true, e: 9e9 })).toString('base64url');
  assert.equal(tokenMode(`hp1.${claims('c')}.sig`), 'c');
  assert.equal(tokenMode(`hp1.${claims('w')}.sig`), 'w');
  for (const bad of ['', 'hp1', 'hp1.!!.x', 'hp1.e30.x', undefined]) assert.equal(tokenMode(bad), undefined, String(bad));
  const e = (code, message = 'x') => Object.assign(new Error(message), { code });
  assert.match(describeError(e('RELAY_BUSY'), 'send').title, /busy.*try again/i);
  assert.equal(headline('RELAY_BUSY', 'receive'), 'The relay is busy.');
  const forbidden = e('FORBIDDEN', 'POST http://h/code/v1/7/a: the access token does not allow this path or mode');
  assert.match(describeError(forbidden, 'send').title, /need a code token/);
});

// Issue #14's new-user pass: "81.31518472689373 B/s".
test('rates below 1 KiB/s are whole bytes', () => {
  assert.equal(formatBytes(81.31518472689373), '81 B');
  assert.equal(formatBytes(1023.6), '1024 B');
  let t = 0;
  const m = new ProgressMeter(10000, () => t);
  t = 1000; m.update(81);
  t = 2000; m.update(163);
  assert.doesNotMatch(m.describe(), /\.\d+ B\/s/, m.describe());
});

// Issue #14's new-user pass: "23 % · 5 s left" frozen while the receiver chose where to save.
test('a transfer whose bytes stop moving is paused: no rate, no time left', () => {
  let t = 0;
  const m = new ProgressMeter(100 * 1024 * 1024, () => t);
  t = 1000; m.update(23 * 1024 * 1024);
  assert.match(m.describe(), /23% · [\d.]+ MiB\/s · \d+ s left/);
  t = 1000 + STALL_MS - 1;
  assert.equal(m.snapshot().stalled, false);
  t = 1000 + STALL_MS;
  assert.equal(m.snapshot().stalled, true);
  assert.equal(m.describe(), '23.0 MiB of 100 MiB · 23% · paused');
  t += 1000; m.update(24 * 1024 * 1024);
  assert.equal(m.snapshot().stalled, false, 'moving again');
  // all sent (the receiver confirms) or nothing yet is not a stall
  const all = new ProgressMeter(10, () => t);
  all.update(10); t += 10 * STALL_MS;
  assert.equal(all.snapshot().stalled, false);
  assert.equal(new ProgressMeter(10, () => t).snapshot().stalled, false);
});

/** A fake FileSystemEntry tree: { name: File-like | {subtree} }. */
function fakeDir(name, tree, batch = 2) {
  return {
    name, isDirectory: true, isFile: false,
    createReader() {
      const children = Object.entries(tree).map(([n, v]) => (v && v.size !== undefined
        ? { name: n, isFile: true, isDirectory: false, file: (ok) => ok(v) }
        : fakeDir(n, v, batch)));
      let at = 0;
      // readEntries answers in batches, then an empty one (as Chromium does, 100 at a time)
      return { readEntries: (ok) => setTimeout(() => { ok(children.slice(at, at + batch)); at += batch; }) };
    },
  };
}

test('dropped folders are walked into files with their paths; empty folders are kept', async () => {
  const f = (name, size) => ({ name, size });
  const photos = fakeDir('photos', {
    'b.jpg': f('b.jpg', 2), 'a.jpg': f('a.jpg', 1), '2025': { 'c.jpg': f('c.jpg', 3) }, empty: {},
  });
  const loose = f('notes.txt', 4);
  const drop = { entries: [photos, { name: 'notes.txt', isFile: true, isDirectory: false }], files: [f('photos', 0), loose] };
  const { entries, folders } = await walkDrop(drop);
  assert.equal(folders, 1);
  assert.deepEqual(entries.map((e) => [e.path, e.file && e.file.size]), [
    ['photos/2025/c.jpg', 3], ['photos/a.jpg', 1], ['photos/b.jpg', 2], ['photos/empty/', undefined], ['notes.txt', 4],
  ]);
  assert.equal(zipName(entries), 'httpipe-4-files.zip', 'a folder and a file');
  assert.equal(zipName(entries.filter((e) => e.path.startsWith('photos/'))), 'photos.zip');
  assert.equal(zipName([{ path: 'a', file: {} }, { path: 'b', file: {} }]), 'httpipe-2-files.zip');
  // a folder chosen with <input webkitdirectory>
  assert.deepEqual(fromInput([{ name: 'x.txt', webkitRelativePath: 'docs/x.txt' }, { name: 'y.txt', webkitRelativePath: '' }])
    .map((e) => e.path), ['docs/x.txt', 'y.txt']);
});

test('short-code and token errors read as plain sentences', () => {
  const e = (code, message = `x ${code}`, extra = {}) => Object.assign(new Error(message), { code }, extra);
  assert.equal(headline('WRONG_CODE', 'receive'), 'Wrong code.');
  assert.equal(headline('WRONG_CODE', 'send'), 'Wrong code.');
  assert.match(describeError(e('WRONG_CODE'), 'receive').title, /match the sender's code.*Nothing was received/);
  assert.match(describeError(e('WRONG_CODE', 'no sender is waiting for this code'), 'receive').title, /Nobody is sending with this code/);
  assert.match(describeError(e('WRONG_CODE'), 'send').title, /new code/);
  // the receiver's failed receipt named WRONG_KEY (PROTOCOL.md §12.2)
  assert.match(describeError(e('PEER_DISCONNECTED', 'x', { peerCode: 'WRONG_KEY' }), 'send').title, /wrong passphrase/);
  assert.match(describeError(e('UNAUTHORIZED'), 'send').title, /access token.*Options/);
  assert.match(describeError(e('FORBIDDEN'), 'receive').title, /read token/);
});
