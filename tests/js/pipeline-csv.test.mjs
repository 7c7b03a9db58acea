// The pipeline's CSV steps (js/pipeline/csv.js, from pkg/): RFC 4180 decoding at every chunk
// boundary, INVALID_RECORD with row numbers, encoding rules, encode→decode round trips, and
// the encoder's output read back by pandas.read_csv and Python's csv module (.venv).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import '../../pkg/lib/index.js'; // loads the wasm module (the decoder splits in it; lib/: the modules as written)
import { csvDecoder, csvEncoder } from '../../pkg/lib/pipeline/csv.js';
import { HttpipeError } from '../../pkg/lib/api.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PYTHON = path.join(ROOT, '.venv/bin/python');
const te = new TextEncoder();
const td = new TextDecoder();
const bytes = (x) => (typeof x === 'string' ? te.encode(x) : x);
const concat = (parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};

let seed = 1;
const rnd = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32;
};
const rint = (n) => Math.floor(rnd() * n);

/** Decodes `input` pushed as `pieces` (byte arrays; each its own push unless `together`). */
function decodeChunks(pieces, options, together = false) {
  const d = csvDecoder(options);
  const rows = [];
  if (together) rows.push(...d.push(pieces));
  else for (const p of pieces) rows.push(...d.push([p]));
  rows.push(...d.end());
  return rows;
}
const decode = (input, options) => decodeChunks([bytes(input)], options);

function splitAt(b, cuts) {
  const out = [];
  let last = 0;
  for (const c of [...cuts].sort((x, y) => x - y)) { out.push(b.subarray(last, c)); last = c; }
  out.push(b.subarray(last));
  return out;
}

function decodeError(pieces, options) {
  try {
    decodeChunks(pieces, options);
  } catch (e) {
    assert.ok(e instanceof HttpipeError, `not an HttpipeError: ${e}`);
    return e;
  }
  assert.fail('decoded without an error');
}

// ---- RFC 4180 ---------------------------------------------------------------------------------

test('header row names the columns; CRLF, LF and CR line ends; last line with or without a line end', () => {
  const want = [{ a: '1', b: '2' }, { a: '3', b: '4' }];
  for (const input of ['a,b\r\n1,2\r\n3,4\r\n', 'a,b\r\n1,2\r\n3,4', 'a,b\n1,2\n3,4\n', 'a,b\n1,2\n3,4', 'a,b\r1,2\r3,4\r', 'a,b\n1,2\r\n3,4']) {
    assert.deepEqual(decode(input), want, JSON.stringify(input));
  }
});

test('blank lines are not rows (an empty last line, blank lines between rows)', () => {
  assert.deepEqual(decode('a,b\r\n1,2\r\n\r\n'), [{ a: '1', b: '2' }]);
  assert.deepEqual(decode('a,b\n\n1,2\n\n\n3,4\n\n'), [{ a: '1', b: '2' }, { a: '3', b: '4' }]);
  assert.deepEqual(decode(''), []);
  assert.deepEqual(decode('\r\n'), []);
  assert.deepEqual(decode('a,b\r\n'), []);
  assert.deepEqual(decode('a,b'), []);
});

test('quoted fields: delimiters, CRLF and LF, doubled quotes, empty quoted fields', () => {
  const input = 'name,note\r\n"Doe, Jane","line 1\r\nline 2"\r\n"x","say ""hi"""\r\n"","\n"\r\n"""",""""""\r\n';
  assert.deepEqual(decode(input), [
    { name: 'Doe, Jane', note: 'line 1\r\nline 2' },
    { name: 'x', note: 'say "hi"' },
    { name: '', note: '\n' },
    { name: '"', note: '""' },
  ]);
  assert.deepEqual(decode('a\r\n""\r\n'), [{ a: '' }], 'a quoted empty field is a row, not a blank line');
  assert.deepEqual(decode('a,b\r\n"1","2"'), [{ a: '1', b: '2' }], 'quoted last field without a line end');
  assert.deepEqual(decode('a,b\r\n"1",""'), [{ a: '1', b: '' }]);
  assert.deepEqual(decode('a,b\r\n"1\r\n",2\r'), [{ a: '1\r\n', b: '2' }]);
});

