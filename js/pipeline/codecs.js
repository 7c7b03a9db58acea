// Framing steps between byte chunks and records: NDJSON and lines (csv.js: CSV). Sans-IO
// transformers (push(items) => out[], end() => out[]) wrapped by transformStep; bad input is
// INVALID_RECORD naming the line.
import { HttpipeError, init } from '../api.js';
import { defineStep, transformStep } from './core.js';
import { csvDecoder, csvEncoder } from './csv.js';

const encoder = new TextEncoder();

function invalid(msg, cause) { return new HttpipeError(msg, 'INVALID_RECORD', cause === undefined ? undefined : { cause }); }

/** Splits byte chunks (or strings) into lines; `onLine(text, number)` per complete line. */
function lineSplitter(what, onLine) {
  const td = new TextDecoder('utf-8', { fatal: true });
  let carry = '';
  let n = 0;
  const decode = (c, stream) => {
    if (typeof c === 'string') return c;
    if (!(c instanceof Uint8Array)) throw invalid(`${what}: records must be Uint8Array byte chunks or strings (got ${typeof c})`);
    try { return td.decode(c, { stream }); } catch (e) { throw invalid(`${what}: line ${n + 1} is not valid UTF-8`, e); }
  };
  const feed = (s) => {
    let start = 0;
    let nl;
    while ((nl = s.indexOf('\n', start)) !== -1) {
      onLine(s.charCodeAt(nl - 1) === 13 && nl > start ? s.slice(start, nl - 1) : s.slice(start, nl), ++n);
      start = nl + 1;
    }
    carry = start === 0 ? s : s.slice(start);
  };
  return {
    push(chunks) { for (const c of chunks) feed(carry + decode(c, true)); },
    end() {
      let rest;
      try { rest = td.decode(); } catch (e) { throw invalid(`${what}: the input ends inside a UTF-8 sequence`, e); }
      const s = carry + rest;
      carry = '';
      if (s.length) onLine(s.charCodeAt(s.length - 1) === 13 ? s.slice(0, -1) : s, ++n);
    },
  };
}

/** Text lines (without "\n" / "\r\n"); the last line may lack its newline. */
export function lines({ skipEmpty = false } = {}) {
  return transformStep('lines', () => {
    let out = [];
    const split = lineSplitter('lines', (l) => { if (!skipEmpty || l.length) out.push(l); });
    return {
      push(chunks) { split.push(chunks); const o = out; out = []; return o; },
      end() { split.end(); const o = out; out = []; return o; },
    };
  });
}

function decodeNdjson({ reviver } = {}) {
  return transformStep('ndjson.decode', () => {
    let out = [];
    const split = lineSplitter('ndjson.decode', (l, n) => {
      if (l.length === 0 || l.trim().length === 0) return;
      try { out.push(JSON.parse(l, reviver)); } catch (e) { throw invalid(`ndjson.decode: line ${n}: ${e.message}`, e); }
    });
    return {
      push(chunks) { split.push(chunks); const o = out; out = []; return o; },
      end() { split.end(); const o = out; out = []; return o; },
    };
  });
}

function encodeNdjson({ replacer } = {}) {
  return transformStep('ndjson.encode', () => {
    let n = 0;
    return {
      push(records) {
        let s = '';
        for (const r of records) {
          n++;
          let j;
          try { j = JSON.stringify(r, replacer); } catch (e) { throw invalid(`ndjson.encode: record ${n}: ${String(e.message).split('\n')[0]}`, e); } // one line: V8's circular-structure message has three
          if (j === undefined) throw invalid(`ndjson.encode: record ${n} (${typeof r}) has no JSON form`);
          s += j;
          s += '\n';
        }
        return s.length ? [encoder.encode(s)] : [];
      },
      end() { return []; },
    };
  });
}

/** NDJSON (one JSON value per line): `decode()` bytes → values, `encode()` values → bytes. */
export const ndjson = Object.freeze({ decode: decodeNdjson, encode: encodeNdjson });

// csv.decode splits in the wasm module (js/pipeline/csv.js): the module is loaded first, so a
// browser pipeline needs no explicit `await init()`.
function decodeCsv(options) {
  const inner = transformStep('csv.decode', () => csvDecoder(options));
  return defineStep('csv.decode', async function* run(input, ctx) {
    await init();
    yield* inner.run(input, ctx);
  });
}

/** CSV (RFC 4180): `decode(options)` bytes → rows, `encode(options)` rows → bytes (js/pipeline/csv.js). */
export const csv = Object.freeze({
  decode: decodeCsv,
  encode: (options) => transformStep('csv.encode', () => csvEncoder(options)),
});
