// The JS CSV decoder that bench/csv.mjs measures the shipped one (csv-core in the wasm module,
// js/pipeline/csv.js) against: a state machine over the text of a fatal TextDecoder, with a
// field-level fast path (cached indexOf of LF, CR, quote and delimiter). It passed the whole of
// tests/js/pipeline-csv.test.mjs when it was the shipped decoder (branch pipeline-csv, commit
// "pipeline csv.decode: a failed decoder rethrows its error"); kept here as the baseline.
import { HttpipeError } from '../pkg/lib/api.js';

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

// ---- UTF-8 ----------------------------------------------------------------------------------

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

/** How many bytes at the end of `b` (from `from` on) start a UTF-8 sequence the chunk cut. */
function pendingTailLength(b, from) {
  const n = b.length;
  for (let k = 1; k <= 3 && n - k >= from; k++) {
    const c = b[n - k];
    if (c < 0x80) return 0;
    if (c >= 0xc0) return sequenceLength(c) > k ? k : 0;
  }
  return 0;
}

/** The length of the UTF-8 sequence a lead byte starts (4 for bytes no sequence starts with:
 * the decoder rejects them once they are complete). */
const sequenceLength = (c) => (c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2);

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
    this.delimStr = String.fromCharCode(delim);
    this.headerRow = headerRow; // the next row names the columns
    this.columns = null;
    this.plainKeys = true; // no '__proto__' column: rows built by plain assignment
    if (columns) this.setColumns(columns);
    this.objects = headerRow || columns !== null;
    // UTF-8: chunks are cut at sequence boundaries here (the cut sequence is carried), so
    // both decoders only ever see whole sequences; the BOM is dropped by `text`. Node 20
    // decodes ASCII ~4x faster without `stream` but other text ~1.5x faster with it: the
    // last text picks.
    this.tdWhole = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    this.tdStream = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    this.ascii = true;
    this.carry = null; // the start of a UTF-8 sequence cut by the end of the last chunk
    this.started = false; // text seen (a BOM can only come first)
    this.rows = 0; // rows completed (header included)
    this.state = ROW;
    this.field = '';
    this.fields = [];
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
        this.bytes(chunk, out);
      }
    } catch (e) {
      this.failure = e;
      throw e;
    }
    return out;
  }

  end() {
    this.check('end');
    this.ended = true;
    const out = [];
    try {
      if (this.carry !== null) {
        const what = firstInvalidUtf8(this.carry) < 0 ? 'invalid UTF-8 (a sequence cut short at the end of input)' : 'invalid UTF-8';
        throw invalid(`csv.decode: row ${this.rows + 1}: ${what}`);
      }
      this.tdStream.decode(); // nothing is pending (whole sequences only)
      switch (this.state) {
        case QUOTED:
          throw invalid(`csv.decode: row ${this.rows + 1}: unterminated quoted field at end of input`);
        case FIELD:
        case UNQUOTED:
        case QUOTE_SEEN:
          this.fields.push(this.field);
          this.endRow(this.fields, out);
          break;
        default:
      }
    } catch (e) {
      this.failure = e;
      throw e;
    }
    return out;
  }

  /** A failed decoder keeps failing with its error; an ended one takes nothing more. */
  check(what) {
    if (this.failure !== null) throw this.failure;
    if (this.ended) throw unsupported(`csv.decode: ${what}() after end()`);
  }

  /** Decodes a chunk: whole UTF-8 sequences now, the one the chunk's end cuts later. */
  bytes(chunk, out) {
    let from = 0;
    if (this.carry !== null) {
      const c = this.carry;
      const need = sequenceLength(c[0]) - c.length;
      const take = Math.min(need, chunk.length);
      const joined = new Uint8Array(c.length + take);
      joined.set(c);
      joined.set(chunk.subarray(0, take), c.length);
      if (take < need) { this.carry = joined; return; }
      this.carry = null;
      this.decode(joined, out);
      from = take;
    }
    const tail = pendingTailLength(chunk, from);
    const end = chunk.length - tail;
    if (end > from) this.decode(from === 0 && tail === 0 ? chunk : chunk.subarray(from, end), out);
    if (tail > 0) this.carry = chunk.slice(end);
  }

  /** Decodes and parses `b` (whole UTF-8 sequences). */
  decode(b, out) {
    let s;
    try {
      s = this.ascii ? this.tdWhole.decode(b) : this.tdStream.decode(b, { stream: true });
    } catch {
      // Parse the good text before the bad bytes (for the row number), then fail.
      const bad = firstInvalidUtf8(b);
      if (bad > 0) this.text(new TextDecoder('utf-8', { ignoreBOM: true }).decode(b.subarray(0, bad)), out);
      throw invalid(`csv.decode: row ${this.rows + 1}: invalid UTF-8`);
    }
    this.ascii = s.length === b.length;
    this.text(s, out);
  }

  text(s, out) {
    if (!this.started) {
      if (s.length === 0) return;
      this.started = true;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    this.parse(s, out);
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
    let row;
    if (this.plainKeys) {
      row = rowObject(cols, fields, w);
    } else {
      row = {};
      for (let k = 0; k < w; k++) {
        Object.defineProperty(row, cols[k], { value: fields[k], enumerable: true, writable: true, configurable: true });
      }
    }
    out.push(row);
  }

  fail(what) {
    throw invalid(`csv.decode: row ${this.rows + 1}: ${what}`);
  }

  /**
   * Parses `s` (any piece of the text), pushing completed rows. Fast path, field by field:
   * the next LF, CR, quote and delimiter positions are cached (each found once, with
   * indexOf), so an unquoted field is one slice and a quoted one an indexOf per quote; what
   * the text ends inside (a row cut by the chunk) goes through the state machine (`step`).
   */
  parse(s, out) {
    const n = s.length;
    const D = this.delimStr;
    const Dc = this.delim;
    let i = 0;
    if (this.state !== ROW) i = this.step(s, 0, out); // the row the last text ended in
    let nlf = -1; // the next LF / CR / quote / delimiter at or after i (n: none); -1: not known
    let ncr = -1;
    let nq = -1;
    let nd = -1;
    rows: while (i < n) {
      let c = s.charCodeAt(i);
      if (c === LF || c === CR) { i++; continue; } // a blank line (or the LF of a CRLF)
      const fields = [];
      for (;;) { // at the start of a field
        c = s.charCodeAt(i);
        if (c === QUOTE) {
          let from = i + 1;
          let value = '';
          let j = s.indexOf('"', from);
          while (j >= 0 && j + 1 < n && s.charCodeAt(j + 1) === QUOTE) {
            value += s.slice(from, j + 1);
            from = j + 2;
            j = s.indexOf('"', from);
          }
          if (j < 0 || j + 1 >= n) break; // the field goes on in the next text
          c = s.charCodeAt(j + 1);
          fields.push(value + s.slice(from, j));
          i = j + 2;
          if (c === Dc) continue;
          if (c === LF || c === CR) { this.endRow(fields, out); continue rows; }
          this.fields = fields;
          this.fail('text after the closing quote of a quoted field');
        }
        if (nd < i) { nd = s.indexOf(D, i); if (nd < 0) nd = n; }
        if (nlf < i) { nlf = s.indexOf('\n', i); if (nlf < 0) nlf = n; }
        if (ncr < i) { ncr = s.indexOf('\r', i); if (ncr < 0) ncr = n; }
        if (nq < i) { nq = s.indexOf('"', i); if (nq < 0) nq = n; }
        let e = nd < nlf ? nd : nlf;
        if (ncr < e) e = ncr;
        if (nq < e) {
          this.fields = fields;
          this.fail('a quote inside an unquoted field (quote the whole field and double the quote)');
        }
        if (e === n) break; // the field goes on in the next text
        fields.push(s.slice(i, e));
        i = e + 1;
        if (e === nd) continue;
        this.endRow(fields, out);
        continue rows;
      }
      // The text ends inside this row: the state machine keeps its state for the next text.
      this.fields = fields;
      this.state = FIELD;
      i = this.step(s, i, out);
    }
  }

  /** The state machine from `s[i]` until a row ends (returns the index after it) or `s` does. */
  step(s, i, out) {
    const D = this.delim;
    const n = s.length;
    let state = this.state;
    let field = this.field;
    const fields = this.fields;
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
          if (c === QUOTE) this.fail('a quote inside an unquoted field (quote the whole field and double the quote)');
          fields.push(s.slice(i, j));
          i = j + 1;
          if (c === D) { state = FIELD; continue; }
          return this.rowDone(fields, out, i);
        }
        case UNQUOTED: {
          let j = i;
          while (j < n) {
            c = s.charCodeAt(j);
            if (c === D || c === LF || c === CR || c === QUOTE) break;
            j++;
          }
          if (j === n) { field += s.slice(i); i = n; continue; }
          if (c === QUOTE) this.fail('a quote inside an unquoted field (quote the whole field and double the quote)');
          fields.push(field + s.slice(i, j));
          field = '';
          i = j + 1;
          if (c === D) { state = FIELD; continue; }
          return this.rowDone(fields, out, i);
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
            return this.rowDone(fields, out, i);
          }
          this.fail('text after the closing quote of a quoted field');
        }
      }
    }
    this.state = state;
    this.field = field;
    return i;
  }

  rowDone(fields, out, i) {
    this.state = ROW;
    this.field = '';
    this.fields = [];
    this.endRow(fields, out);
    return i;
  }
}
