// CSV steps of the pipeline API (issue #9): `csv.decode` / `csv.encode`, RFC 4180.
// Sans-IO and synchronous: each factory returns a fresh transformer per run,
//   push(items) => outputs; end() => outputs; both throw HttpipeError('INVALID_RECORD') on bad
//   input, naming the row (1-based, the header row counts).
// Decoding splits the bytes in the wasm module (src/wasm/csv.rs: BurntSushi's csv-core plus
// the strict RFC 4180 checks); the records cross as one buffer of field bytes per chunk, which
// one TextDecoder turns into a string that the field ends (UTF-16 units) slice; rows are built
// here. Measured against a JS state machine (bench/csv.mjs, bench/csv-js-decoder.mjs; four
// runs, paired medians): 0.99-1.18x on ASCII text, 1.07-1.21x on text with non-ASCII
// characters (V8 scans two-byte strings more slowly; csv-core sees bytes either way).
// Encoding is string building, in JS.
import { HttpipeError } from '../api.js';
import * as wasm from '../httpipe_wasm.js';

const invalid = (message) => new HttpipeError(message, 'INVALID_RECORD');
const unsupported = (message) => new HttpipeError(message, 'UNSUPPORTED');

function delimiterOf(options, what, asciiOnly) {
  const d = options.delimiter === undefined ? ',' : options.delimiter;
  if (typeof d !== 'string' || d.length !== 1 || d === '"' || d === '\r' || d === '\n' || (asciiOnly && d.charCodeAt(0) > 0x7f)) {
    throw unsupported(`${what}: \`delimiter\` must be one ${asciiOnly ? 'ASCII ' : ''}character other than a quote, CR or LF`);
  }
  return d;
}

function optionsObject(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw unsupported(`${what}: options must be an object`);
  return options;
}

/**
 * `{ [cols[k]]: fields[k] }`, unrolled: each store sees one key, so V8 keeps it monomorphic
 * (a loop's single store site sees every column and goes megamorphic: several times slower
 * per row). No `new Function` (Workers and strict CSPs forbid it).
 */
function rowObject(cols, f, w) {
  const o = {};
  if (w > 0) o[cols[0]] = f[0];
  if (w > 1) o[cols[1]] = f[1];
  if (w > 2) o[cols[2]] = f[2];
  if (w > 3) o[cols[3]] = f[3];
  if (w > 4) o[cols[4]] = f[4];
  if (w > 5) o[cols[5]] = f[5];
  if (w > 6) o[cols[6]] = f[6];
  if (w > 7) o[cols[7]] = f[7];
  if (w > 8) o[cols[8]] = f[8];
  if (w > 9) o[cols[9]] = f[9];
  if (w > 10) o[cols[10]] = f[10];
  if (w > 11) o[cols[11]] = f[11];
  for (let k = 12; k < w; k++) o[cols[k]] = f[k];
  return o;
}

// ---- decoding ------------------------------------------------------------------------------

/**
 * `csv.decode`: bytes in (split anywhere), rows out. Options: `header` (true: the first row
 * names the columns and rows are objects; false: rows are string arrays; string[]: these
 * column names, no header row in the input), `delimiter` (',', one ASCII character). A
 * leading BOM is dropped, CRLF / LF / CR end rows, blank lines are skipped, values stay
 * strings. Needs the wasm module (initialised at import in Node, Deno and Workers; in
 * browsers after `await init()`); its memory is freed at end() or on the first error.
 * @returns {{ push(chunks: Uint8Array[]): (object|string[])[], end(): (object|string[])[] }}
 */
export function csvDecoder(options) {
  const o = optionsObject(options, 'csv.decode');
  const delimiter = delimiterOf(o, 'csv.decode', true);
  const header = o.header === undefined ? true : o.header;
  let columns = null;
  if (Array.isArray(header)) {
    columns = header.map(String);
    const twice = columns.find((c, i) => columns.indexOf(c) !== i);
    if (twice !== undefined) throw unsupported(`csv.decode: \`header\` names the column ${JSON.stringify(twice)} twice`);
  } else if (typeof header !== 'boolean') {
    throw unsupported('csv.decode: `header` must be true, false or an array of column names');
  }
  let splitter;
  try {
    splitter = new wasm.CsvSplitter(delimiter.charCodeAt(0));
  } catch (e) {
    throw unsupported(`csv.decode needs the wasm module: call \`await init()\` first (${e && e.message})`);
  }
  return new CsvDecoder(splitter, header === true, columns);
}