test('empty fields: leading, inside, trailing, a whole row of them', () => {
  assert.deepEqual(decode('a,b,c\n,2,3\n1,,3\n1,2,\n,,\n'), [
    { a: '', b: '2', c: '3' }, { a: '1', b: '', c: '3' }, { a: '1', b: '2', c: '' }, { a: '', b: '', c: '' },
  ]);
  assert.deepEqual(decode('a,b,c\n,,'), [{ a: '', b: '', c: '' }]);
});

test('values stay strings; spaces are kept; a leading UTF-8 BOM is dropped, a later one kept', () => {
  assert.deepEqual(decode('\uFEFFn,t,x\r\n1,true, NA \r\n'), [{ n: '1', t: 'true', x: ' NA ' }]);
  assert.deepEqual(decode('\uFEFF\uFEFFa\n1\n'), [{ '\uFEFFa': '1' }]);
  assert.deepEqual(decode('\uFEFF'), []);
});

test('header: false gives string arrays (any width); header: [names] reads no header row', () => {
  assert.deepEqual(decode('a,b\r\n1,2,3\r\n"x"\r\n', { header: false }), [['a', 'b'], ['1', '2', '3'], ['x']]);
  assert.deepEqual(decode('1,2\r\n3,4\r\n', { header: ['x', 'y'] }), [{ x: '1', y: '2' }, { x: '3', y: '4' }]);
  assert.deepEqual(decode('', { header: ['x'] }), []);
});

test('delimiter option (; and tab); a comma is then plain text', () => {
  assert.deepEqual(decode('a;b\r\n1,5;"x;y"\r\n', { delimiter: ';' }), [{ a: '1,5', b: 'x;y' }]);
  assert.deepEqual(decode('a\tb\n1\t"2\t3"\n', { delimiter: '\t' }), [{ a: '1', b: '2\t3' }]);
});

test('unicode values and column names; a column called __proto__ is an own property', () => {
  assert.deepEqual(decode('名前,emoji\n"Zoë, Ł",😀🇩🇪\n'), [{ 名前: 'Zoë, Ł', emoji: '😀🇩🇪' }]);
  const [row] = decode('__proto__,b\n1,2\n');
  assert.deepEqual(Object.keys(row), ['__proto__', 'b']);
  assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__').value, '1');
  assert.equal(Object.getPrototypeOf(row), Object.prototype);
});

test('bad options are UNSUPPORTED', () => {
  for (const o of [{ delimiter: '' }, { delimiter: ',,' }, { delimiter: '"' }, { delimiter: '\n' }, { delimiter: '¦' }, { header: 'yes' }, { header: ['a', 'b', 'a'] }]) {
    assert.throws(() => csvDecoder(o), (e) => e instanceof HttpipeError && e.code === 'UNSUPPORTED', JSON.stringify(o));
  }
  for (const o of [{ delimiter: '\r' }, { eol: '\r' }, { columns: 'a,b' }, { header: 1 }]) {
    assert.throws(() => csvEncoder(o), (e) => e instanceof HttpipeError && e.code === 'UNSUPPORTED', JSON.stringify(o));
  }
  const d = csvDecoder();
  assert.throws(() => d.push(['a,b\n']), (e) => e.code === 'UNSUPPORTED', 'a string chunk');
});

test('without the wasm module loaded, csvDecoder says to call init() (the encoder needs none)', () => {
  const script = `import('./pkg/lib/pipeline/csv.js').then((m) => {
    m.csvEncoder().push([{ a: 1 }]);
    try { m.csvDecoder(); console.log('no error'); } catch (e) { console.log(e.code, e.message.split(':')[0]); }
  });`;
  const got = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(got.trim(), 'UNSUPPORTED csv.decode needs the wasm module');
});

// ---- chunk boundaries --------------------------------------------------------------------------

