// Pipelines against the real ZebraStream Python client (zebrastream-io 0.5.4 in .venv) through
// our relay's Connect API, plain and age-rt passphrase:
//   (a) a ZebraStream Python producer writes NDJSON (the library, text mode, a line per record)
//       and an SDK pipeline reads it: fromPipe → ndjson.decode() → collect(): records equal;
//   (b) an SDK pipeline writes CSV (csv.encode(): quoted fields with commas, quotes and an
//       embedded newline) and a Python script reads it with zebrastream's reader as a file
//       object straight into pandas.read_csv(f) (the seed's example): shape, dtypes, checksum.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import { startRelay, ROOT } from './lib/relay.mjs';
import { PKG, uniquePath } from './lib/sdk.mjs';
import { runCollected } from './lib/child.mjs';
import { skipUnless } from './lib/tools.mjs';

const sdk = await import(PKG);
const PYTHON = path.join(ROOT, '.venv/bin/python');
const skip = skipUnless(PYTHON, 'the Python venv with zebrastream-io and pandas (.venv)');
let relay;
const children = new Set();
before(async () => { relay = await startRelay(); });
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await relay?.stop();
});

/** python -c `code` args...: stdout/stderr collected; `done` resolves on exit, bounded by `ms`. */
const python = (code, args, ms = 60_000) => runCollected('python', PYTHON, ['-c', code, ...args], { ms, children });
const zsArgs = (p, passphrase) => [p, `${relay.http}/connect/v0/`, ...(passphrase ? [passphrase] : [])];

// (a) The producer: records from a formula (unicode, nesting, null, booleans, floats), one JSON
// line per write in text mode; the records and the bytes written on stdout, for the comparison.
const PY_NDJSON_WRITER = `
import sys, json, zebrastream.io.file as zf
kw = dict(stream_path=sys.argv[1], connect_api_url=sys.argv[2], access_token='x')
if len(sys.argv) > 3: kw.update(passphrase=sys.argv[3], encryption_mode='age-rt')
records = [{'sku': f'SKU-{i:05d}', 'name': ['Schraube M4, verzinkt', 'Écrou « papillon »', '螺丝', 'bolt 🔩'][i % 4],
            'qty': (i * 7) % 50, 'price': i + 0.25, 'active': i % 3 != 0, 'discontinued': None if i % 5 else '2026-01-01',
            'tags': ['a', 'b'][: i % 3], 'dims': {'w': i % 10, 'h': 1.5}} for i in range(int(sys.argv[4]) if len(sys.argv) > 4 else 5000)]
n = 0
with zf.open(mode='w', **kw) as f:
    for r in records:
        line = json.dumps(r, ensure_ascii=False) + '\\n'
        f.write(line)
        n += len(line.encode())
print(json.dumps({'bytes': n, 'records': records}, ensure_ascii=False))
`;

for (const passphrase of [undefined, 'zebra passphrase']) {
  const kind = passphrase ? 'age-rt passphrase' : 'plain';

  test(`ZebraStream Python producer (NDJSON) → SDK pipeline fromPipe → ndjson.decode() → collect(): records equal (${kind})`, { skip, timeout: 90_000 }, async () => {
    const p = uniquePath('zs-ndjson');
    const py = python(PY_NDJSON_WRITER, zsArgs(p, passphrase));
    const run = sdk.pipeline(sdk.fromPipe({ relay: relay.http, path: p, passphrase, timeout: 60 }), sdk.ndjson.decode(), sdk.collect());
    const report = await run.done;
    const res = await py.done;
    assert.equal(res.code, 0, res.err);
    const { records: sent, bytes } = JSON.parse(res.out);
    assert.equal(sent.length, 5000);
    assert.equal(report.result.length, sent.length);
    const i = sent.findIndex((r, k) => !isDeepStrictEqual(report.result[k], r));
    if (i >= 0) assert.deepEqual(report.result[i], sent[i], `record ${i} differs`);
    assert.equal(report.sink.delivered, 5000);
    assert.equal(report.steps[0].recordsOut, 5000);
    assert.equal(report.bytes.in, bytes, 'every byte the producer wrote');
  });
}

// (b) The seed's example: zebrastream's reader as a file object, straight into pandas.
const PY_READ_CSV = `
import sys, json, hashlib, pandas, zebrastream.io.file as zf
kw = dict(stream_path=sys.argv[1], connect_api_url=sys.argv[2], access_token='x')
if len(sys.argv) > 3: kw['passphrase'] = sys.argv[3]
with zf.open(mode='rb', **kw) as f:
    df = pandas.read_csv(f)
rows = df.astype(object).values.tolist()
print(json.dumps({'shape': list(df.shape), 'columns': list(df.columns), 'dtypes': [str(t) for t in df.dtypes],
                  'sha256': hashlib.sha256(json.dumps(rows, ensure_ascii=False, separators=(',', ':')).encode()).hexdigest(),
                  'rows': [rows[1], rows[3]]}, ensure_ascii=False))
`;

const NAMES = ['Smith, John', 'O\'Brien "Bob"', 'Zoë Müller', 'Line one\nline two', 'plain'];
function inventory(n) {
  const rows = [];
  for (let i = 0; i < n; i++) {
    rows.push({ sku: `SKU-${i}`, name: NAMES[i % NAMES.length], note: i % 7 === 0 ? 'fragile, handle with care' : 'ok', qty: (i * 7) % 50, price: i + 0.25, active: i % 3 !== 0 });
  }
  return rows;
}

for (const passphrase of [undefined, 'pandas passphrase']) {
  const kind = passphrase ? 'age-rt passphrase' : 'plain';

  test(`SDK pipeline csv.encode() → toPipe → ZebraStream reader → pandas.read_csv(f): shape, dtypes and checksum (${kind})`, { skip: skip, timeout: 90_000 }, async () => {
    const N = 3000;
    const p = uniquePath('zs-csv');
    const py = python(PY_READ_CSV, zsArgs(p, passphrase));
    const run = sdk.pipeline(() => inventory(N), sdk.csv.encode(), sdk.toPipe({ relay: relay.http, path: p, passphrase, timeout: 60 }));
    const report = await run.done;
    const res = await py.done;
    assert.equal(res.code, 0, res.err);
    const got = JSON.parse(res.out);
    const columns = ['sku', 'name', 'note', 'qty', 'price', 'active'];
    assert.deepEqual(got.shape, [N, columns.length]);
    assert.deepEqual(got.columns, columns);
    assert.deepEqual(got.dtypes, ['object', 'object', 'object', 'int64', 'float64', 'bool']);
    // Quotes, commas and the embedded newline came through as the same strings.
    assert.deepEqual(got.rows, [['SKU-1', 'O\'Brien "Bob"', 'ok', 7, 1.25, true], ['SKU-3', 'Line one\nline two', 'ok', 21, 3.25, false]]);
    const rows = inventory(N).map((r) => columns.map((c) => r[c]));
    assert.equal(got.sha256, createHash('sha256').update(JSON.stringify(rows)).digest('hex'));
    assert.equal(report.records.in, N);
    assert.equal(report.steps[0].recordsIn, N);
    assert.equal(report.sink.transfers[0].relayState, '[STATE:TRANSFER_SUCCESSFUL]');
  });
}