class CsvDecoder {
  constructor(splitter, headerRow, columns) {
    this.sp = splitter;
    this.headerRow = headerRow; // the next row names the columns
    this.columns = null;
    this.plainKeys = true; // no '__proto__' column: rows built by plain assignment
    if (columns) this.setColumns(columns);
    // The splitter's text is whole UTF-8 sequences (complete records). Node 20 decodes ASCII
    // ~4x faster without `stream` but other text ~1.5x faster with it: the last text picks.
    // The BOM is gone already (the splitter drops the file's first).
    this.tdWhole = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    this.tdStream = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    this.ascii = true;
    this.rows = 0; // rows completed (header included)
    this.ended = false;
    this.failure = null; // the error this decoder failed with (thrown again on any later call)
  }

  setColumns(cols) {
    const seen = new Set();
    for (const c of cols) {
      if (seen.has(c)) throw invalid(`csv.decode: row 1: duplicate column name ${JSON.stringify(c)}`);
      seen.add(c);
    }
    this.columns = cols;
    this.plainKeys = !seen.has('__proto__');
  }

  push(chunks) {
    this.check('push');
    const out = [];
    try {
      for (const chunk of chunks) {
        if (!(chunk instanceof Uint8Array)) throw unsupported('csv.decode: input chunks must be Uint8Arrays');
        this.take(this.sp.push(chunk), out, false);
      }
    } catch (e) {
      this.fail(e);
    }
    return out;
  }

  end() {
    this.check('end');
    this.ended = true;
    const out = [];
    try {
      this.take(this.sp.finish(), out, true);
    } catch (e) {
      this.fail(e);
    }
    this.release();
    return out;
  }

  /** A failed decoder keeps failing with its error; an ended one takes nothing more. */
  check(what) {
    if (this.failure !== null) throw this.failure;
    if (this.ended) throw unsupported(`csv.decode: ${what}() after end()`);
  }

  fail(e) {
    this.release();
    this.failure = e;
    throw e;
  }

  release() {
    if (this.sp !== null) {
      this.sp.free();
      this.sp = null;
    }
  }

  /** The `n` records of the splitter's last call become rows; then its error, if any. */
  take(n, out, atEnd) {
    const sp = this.sp;
    if (n > 0) {
      // Views into wasm memory: used before the next call into the module.
      const bytes = sp.text();
      const ends = sp.ends();
      const counts = sp.counts();
      let s;
      try {
        if (this.ascii) {
          s = this.tdWhole.decode(bytes);
        } else {
          s = this.tdStream.decode(bytes, { stream: true });
          // The batch is whole records: a sequence cut at its end is invalid here, never
          // the start of one the next batch completes (flushing throws on it: fatal).
          this.tdStream.decode();
        }
      } catch {
        throw invalid(sp.badUtf8(atEnd));
      }
      this.ascii = s.length === bytes.length;
      let f = 0;
      let pos = 0;
      for (let r = 0; r < n; r++) {
        const c = counts[r];
        const fields = new Array(c);
        for (let k = 0; k < c; k++) {
          const e = ends[f++];
          fields[k] = s.slice(pos, e);
          pos = e;
        }
        this.endRow(fields, out);
      }
    }
    const error = sp.error();
    if (error != null) throw invalid(error);
  }

  endRow(fields, out) {
    const n = ++this.rows;
    if (this.headerRow) {
      this.headerRow = false;
      this.setColumns(fields);
      return;
    }
    const cols = this.columns;
    if (cols === null) {
      out.push(fields);
      return;
    }
    const w = cols.length;
    if (fields.length !== w) {
      throw invalid(`csv.decode: row ${n} has ${fields.length} field${fields.length === 1 ? '' : 's'}, the header has ${w}`);
    }
    if (this.plainKeys) {
      out.push(rowObject(cols, fields, w));
      return;
    }
    const row = {};
    for (let k = 0; k < w; k++) {
      Object.defineProperty(row, cols[k], { value: fields[k], enumerable: true, writable: true, configurable: true });
    }
    out.push(row);
  }
}

// ---- encoding ------------------------------------------------------------------------------

/**
 * `csv.encode`: rows in, bytes out (one Uint8Array per push, none for no rows). Options: `columns` (default:
 * the keys of the first record when records are objects), `header` (default: true when there
 * are columns; the column row is written once, first), `delimiter` (','), `eol` ('\r\n').
 * Records are objects (fields picked by column) or arrays. null/undefined → empty field;
 * numbers, bigints, booleans → String(); Date → toISOString(); other objects → JSON.
 * @returns {{ push(rows: (object|unknown[])[]): Uint8Array[], end(): Uint8Array[] }}
 */
export function csvEncoder(options) {
  const o = optionsObject(options, 'csv.encode');
  const delimiter = delimiterOf(o, 'csv.encode', false);
  const eol = o.eol === undefined ? '\r\n' : o.eol;
  if (eol !== '\r\n' && eol !== '\n') throw unsupported("csv.encode: `eol` must be '\\r\\n' or '\\n'");
  let columns = null;
  if (o.columns !== undefined) {
    if (!Array.isArray(o.columns)) throw unsupported('csv.encode: `columns` must be an array of names');
    columns = o.columns.map(String);
  }
  if (o.header !== undefined && typeof o.header !== 'boolean') {
    throw unsupported('csv.encode: `header` must be true or false');
  }
  return new CsvEncoder(delimiter, eol, columns, o.header);
}