const TRICKY = concat([
  new Uint8Array([0xef, 0xbb, 0xbf]),
  te.encode('id,"na,me",note\r\n'
    + '1,Zoë,"multi\r\nline ""quoted"" text"\r\n'
    + '\r\n'
    + '2,"",東京 😀\n'
    + '3,"a,b",""\r'
    + '4,€,"\n"\r\n'
    + ',,\r\n'
    + '"5","x""","😀"'),
]);
const TRICKY_ROWS = [
  { id: '1', 'na,me': 'Zoë', note: 'multi\r\nline "quoted" text' },
  { id: '2', 'na,me': '', note: '東京 😀' },
  { id: '3', 'na,me': 'a,b', note: '' },
  { id: '4', 'na,me': '€', note: '\n' },
  { id: '', 'na,me': '', note: '' },
  { id: '5', 'na,me': 'x"', note: '😀' },
];

test('the tricky sample decodes whole, as one push of two chunks, and cut at every byte offset', () => {
  assert.deepEqual(decode(TRICKY), TRICKY_ROWS);
  for (let k = 0; k <= TRICKY.length; k++) {
    const pieces = splitAt(TRICKY, [k]);
    assert.deepEqual(decodeChunks(pieces), TRICKY_ROWS, `cut at ${k}`);
    assert.deepEqual(decodeChunks(pieces, undefined, true), TRICKY_ROWS, `cut at ${k}, one push`);
  }
  // Two cuts: every pair of offsets.
  for (let a = 0; a <= TRICKY.length; a++) {
    for (let b = a; b <= TRICKY.length; b += 3) {
      assert.deepEqual(decodeChunks(splitAt(TRICKY, [a, b])), TRICKY_ROWS, `cuts at ${a}, ${b}`);
    }
  }
});

test('the tricky sample pushed byte by byte, and in 300 random splits (empty chunks too)', () => {
  const single = Array.from(TRICKY, (b) => new Uint8Array([b]));
  assert.deepEqual(decodeChunks(single), TRICKY_ROWS);
  assert.deepEqual(decodeChunks(single, undefined, true), TRICKY_ROWS);
  seed = 7;
  for (let r = 0; r < 300; r++) {
    const cuts = Array.from({ length: 1 + rint(12) }, () => rint(TRICKY.length + 1));
    assert.deepEqual(decodeChunks(splitAt(TRICKY, cuts), undefined, rnd() < 0.5), TRICKY_ROWS, `cuts ${cuts}`);
  }
});

test('invalid UTF-8 at the end of a batch after non-ASCII text is an error, never dropped or joined to the next batch', () => {
  const cut = new Uint8Array([0x61, 0xe2, 0x82]);
  // a sequence cut at the end of a record, completed by the next record's first byte
  let d = csvDecoder({ header: false });
  assert.deepEqual(d.push([te.encode('é\n')]), [['é']]);
  assert.throws(() => { d.push([concat([cut, te.encode('\n')])]); d.push([concat([new Uint8Array([0xac]), te.encode('b\n')])]); },
    (e) => e instanceof HttpipeError && e.code === 'INVALID_RECORD' && /row 2: invalid UTF-8/.test(e.message));
  // ... and cut at the end of the input
  d = csvDecoder({ header: false });
  assert.deepEqual(d.push([te.encode('é\n')]), [['é']]);
  assert.throws(() => { d.push([cut]); d.end(); },
    (e) => e instanceof HttpipeError && e.code === 'INVALID_RECORD' && /row 2: invalid UTF-8/.test(e.message));
});

test('multi-byte UTF-8 (2, 3, 4 bytes) split inside the sequence, in fields, quotes and column names', () => {
  const text = 'é€😀,"é€😀\n😀"\r\né€😀,x😀\r\n';
  const want = [{ 'é€😀': 'é€😀', 'é€😀\n😀': 'x😀' }];
  const b = te.encode(text);
  for (let k = 0; k <= b.length; k++) {
    for (let m = k; m <= b.length; m++) assert.deepEqual(decodeChunks(splitAt(b, [k, m])), want, `cuts ${k}, ${m}`);
  }
});

