// CSV steps of the pipeline API (issue #9): `csv.decode` / `csv.encode`, RFC 4180.
// Sans-IO and synchronous: each factory returns a fresh transformer per run,
//   push(items) => outputs; end() => outputs; both throw HttpipeError('INVALID_RECORD') on bad
//   input, naming the row (1-based, the header row counts).
// The decoder is a JS state machine over the text of a streaming, fatal TextDecoder; it was
// measured against Rust csv-core inside the wasm module (bench/csv.mjs) and was faster, because
// the rows must end up as JS strings and objects anyway (see the commit and bench/csv.mjs).
import { HttpipeError } from '../api.js';

const invalid = (message) => new HttpipeError(message, 'INVALID_RECORD');
const unsupported = (message) => new HttpipeError(message, 'UNSUPPORTED');

const LF = 10;
const CR = 13;
const QUOTE = 34;

function delimiterOf(options, what) {
  const d = options.delimiter === undefined ? ',' : options.delimiter;
  if (typeof d !== 'string' || d.length !== 1 || d === '"' || d === '\r' || d === '\n') {
    throw unsupported(`${what}: \`delimiter\` must be one character other than a quote, CR or LF`);
  }
  return d;
}

function optionsObject(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw unsupported(`${what}: options must be an object`);
  return options;
}

// ---- UTF-8 (only on the error path: where exactly the bytes went wrong) ------------------

/** Length of the complete-or-pending valid prefix of `b`: -1 when all of `b` is valid UTF-8
 * (a sequence cut at the end counts as valid), else the offset of the first bad sequence. */