const te = new TextEncoder();

class CsvEncoder {
  constructor(delimiter, eol, columns, header) {
    this.d = delimiter;
    this.eol = eol;
    this.columns = columns;
    this.header = header; // undefined: decided by the first record
    this.rows = 0; // rows written (header included)
    this.started = false;
    const esc = delimiter.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
    // Quoted: a delimiter, quote, CR or LF anywhere; a space or tab first or last (readers
    // that trim would lose it); a BOM first (at the start of the output a reader drops it).
    // The ends are checked with charCodeAt: anchored alternatives slow the scan down.
    this.special = new RegExp(`[${esc}"\\r\\n]`);
  }

  push(records) {
    let text = '';
    for (const r of records) text += this.line(r);
    return text === '' ? [] : [te.encode(text)];
  }

  end() {
    return [];
  }

  line(r) {
    let head = '';
    if (!this.started) {
      this.started = true;
      const isObject = r !== null && typeof r === 'object' && !Array.isArray(r);
      if (this.columns === null && isObject) {
        this.columns = Object.keys(r);
        this.named = new Set(this.columns); // taken from the first record: later ones are checked
      }
      if (this.header === undefined) this.header = this.columns !== null;
      if (this.header) {
        if (this.columns === null) throw unsupported('csv.encode: `header: true` needs `columns` (records are arrays)');
        head = this.fields(this.columns, this.columns.length, null, this.rows + 1) + this.eol;
        this.rows++;
      }
    }
    const n = this.rows + 1;
    const cols = this.columns;
    let line;
    if (Array.isArray(r)) {
      if (cols !== null && r.length !== cols.length) {
        throw invalid(`csv.encode: row ${n} has ${r.length} field${r.length === 1 ? '' : 's'}, the columns are ${cols.length}`);
      }
      line = this.fields(r, r.length, null, n);
    } else if (r !== null && typeof r === 'object') {
      if (cols === null) throw invalid(`csv.encode: row ${n}: an object record needs \`columns\` (the first record was an array)`);
      if (this.named) this.checkNamed(r, n);
      line = this.fields(cols, cols.length, r, n);
    } else {
      throw invalid(`csv.encode: row ${n}: a record must be an object or an array, not ${r === null ? 'null' : typeof r}`);
    }
    this.rows++;
    return head + line + this.eol;
  }

  /** Columns taken from the first record: a later record's field outside them would be lost. */
  checkNamed(r, n) {
    for (const k in r) {
      if (Object.hasOwn(r, k) && !this.named.has(k)) {
        const cols = this.columns.map((c) => JSON.stringify(c)).join(', ');
        throw invalid(`csv.encode: row ${n} has the field ${JSON.stringify(k)}, not among the columns the first record gave (${cols}); give \`columns\` to choose them`);
      }
    }
  }

  /** The fields of one row: `a`'s values, or (`r` given) `r`'s values under the names `a`. */
  fields(a, w, r, n) {
    const d = this.d;
    let s = '';
    for (let k = 0; k < w; k++) {
      let v;
      if (r === null) {
        v = a[k];
      } else {
        v = r[a[k]];
        if (typeof v === 'function' && !Object.hasOwn(r, a[k])) v = undefined; // an inherited method
      }
      if (k > 0) s += d;
      s += typeof v === 'string' ? this.text(v) : this.value(v, n);
    }
    // A lone empty field would be a blank line, which readers skip.
    return w === 1 && s === '' ? '""' : s;
  }

  text(s) {
    const len = s.length;
    if (len === 0) return s;
    const a = s.charCodeAt(0);
    const z = s.charCodeAt(len - 1);
    if (a === 32 || a === 9 || a === 0xfeff || z === 32 || z === 9 || this.special.test(s)) {
      return `"${s.replaceAll('"', '""')}"`;
    }
    return s;
  }

  value(v, n) {
    switch (typeof v) {
      case 'number': case 'bigint': case 'boolean': return String(v);
      case 'undefined': return '';
      case 'symbol': case 'function':
        throw invalid(`csv.encode: row ${n}: a ${typeof v} is not a CSV value`);
      default: {
        if (v === null) return '';
        if (v instanceof Date) {
          if (Number.isNaN(v.getTime())) throw invalid(`csv.encode: row ${n}: an invalid Date`);
          return v.toISOString();
        }
        let s;
        try {
          s = JSON.stringify(v);
        } catch (e) {
          throw invalid(`csv.encode: row ${n}: a value JSON.stringify can't write (${e.message})`);
        }
        return s === undefined ? '' : this.text(s);
      }
    }
  }
}