test('long rows and a long quoted field with many chunks (the fast path and the state machine agree)', () => {
  const long = 'x'.repeat(100000);
  const quoted = `${'q,"\r\n'.repeat(20000)}`;
  const input = `a,b\r\n${long},"${quoted.replaceAll('"', '""')}"\r\n1,2\r\n`;
  const want = [{ a: long, b: quoted }, { a: '1', b: '2' }];
  const b = te.encode(input);
  assert.deepEqual(decode(b), want);
  const cuts = [];
  for (let k = 0; k < b.length; k += 997) cuts.push(k);
  assert.deepEqual(decodeChunks(splitAt(b, cuts)), want);
});

// ---- INVALID_RECORD ----------------------------------------------------------------------------

const INVALID = [
  ['a,b\r\n1,2\r\n3,x"y\r\n', undefined, 'csv.decode: row 3: a quote inside an unquoted field (quote the whole field and double the quote)'],
  ['a,b\r\n1,2\r\n3,xy"\r\n', undefined, 'csv.decode: row 3: a quote inside an unquoted field (quote the whole field and double the quote)'],
  ['a,"b"c\r\n1,2\r\n', undefined, 'csv.decode: row 1: text after the closing quote of a quoted field'],
  ['a,b\r\n"1" ,2\r\n', undefined, 'csv.decode: row 2: text after the closing quote of a quoted field'],
  ['a,b\r\n1,2\r\n"3\r\n4,5\r\n', undefined, 'csv.decode: row 3: unterminated quoted field at end of input'],
  ['a,b\r\n1,"', undefined, 'csv.decode: row 2: unterminated quoted field at end of input'],
  ['a,b,c\r\n1,2,3\r\n1,2,3\r\n1,2,3\r\n4,5,6,7\r\n', undefined, 'csv.decode: row 5 has 4 fields, the header has 3'],
  ['a,b,c\r\n1,2\r\n', undefined, 'csv.decode: row 2 has 2 fields, the header has 3'],
  ['a,b,c\r\n1,2,3\r\n1', undefined, 'csv.decode: row 3 has 1 field, the header has 3'],
  ['1,2\r\n3\r\n', { header: ['x', 'y'] }, 'csv.decode: row 2 has 1 field, the header has 2'],
  ['a,b,a\r\n1,2,3\r\n', undefined, 'csv.decode: row 1: duplicate column name "a"'],
  ['1,x"\r\n', { header: false }, 'csv.decode: row 1: a quote inside an unquoted field (quote the whole field and double the quote)'],
  [concat([te.encode('a,b\r\n1,2\r\n3,'), new Uint8Array([0x80]), te.encode('\r\n')]), undefined, 'csv.decode: row 3: invalid UTF-8'],
  [concat([te.encode('a,b\r\n1,"2\r\n'), new Uint8Array([0xc0, 0x80]), te.encode('"\r\n')]), undefined, 'csv.decode: row 2: invalid UTF-8'],
  [concat([te.encode('a,b\r\n1,2\r\n'), new Uint8Array([0xed, 0xa0, 0x80]), te.encode(',x\r\n')]), undefined, 'csv.decode: row 3: invalid UTF-8'],
  [concat([te.encode('a,b\r\n1,2\r\n3,'), new Uint8Array([0xe2, 0x82])]), undefined, 'csv.decode: row 3: invalid UTF-8 (a sequence cut short at the end of input)'],
  [concat([te.encode('a,b\r\n1,2\r\n3,'), new Uint8Array([0xe2, 0x82]), te.encode('x\r\n')]), undefined, 'csv.decode: row 3: invalid UTF-8'],
  [concat([new Uint8Array([0xff]), te.encode('a\r\n')]), undefined, 'csv.decode: row 1: invalid UTF-8'],
];