function firstInvalidUtf8(b) {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i];
    if (c < 0x80) { i++; continue; }
    let need;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) { need = 2; if (c === 0xe0) lo = 0xa0; else if (c === 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { need = 3; if (c === 0xf0) lo = 0x90; else if (c === 0xf4) hi = 0x8f; }
    else return i;
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return -1; // cut at the end: the next chunk may complete it
      const x = b[i + k];
      if (x < (k === 1 ? lo : 0x80) || x > (k === 1 ? hi : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** The bytes at the end of `b` that start an unfinished UTF-8 sequence (what a streaming
 * TextDecoder holds back). */
function pendingTail(b) {
  if (!b) return new Uint8Array(0);
  const n = b.length;
  for (let k = 1; k <= Math.min(3, n); k++) {
    const c = b[n - k];
    if (c < 0x80) return new Uint8Array(0);
    if (c >= 0xc0) {
      const len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      return len > k ? b.subarray(n - k) : new Uint8Array(0);
    }
  }
  return new Uint8Array(0);
}

// ---- decoding ------------------------------------------------------------------------------

// Parser states (between characters, so also between chunks).
const ROW = 0; // at the start of a row: CR/LF here are blank lines, skipped
const FIELD = 1; // at the start of a field (after a delimiter)
const UNQUOTED = 2; // inside an unquoted field (its text so far in `field`)
const QUOTED = 3; // inside a quoted field
const QUOTE_SEEN = 4; // a quote inside a quoted field: closing, or the first of ""

/**
 * `csv.decode`: bytes in (split anywhere), rows out. Options: `header` (true: the first row
 * names the columns and rows are objects; false: rows are string arrays; string[]: these
 * column names, no header row in the input), `delimiter` (','). A leading BOM is dropped,
 * CRLF / LF / CR end rows, blank lines are skipped, values stay strings.
 * @returns {{ push(chunks: Uint8Array[]): (object|string[])[], end(): (object|string[])[] }}
 */
export function csvDecoder(options) {
  const o = optionsObject(options, 'csv.decode');
  const delimiter = delimiterOf(o, 'csv.decode');
  const header = o.header === undefined ? true : o.header;
  let columns = null;
  if (Array.isArray(header)) {
    columns = header.map(String);
  } else if (typeof header !== 'boolean') {
    throw unsupported('csv.decode: `header` must be true, false or an array of column names');
  }
  return new CsvDecoder(delimiter.charCodeAt(0), header === true, columns);
}

class CsvDecoder {
  constructor(delim, headerRow, columns) {
    this.delim = delim;
    this.headerRow = headerRow; // the next row names the columns
    this.columns = null;
    this.plainKeys = true; // no '__proto__' column: rows built by plain assignment
    if (columns) this.setColumns(columns);
    this.objects = headerRow || columns !== null;
    this.td = new TextDecoder('utf-8', { fatal: true });
    this.rows = 0; // rows completed (header included)
    this.state = ROW;
    this.field = '';
    this.fields = [];
    this.prev = null; // the previous chunk (its unfinished UTF-8 tail, for error positions)
    this.done = false;
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
    if (this.done) throw unsupported('csv.decode: push() after end()');
    const out = [];
    for (const chunk of chunks) {
      if (!(chunk instanceof Uint8Array)) {
        this.done = true;
        throw unsupported('csv.decode: input chunks must be Uint8Arrays');
      }
      let text;
      try {
        text = this.td.decode(chunk, { stream: true });
      } catch {
        this.badUtf8(chunk, out);
      }
      this.parse(text, out);
      this.prev = chunk;
    }
    return out;
  }

  end() {
    if (this.done) return [];
    this.done = true;
    const out = [];
    try {
      this.parse(this.td.decode(), out);
    } catch (e) {
      if (e instanceof HttpipeError) throw e;
      throw invalid(`csv.decode: row ${this.rows + 1}: invalid UTF-8 (a sequence cut short at the end of input)`);
    }
    switch (this.state) {
      case QUOTED:
        throw invalid(`csv.decode: row ${this.rows + 1}: unterminated quoted field at end of input`);
      case FIELD:
      case UNQUOTED:
      case QUOTE_SEEN:
        this.fields.push(this.field);
        this.field = '';
        this.endRow(this.fields, out);
        break;
      default:
    }
    this.state = ROW;
    return out;
  }

  // The chunk has invalid UTF-8: parse the good text before it (for the row number), throw.
  badUtf8(chunk, out) {
    this.done = true;
    const tail = pendingTail(this.prev);
    const joined = new Uint8Array(tail.length + chunk.length);
    joined.set(tail);
    joined.set(chunk, tail.length);
    const bad = firstInvalidUtf8(joined);
    if (bad > 0) this.parse(new TextDecoder('utf-8').decode(joined.subarray(0, bad)), out);
    throw invalid(`csv.decode: row ${this.rows + 1}: invalid UTF-8`);
  }

  endRow(fields, out) {
    const n = ++this.rows;
    this.fields = [];
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
    const row = {};
    if (this.plainKeys) {
      for (let k = 0; k < w; k++) row[cols[k]] = fields[k];
    } else {
      for (let k = 0; k < w; k++) {
        Object.defineProperty(row, cols[k], { value: fields[k], enumerable: true, writable: true, configurable: true });
      }
    }
    out.push(row);
  }

  fail(what) {
    this.done = true;
    throw invalid(`csv.decode: row ${this.rows + 1}: ${what}`);
  }

  /** Runs the state machine over `s` (any piece of the text), pushing completed rows. */
  parse(s, out) {
    const D = this.delim;
    const n = s.length;
    let state = this.state;
    let field = this.field;
    let fields = this.fields;
    let i = 0;
    while (i < n) {
      let c;
      switch (state) {
        case ROW:
          c = s.charCodeAt(i);
          if (c === LF || c === CR) { i++; continue; }
          state = FIELD;
        // falls through
        case FIELD: {
          c = s.charCodeAt(i);
          if (c === QUOTE) { i++; state = QUOTED; continue; }
          let j = i;
          while (j < n) {
            c = s.charCodeAt(j);
            if (c === D || c === LF || c === CR || c === QUOTE) break;
            j++;
          }
          if (j === n) { field = s.slice(i); i = n; state = UNQUOTED; continue; }
          if (c === QUOTE) { this.fields = fields; this.fail('a quote inside an unquoted field (quote the whole field and double the quote)'); }
          fields.push(s.slice(i, j));
          i = j + 1;
          if (c === D) { state = FIELD; continue; }
          this.endRow(fields, out);
          fields = this.fields;
          state = ROW;
          continue;
        }
        case UNQUOTED: {
          let j = i;
          while (j < n) {
            c = s.charCodeAt(j);
            if (c === D || c === LF || c === CR || c === QUOTE) break;
            j++;
          }
          if (j === n) { field += s.slice(i); i = n; continue; }
          if (c === QUOTE) { this.fields = fields; this.fail('a quote inside an unquoted field (quote the whole field and double the quote)'); }
          fields.push(field + s.slice(i, j));
          field = '';
          i = j + 1;
          if (c === D) { state = FIELD; continue; }
          this.endRow(fields, out);
          fields = this.fields;
          state = ROW;
          continue;
        }
        case QUOTED: {
          const j = s.indexOf('"', i);
          if (j < 0) { field += s.slice(i); i = n; continue; }
          field += s.slice(i, j);
          i = j + 1;
          state = QUOTE_SEEN;
          continue;
        }
        default: { // QUOTE_SEEN
          c = s.charCodeAt(i);
          i++;
          if (c === QUOTE) { field += '"'; state = QUOTED; continue; }
          if (c === D) { fields.push(field); field = ''; state = FIELD; continue; }
          if (c === LF || c === CR) {
            fields.push(field);
            field = '';
            this.endRow(fields, out);
            fields = this.fields;
            state = ROW;
            continue;
          }
          this.fields = fields;
          this.fail('text after the closing quote of a quoted field');
        }
      }
    }
    this.state = state;
    this.field = field;
    this.fields = fields;
  }
}

// ---- encoding ------------------------------------------------------------------------------

/**
 * `csv.encode`: rows in, bytes out (one Uint8Array per push). Options: `columns` (default:
 * the keys of the first record when records are objects), `header` (default: true when there
 * are columns; the column row is written once, first), `delimiter` (','), `eol` ('\r\n').
 * Records are objects (fields picked by column) or arrays. null/undefined → empty field;
 * numbers, bigints, booleans → String(); Date → toISOString(); other objects → JSON.
 * @returns {{ push(rows: (object|unknown[])[]): Uint8Array[], end(): Uint8Array[] }}
 */
export function csvEncoder(options) {
  const o = optionsObject(options, 'csv.encode');
  const delimiter = delimiterOf(o, 'csv.encode');
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
    this.needsQuotes = new RegExp(`[${esc}"\\r\\n]|^[ \\t]|[ \\t]$`);
  }

  push(records) {
    let text = '';
    for (const r of records) text += this.line(r);
    return [te.encode(text)];
  }

  end() {
    return [];
  }

  line(r) {
    let head = '';
    if (!this.started) {
      this.started = true;
      const isObject = r !== null && typeof r === 'object' && !Array.isArray(r);
      if (this.columns === null && isObject) this.columns = Object.keys(r);
      if (this.header === undefined) this.header = this.columns !== null;
      if (this.header) {
        if (this.columns === null) throw unsupported('csv.encode: `header: true` needs `columns` (records are arrays)');
        head = this.join(this.columns, this.rows + 1) + this.eol;
        this.rows++;
      }
    }
    const n = this.rows + 1;
    let fields;
    if (Array.isArray(r)) {
      if (this.columns !== null && r.length !== this.columns.length) {
        throw invalid(`csv.encode: row ${n} has ${r.length} field${r.length === 1 ? '' : 's'}, the columns are ${this.columns.length}`);
      }
      fields = r;
    } else if (r !== null && typeof r === 'object') {
      if (this.columns === null) throw invalid(`csv.encode: row ${n}: an object record needs \`columns\` (the first record was an array)`);
      fields = this.columns.map((c) => {
        const v = r[c];
        return typeof v === 'function' && !Object.hasOwn(r, c) ? undefined : v; // not an inherited method
      });
    } else {
      throw invalid(`csv.encode: row ${n}: a record must be an object or an array, not ${r === null ? 'null' : typeof r}`);
    }
    this.rows++;
    return head + this.join(fields, n) + this.eol;
  }

  join(fields, n) {
    if (fields.length === 1) {
      const v = this.value(fields[0], n);
      // A lone empty field would be a blank line, which readers skip.
      return v === '' ? '""' : v;
    }
    let s = '';
    for (let k = 0; k < fields.length; k++) {
      if (k > 0) s += this.d;
      s += this.value(fields[k], n);
    }
    return s;
  }

  value(v, n) {
    let s;
    switch (typeof v) {
      case 'string': s = v; break;
      case 'number': case 'bigint': case 'boolean': return String(v);
      case 'undefined': return '';
      case 'symbol': case 'function':
        throw invalid(`csv.encode: row ${n}: a ${typeof v} is not a CSV value`);
      default:
        if (v === null) return '';
        if (v instanceof Date) {
          if (Number.isNaN(v.getTime())) throw invalid(`csv.encode: row ${n}: an invalid Date`);
          return v.toISOString();
        }
        try {
          s = JSON.stringify(v);
        } catch (e) {
          throw invalid(`csv.encode: row ${n}: a value JSON.stringify can't write (${e.message})`);
        }
        if (s === undefined) return '';
    }
    return this.needsQuotes.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  }
}