test('every INVALID_RECORD case names its row, however the input is chunked', () => {
  for (const [input, options, message] of INVALID) {
    const b = bytes(input);
    const whole = decodeError([b], options);
    assert.equal(whole.code, 'INVALID_RECORD');
    assert.equal(whole.message, message, JSON.stringify(td.decode(b)));
    assert.equal(decodeError(Array.from(b, (x) => new Uint8Array([x])), options).message, message, `byte by byte: ${message}`);
    for (let k = 0; k <= b.length; k++) {
      assert.equal(decodeError(splitAt(b, [k]), options).message, message, `cut at ${k}: ${message}`);
    }
  }
});

test('rows before the bad one come from earlier pushes; a failed decoder keeps its error; nothing after end()', () => {
  const d = csvDecoder();
  assert.deepEqual(d.push([te.encode('a,b\r\n1,2\r\n')]), [{ a: '1', b: '2' }]);
  let first;
  assert.throws(() => d.push([te.encode('3,"4"x\r\n')]), (e) => { first = e; return /row 3: text after the closing quote/.test(e.message); });
  assert.throws(() => d.push([te.encode('5,6\r\n')]), (e) => e === first);
  assert.throws(() => d.end(), (e) => e === first);
  const w = csvDecoder();
  assert.throws(() => w.push([te.encode('a,b\r\n1\r\n2,3\r\n')]), /row 2 has 1 field/);
  assert.throws(() => w.end(), /row 2 has 1 field/);
  const e = csvDecoder();
  assert.deepEqual(e.push([te.encode('a\r\n1')]), []);
  assert.deepEqual(e.end(), [{ a: '1' }]);
  assert.throws(() => e.end(), (x) => x.code === 'UNSUPPORTED' && x.message === 'csv.decode: end() after end()');
  assert.throws(() => e.push([]), (x) => x.code === 'UNSUPPORTED' && x.message === 'csv.decode: push() after end()');
});

test('the wasm splitter is freed at end() and on the first error', () => {
  const ok = csvDecoder();
  ok.push([te.encode('a\r\n1\r\n')]);
  assert.notEqual(ok.sp, null);
  ok.end();
  assert.equal(ok.sp, null);
  for (const input of ['a\r\n"x"y\r\n', 'a,b\r\n1\r\n', 'a\r\n"']) {
    const d = csvDecoder();
    assert.throws(() => { d.push([te.encode(input)]); d.end(); }, (e) => e.code === 'INVALID_RECORD');
    assert.equal(d.sp, null, input);
  }
});

// ---- encoding ----------------------------------------------------------------------------------

const encodeText = (records, options, batches = [records.length]) => {
  const e = csvEncoder(options);
  const out = [];
  let i = 0;
  for (const n of batches) {
    const got = e.push(records.slice(i, i + n));
    assert.ok(got.length <= 1, 'at most one Uint8Array per push');
    assert.equal(got.length, n === 0 ? 0 : 1);
    out.push(...got);
    i += n;
  }
  assert.deepEqual(e.end(), []);
  return td.decode(concat(out));
};

test('objects: columns from the first record, header once, CRLF by default; eol \\n', () => {
  const recs = [{ a: 1, b: 'x' }, { b: 'y', a: 2 }, { a: 3 }];
  assert.equal(encodeText(recs, undefined, [1, 0, 2]), 'a,b\r\n1,x\r\n2,y\r\n3,\r\n');
  assert.equal(encodeText(recs, { eol: '\n', columns: ['b'] }), 'b\nx\ny\n""\n');
  assert.equal(encodeText(recs, { header: false, delimiter: ';' }), '1;x\r\n2;y\r\n3;\r\n');
  assert.equal(encodeText([]), '');
});

// A new user's trial: [{a,b},{a,c,d}] came out as a,b / 1,2 / 3, — c and d lost, no error.
test('objects: a later record with a field the first record did not have is refused, not dropped', () => {
  assert.throws(() => encodeText([{ a: 1, b: 2 }, { a: 3, c: 4, d: 'secret field' }]),
    (e) => e.code === 'INVALID_RECORD'
      && e.message === 'csv.encode: row 3 has the field "c", not among the columns the first record gave ("a", "b"); give `columns` to choose them');
  // missing fields are empty; inherited ones are not fields; given columns choose
  assert.equal(encodeText([{ a: 1, b: 2 }, Object.assign(Object.create({ z: 9 }), { a: 3 })]), 'a,b\r\n1,2\r\n3,\r\n');
  assert.equal(encodeText([{ a: 1, b: 2 }, { a: 3, c: 4 }], { columns: ['a'] }), 'a\r\n1\r\n3\r\n');
});

test('arrays: no header unless columns are given; width must match the columns', () => {
  assert.equal(encodeText([[1, 2], [3, 4, 5]]), '1,2\r\n3,4,5\r\n');
  assert.equal(encodeText([[1, 2]], { columns: ['x', 'y'] }), 'x,y\r\n1,2\r\n');
  assert.equal(encodeText([[1, 2]], { columns: ['x', 'y'], header: false }), '1,2\r\n');
  assert.throws(() => encodeText([[1, 2], [3]], { columns: ['x', 'y'] }), (e) => e.code === 'INVALID_RECORD' && e.message === 'csv.encode: row 3 has 1 field, the columns are 2');
});

test('values: quoting rules, null/undefined, numbers, bigints, booleans, Date, objects', () => {
  const row = [
    'plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\rhere', ' lead', 'trail ', '', null, undefined,
    0, -1.5, 10n ** 20n, true, false, new Date(Date.UTC(2024, 1, 29, 12, 0, 0)), { k: [1, 'x'] }, [1, 2], 'é😀',
  ];
  assert.equal(encodeText([row]),
    'plain,"a,b","say ""hi""","two\nlines","cr\rhere"," lead","trail ",,,,0,-1.5,100000000000000000000,true,false,'
    + '2024-02-29T12:00:00.000Z,"{""k"":[1,""x""]}","[1,2]",é😀\r\n');
  assert.equal(encodeText([['a;b', 'c,d']], { delimiter: ';' }), '"a;b";c,d\r\n');
  assert.equal(encodeText([{ 'x,y': 1, 'q"': 2 }]), '"x,y","q"""\r\n1,2\r\n');
  assert.equal(encodeText([[''], [null], ['x']]), '""\r\n""\r\nx\r\n', 'a lone empty field is written "" (not a blank line)');
});

test('encode errors are INVALID_RECORD with the row number (the header row counts)', () => {
  const cases = [
    [[{ a: 1 }, 'str'], 'csv.encode: row 3: a record must be an object or an array, not string'],
    [[{ a: 1 }, null], 'csv.encode: row 3: a record must be an object or an array, not null'],
    [[{ a: Symbol('s') }], 'csv.encode: row 2: a symbol is not a CSV value'],
    [[{ a: () => 1 }], 'csv.encode: row 2: a function is not a CSV value'],
    [[{ a: 1 }, { a: new Date(NaN) }], 'csv.encode: row 3: an invalid Date'],
    [[[1], { a: 1 }], 'csv.encode: row 2: an object record needs `columns` (the first record was an array)'],
  ];
  const cyclic = {};
  cyclic.self = cyclic;
  for (const [records, message] of cases) {
    assert.throws(() => encodeText(records), (e) => e instanceof HttpipeError && e.code === 'INVALID_RECORD' && e.message === message, message);
  }
  assert.throws(() => encodeText([{ a: cyclic }]), (e) => e.code === 'INVALID_RECORD' && /^csv.encode: row 2: a value JSON.stringify can't write/.test(e.message));
  assert.equal(encodeText([{ toString: 'x', constructor: 'y' }, {}]), 'toString,constructor\r\nx,y\r\n,\r\n', 'inherited methods are not values');
});

// ---- round trips -------------------------------------------------------------------------------

const ALPHABET = ['a', 'b', 'Z', '0', '9', ' ', ',', ';', '"', '""', '\r', '\n', '\r\n', '\t', 'é', '€', '東', '😀', '\uFEFF', "'", '#', 'NA', '-'];
const randomString = (max) => Array.from({ length: rint(max + 1) }, () => ALPHABET[rint(ALPHABET.length)]).join('');

test('property: random records (unicode, delimiters, quotes, newlines) survive encode → decode in random chunks', () => {
  seed = 99;
  for (let iter = 0; iter < 300; iter++) {
    const width = 1 + rint(5);
    const delimiter = rnd() < 0.8 ? ',' : ';';
    const columns = [];
    while (columns.length < width) {
      const c = randomString(6);
      if (!columns.includes(c) && c !== '__proto__') columns.push(c);
    }
    const objects = rnd() < 0.7;
    const records = Array.from({ length: rint(20) }, () => {
      const values = columns.map(() => randomString(10));
      return objects ? Object.fromEntries(columns.map((c, k) => [c, values[k]])) : values;
    });
    const header = objects || rnd() < 0.5;
    const e = csvEncoder(objects ? { delimiter, eol: rnd() < 0.5 ? '\r\n' : '\n' } : { delimiter, columns, header });
    const parts = [];
    for (let i = 0; i < records.length;) {
      const n = 1 + rint(5);
      parts.push(...e.push(records.slice(i, i + n)));
      i += n;
    }
    const b = concat(parts);
    const cuts = Array.from({ length: rint(6) }, () => rint(b.length + 1));
    const got = decodeChunks(splitAt(b, cuts), { delimiter, header });
    const want = objects || !header ? records : records.map((r) => Object.fromEntries(columns.map((c, k) => [c, r[k]])));
    assert.deepEqual(got, want, `iteration ${iter}`);
  }
});

// ---- Python: pandas.read_csv and the csv module -----------------------------------------------

const skipPython = !fs.existsSync(PYTHON) && 'no .venv (scripts/setup.sh full)';

test('pandas.read_csv and Python\'s csv module read the encoder\'s output back identically', { skip: skipPython, timeout: 60000 }, () => {
  seed = 5;
  const columns = ['id', 'name, with comma', 'quote"d', 'note', 'ünïcode', 'empty', 'num'];
  const records = [];
  for (let i = 0; i < 200; i++) {
    records.push({
      id: i,
      'name, with comma': randomString(8),
      'quote"d': `"${randomString(4)}"`,
      note: i % 7 === 0 ? 'line1\r\nline2\nline3' : randomString(12),
      ünïcode: ['Zoë', '東京', '😀🇩🇪', 'Łódź, PL', '€ 5'][i % 5],
      empty: i % 3 === 0 ? null : i % 3 === 1 ? '' : 'NA',
      num: i % 2 ? 1.5 * i : -i,
    });
  }
  // pandas treats a BOM at the start of a cell's text as data, like us (only the file's first is dropped).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-csv-'));
  try {
    const eols = ['\r\n', '\n'];
    const files = eols.map((eol) => {
      const e = csvEncoder({ columns, eol });
      const file = path.join(dir, `out${eol.length}.csv`);
      fs.writeFileSync(file, concat([...e.push(records.slice(0, 50)), ...e.push(records.slice(50)), ...e.end()]));
      return file;
    });
    // One Python for both files (importing pandas is the slow part).
    const script = `
import csv, json, sys, pandas
out = []
for name in sys.argv[1:]:
    df = pandas.read_csv(name, dtype=str, keep_default_na=False)
    with open(name, newline='', encoding='utf-8') as f:
        rows = list(csv.reader(f))
    out.append({'pandas': {'columns': list(df.columns), 'rows': df.values.tolist()}, 'csv': rows})
json.dump(out, sys.stdout)`;
    const results = JSON.parse(execFileSync(PYTHON, ['-c', script, ...files], { encoding: 'utf8' }));
    const want = records.map((r) => columns.map((c) => (r[c] === null ? '' : String(r[c]))));
    results.forEach((got, i) => {
      const eol = JSON.stringify(eols[i]);
      assert.deepEqual(got.pandas.columns, columns);
      assert.deepEqual(got.pandas.rows, want, `pandas, eol ${eol}`);
      assert.deepEqual(got.csv, [columns, ...want], `csv module, eol ${eol}`);
      // And our decoder reads the same file back.
      assert.deepEqual(decode(fs.readFileSync(files[i])).map((r) => columns.map((c) => r[c])), want);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
