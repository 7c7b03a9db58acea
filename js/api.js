// httpipe public API (ESM). The contract is docs/js-api.md; the wasm core is src/wasm/.
// This file is shared by the entries index.js (browsers, Node, Deno) and workerd.js
// (Cloudflare Workers); each entry provides the way the .wasm module is loaded.
import * as wasm from './httpipe_wasm.js';
import { wasmState, xwingState } from './loader.js';
import { chunksOf } from './streams.js';

// Every HttpipeError code. The transfer codes mirror the Rust core's ErrorCode
// (src/client/error.rs); the rest exist only in JavaScript: the package's own
// WASM_LOAD_FAILED (init() could not fetch, read or instantiate the .wasm module) and the
// pipeline's (js/pipeline/: bad records, a step's callback failed, a sink gave up with no
// dead letter). Documented in docs/js-api.md and index.d.ts (HttpipeErrorCode).
const TRANSFER_CODES = ['UNAUTHORIZED', 'FORBIDDEN', 'CONNECT_TIMEOUT', 'PEER_DISCONNECTED', 'TRUNCATED',
  'DECRYPT_FAILED', 'WRONG_KEY', 'RELAY_ERROR', 'ABORTED', 'UNSUPPORTED', 'NETWORK', 'UNCONFIRMED',
  'WRONG_CODE', 'RELAY_BUSY'];
const PACKAGE_CODES = ['WASM_LOAD_FAILED'];
const PIPELINE_CODES = ['INVALID_RECORD', 'STEP_FAILED', 'SINK_FAILED'];
const CODES = new Set([...TRANSFER_CODES, ...PACKAGE_CODES, ...PIPELINE_CODES]);

const WASM_ADVICE = 'serve httpipe_wasm_bg.wasm next to the package\'s index.js (a bundler must '
  + 'emit it as an asset: see "Bundlers" in the httpipe README), or load it yourself and pass it '
  + 'to init(url | bytes | WebAssembly.Module | Response)';
// The same for the post-quantum module (its failures name it, not the main module).
const XWING_ADVICE = 'serve httpipe_xwing_bg.wasm next to the package\'s index.js (a bundler must '
  + 'emit it as an asset: see "Bundlers" in the httpipe README), or load it yourself and pass it '
  + 'to loadPostQuantum(url | bytes | WebAssembly.Module | Response)';

// What to do, per code: every HttpipeError's message ends with it ("…; <advice>") unless it
// says it already. The table in docs/errors.md is this one (tests/js/error-advice.test.mjs).
// The other codes' messages are specific already (UNSUPPORTED: which option or input; the
// pipeline's: which step, record or sink) or need nothing (ABORTED: the caller's own doing).
const ADVICE = {
  UNAUTHORIZED: 'pass a valid access token as `token`',
  FORBIDDEN: 'use a token issued for this path and this side (read or write)',
  CONNECT_TIMEOUT: 'start the other side on the same relay and path (or code), or raise `timeout` (seconds)',
  PEER_DISCONNECTED: 'the other side went away before the end; run both sides again',
  TRUNCATED: 'the data is incomplete: discard it, and have the sender send again',
  DECRYPT_FAILED: 'if the sender did not encrypt, receive without `passphrase`/`identities`; '
    + 'otherwise the stream was damaged or changed on the way: send again',
  WRONG_KEY: 'check the passphrase or identities',
  RELAY_ERROR: 'check `relay` and `path`, and the relay\'s log',
  NETWORK: 'check that a relay runs at that URL (scheme, host and port) and can be reached from here',
  UNCONFIRMED: 'the receiver did not confirm it got the data: ask the receiving side, raise '
    + '`receiptTimeout`, or send again',
  WRONG_CODE: 'check the code with the other side; a code works once: the sender makes a new one',
  RELAY_BUSY: 'try again in a moment; if it persists, the relay\'s operator can raise its per-address limits',
  WASM_LOAD_FAILED: WASM_ADVICE,
};

/** The one error class of the package: `code` is stable, `message` says what to do. */
export class HttpipeError extends Error {
  constructor(message, code, options) {
    const known = CODES.has(code) ? code : 'RELAY_ERROR';
    const advice = ADVICE[known];
    const text = String(message);
    super(advice && !text.includes(advice) ? `${text}; ${advice}` : text, options);
    this.name = 'HttpipeError';
    this.code = known;
  }
}

function wrapError(e) {
  if (e instanceof HttpipeError) return e;
  if (e && e.name === 'HttpipeError' && CODES.has(e.code)) {
    const w = new HttpipeError(e.message, e.code, { cause: e.cause });
    if (e.peerCode !== undefined) w.peerCode = e.peerCode;
    return w;
  }
  if (e && e.name === 'AbortError') return new HttpipeError('aborted by the AbortSignal', 'ABORTED', { cause: e });
  return new HttpipeError(`unexpected failure: ${e && e.message ? e.message : String(e)}`, 'UNSUPPORTED', { cause: e });
}

// ---- initialisation -------------------------------------------------------------------
// The entry says where the .wasm file is and how to read a local one (loader.js): Node and
// Deno read file: URLs from disk, everything else fetches.
let ready = null;
let readyDone = false; // `ready` resolved
let errorClassSet = false;

function markReady() {
  if (!errorClassSet) {
    wasm.setErrorClass(HttpipeError);
    wasm.setRuntimeCrypto(runtimeCrypto());
    wasm.setFetchDispatcher(nodeDispatcher());
    errorClassSet = true;
  }
  wasmState.initialised = true;
}

// ---- Node's fetch without its 300-s cuts (src/wasm/http.rs, setFetchDispatcher) ----------
// Node's fetch (undici) fails a request as a network failure when its response head took
// 300 s (headersTimeout) or its body said nothing for 300 s (bodyTimeout): a consumer whose
// sender's first byte comes later, a short code's sender waiting for its receiver. Every wait
// of the SDK has its own bound, so in Node each request goes to Node's global dispatcher —
// whatever the application set there (a proxy) — with those two off.
const UNDICI_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
function nodeDispatcher() {
  const proc = globalThis.process;
  if (typeof globalThis.Deno !== 'undefined' || proc?.release?.name !== 'node'
    || globalThis.navigator?.userAgent === 'Cloudflare-Workers') return null;
  return {
    dispatch(opts, handler) {
      return globalThis[UNDICI_DISPATCHER].dispatch({ ...opts, headersTimeout: 0, bodyTimeout: 0 }, handler);
    },
  };
}

// ---- the runtime's own ChaCha20-Poly1305 and scrypt (src/crypto/runtime.rs) -------------
// Node, Deno and workerd have both in node:crypto (OpenSSL / BoringSSL): payload chunks are
// sealed and opened there, ~4x faster than the portable cipher in wasm, and a passphrase's
// scrypt runs there, its 256 MiB freed after (a wasm memory never shrinks). Detected once, by
// feature (known-answer tests), never by user agent; the framing, nonces and every check stay
// in the wasm core, and work the runtime fails on is done in wasm (same bytes).
let detected;
function runtimeCrypto() {
  if (detected !== undefined) return detected;
  detected = null;
  let c = null;
  try { c = globalThis.process?.getBuiltinModule?.('node:crypto') ?? null; } catch { c = null; }
  if (!c || typeof c.createCipheriv !== 'function' || typeof c.createSecretKey !== 'function'
    || typeof c.scryptSync !== 'function') return null;
  let B = null;
  try { B = globalThis.process.getBuiltinModule('node:buffer').Buffer; } catch { B = null; }
  const provider = {
    name: 'node:crypto',
    key: (bytes) => c.createSecretKey(bytes),
    seal(key, nonce, buf) {
      const e = c.createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
      const out = e.update(buf);
      e.final();
      const tag = e.getAuthTag();
      buf.set(out); // last: nothing throws after `buf` changed
      return tag;
    },
    // a JavaScript chunk sealed where it is: the ciphertext, its tag written into `tag`
    sealDetached(key, nonce, input, tag) {
      const e = c.createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
      const out = e.update(input);
      e.final();
      tag.set(e.getAuthTag());
      return out;
    },
    // a chunk's plaintext in a new array, returned only once the tag verified (throws otherwise)
    openDetached(key, nonce, ct, tag) {
      const d = c.createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
      d.setAuthTag(tag);
      const out = d.update(ct);
      d.final(); // throws on a wrong tag: `out` is dropped, the wasm cipher gives the verdict
      return new Uint8Array(out.buffer, out.byteOffset, out.length); // a plain Uint8Array
    },
    // the array the sealed chunks are gathered into: not zero-filled first (all of it is
    // written), a plain Uint8Array of its own (never a view of Buffer's shared pool)
    alloc: B ? (n) => (n >= 4096 ? new Uint8Array(B.allocUnsafeSlow(n).buffer, 0, n) : new Uint8Array(n)) : undefined,
    open(key, nonce, buf, tag) {
      const d = c.createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
      d.setAuthTag(tag);
      const out = d.update(buf);
      d.final(); // throws on a wrong tag: the wasm cipher then gives the verdict
      buf.set(out);
    },
    // age's passphrase stanza (r = 8, p = 1): the 128·r·N bytes are the runtime's to free
    scrypt(passphrase, salt, log2N) {
      const N = 2 ** log2N;
      return new Uint8Array(c.scryptSync(passphrase, salt, 32, { N, r: 8, p: 1, maxmem: 128 * 8 * N + (32 << 20) }));
    },
  };
  try {
    // RFC 8439 §2.8.2: the runtime must compute ChaCha20-Poly1305, not just list it
    const hex = (h) => Uint8Array.from(h.match(/../g), (b) => parseInt(b, 16));
    const key = c.createSecretKey(hex('808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f'));
    const e = c.createCipheriv('chacha20-poly1305', key, hex('070000004041424344454647'), { authTagLength: 16 });
    e.setAAD(hex('50515253c0c1c2c3c4c5c6c7'));
    e.update(new TextEncoder().encode("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."));
    e.final();
    const tag = Array.from(e.getAuthTag(), (b) => b.toString(16).padStart(2, '0')).join('');
    if (tag !== '1ae10b594f09e26a7e902ecbd0600691') return null;
    // RFC 7914 §12's first vector (N = 16, r = 1, p = 1), first 16 bytes: microseconds, where
    // the third (N = 16384, r = 8) took 30 ms of every start-up in Node, Deno and workerd
    const s = c.scryptSync(new Uint8Array(0), new Uint8Array(0), 64, { N: 16, r: 1, p: 1 });
    const sHex = Array.from(s.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
    if (sHex !== '77d6576238657b203b19ca42c18a0497') return null;
  } catch { return null; }
  detected = provider;
  return provider;
}

// ---- WebCrypto's ChaCha20-Poly1305 (src/wasm/webcrypto.rs) -------------------------------
// Chromium (150 and later) and Deno have ChaCha20-Poly1305 in crypto.subtle (in a page only
// in a secure context: https, localhost). It is asynchronous: the wasm core hands the chunks
// out and takes them back sealed / opened, several per await (src/wasm/webcrypto.rs), with the
// key imported once per stream, non-extractable. Detected once at init by a known-answer test
// (RFC 8439 §2.8.2, and a wrong tag must be refused), never by user agent; where node:crypto
// is there too (Deno) node:crypto stays (it measured faster: bench/webcrypto.mjs).
let webDetected;
async function webCrypto() {
  if (webDetected !== undefined) return webDetected;
  webDetected = null;
  const s = globalThis.crypto?.subtle;
  if (!s || typeof s.importKey !== 'function' || typeof s.encrypt !== 'function') return null;
  const name = 'ChaCha20-Poly1305';
  const provider = {
    name: 'webcrypto',
    importKey: (bytes) => s.importKey('raw-secret', bytes, { name }, false, ['encrypt', 'decrypt']),
    // `data` is a view of the wasm memory: WebCrypto copies it before returning the promise
    seal: (key, iv, data) => s.encrypt({ name, iv }, key, data).catch(() => null),
    open: (key, iv, data) => s.decrypt({ name, iv }, key, data).catch(() => null),
  };
  try {
    const hex = (h) => Uint8Array.from(h.match(/../g), (b) => parseInt(b, 16));
    const toHex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
    const key = await provider.importKey(hex('808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f'));
    const iv = hex('070000004041424344454647');
    const additionalData = hex('50515253c0c1c2c3c4c5c6c7');
    const text = new TextEncoder().encode("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.");
    const sealed = new Uint8Array(await s.encrypt({ name, iv, additionalData }, key, text));
    if (sealed.length !== text.length + 16 || toHex(sealed.subarray(0, 16)) !== 'd31a8d34648e60db7b86afbc53ef7ec2'
      || toHex(sealed.subarray(text.length)) !== '1ae10b594f09e26a7e902ecbd0600691') return null;
    const opened = await s.decrypt({ name, iv, additionalData }, key, sealed);
    if (toHex(opened) !== toHex(text)) return null;
    sealed[5] ^= 1;
    if (await s.decrypt({ name, iv, additionalData }, key, sealed).then(() => true, () => false)) return null;
  } catch { return null; }
  webDetected = provider;
  return provider;
}

let backendChoice = 'auto';
let webSetUp = false;
// The WebCrypto provider to use on 'auto': only where node:crypto is not there.
const webPreferred = () => (runtimeCrypto() ? null : webDetected ?? null);

async function setUpWebCrypto() {
  if (!runtimeCrypto()) {
    await webCrypto();
    if (backendChoice === 'auto') wasm.setWebCrypto(webPreferred());
  }
  webSetUp = true;
}

/**
 * Which cipher seals and opens the payload of streams opened from now on: `'webcrypto'`
 * (WebCrypto's ChaCha20-Poly1305: Chromium 150+), `'node:crypto'` (the runtime's own: Node,
 * Deno, workerd) or `'wasm'`, as found at init. `cryptoBackend('wasm')` forces the wasm cipher
 * (benchmarks, tests), `cryptoBackend('auto')` goes back to the detected one. The bytes are the
 * same either way.
 */
export function cryptoBackend(choice) {
  requireInit('cryptoBackend');
  if (choice === 'wasm') {
    wasm.setRuntimeCrypto(null);
    wasm.setWebCrypto(null);
  } else if (choice === 'auto') {
    wasm.setRuntimeCrypto(runtimeCrypto());
    wasm.setWebCrypto(webPreferred());
  } else if (choice !== undefined) throw new HttpipeError(`cryptoBackend: expected 'wasm' or 'auto', got ${String(choice)}`, 'UNSUPPORTED');
  if (choice !== undefined) backendChoice = choice;
  return wasm.cryptoBackendName();
}

function errorText(e) {
  if (!e) return String(e);
  let text = e.message ? `${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message}` : String(e);
  // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ...) is its cause.
  if (e.cause && e.cause.message && !text.includes(e.cause.message)) text += ` (${e.cause.message})`;
  return text;
}

// `xwing`: the post-quantum module's failure, with its own advice (not the main module's).
function wasmLoadFailed(where, e, hint = '', xwing = false) {
  // Deno without --allow-read may not read the package's own .wasm file (said once: newer
  // Denos' own message names the flag).
  const denied = e && (e.name === 'NotCapable' || e.name === 'PermissionDenied') && !/--allow-read/.test(errorText(e));
  const deno = denied ? ' (Deno: run with --allow-read, which lets the package read its .wasm file)' : '';
  const text = `could not load ${xwing ? 'the post-quantum module' : 'the wasm module'} from ${where}: ${errorText(e)}${hint}${deno}`;
  const error = new HttpipeError(text, 'WASM_LOAD_FAILED', { cause: e });
  if (xwing) error.message = `${text}; ${XWING_ADVICE}`;
  return error;
}

const isUrlLike = (x) => typeof x === 'string' || (typeof URL === 'function' && x instanceof URL)
  || (typeof Request === 'function' && x instanceof Request);
const isResponse = (x) => typeof Response === 'function' && x instanceof Response;

// `to`: the function it was given to.
function describe(x, to = 'init()') {
  if (typeof x === 'string') return x;
  if (typeof URL === 'function' && x instanceof URL) return x.href;
  if (typeof Request === 'function' && x instanceof Request) return x.url;
  if (isResponse(x)) return x.url || `the Response given to ${to}`;
  if (typeof WebAssembly === 'object' && x instanceof WebAssembly.Module) return `the WebAssembly.Module given to ${to}`;
  if (x instanceof ArrayBuffer || ArrayBuffer.isView(x)) return `the ${x.byteLength} bytes given to ${to}`;
  return `${describeValue(x)} given to ${to}`;
}

// What init() and loadPostQuantum() take (undefined: the entry's default location).
const isModuleInput = (x) => x === undefined || isUrlLike(x) || isResponse(x) || x instanceof ArrayBuffer
  || ArrayBuffer.isView(x) || (typeof WebAssembly === 'object' && x instanceof WebAssembly.Module);

const describeValue = (x) => (x !== null && typeof x === 'object'
  ? Object.prototype.toString.call(x) : `${x === null ? '' : `the ${typeof x} `}${String(x).slice(0, 40)}`);

// Fetches or reads `input` (else the entry's default location, `fallback`) as far as
// `instantiate` needs: a URL becomes a Response (or the entry's `read` gives the bytes: Node and
// Deno read file: URLs, httpipe/inline unpacks its own), a Response without
// Content-Type application/wasm its bytes. One way for both modules (the main one, `xwing`:
// the post-quantum one), and one kind of failure: WASM_LOAD_FAILED naming what it tried.
async function loadModule(input, fallback, instantiate, xwing = false) {
  const to = xwing ? 'loadPostQuantum()' : 'init()';
  let where = input !== undefined ? `what was given to ${to}` : fallback !== undefined ? describe(fallback, to) : 'httpipe_wasm_bg.wasm';
  let response = null;
  let source;
  try { source = await input; } catch (e) { throw wasmLoadFailed(where, e, '', xwing); }
  if (source === undefined) source = fallback;
  if (!isModuleInput(source)) {
    throw new HttpipeError(`${to} takes a URL, a Request, a Response, bytes or a WebAssembly.Module (or a promise of one), not ${describeValue(source)}`, 'UNSUPPORTED');
  }
  try {
    if (source !== undefined) where = describe(source, to);
    if (isUrlLike(source)) source = await wasmState.read(source);
    if (isUrlLike(source)) {
      source = response = await fetch(source);
      if (response.url) where = response.url;
    } else if (isResponse(source)) response = source;
    if (response && !response.ok) {
      throw new Error(`HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
    }
    // Compiling while downloading needs Content-Type application/wasm; otherwise take the
    // bytes (what wasm-bindgen's loader would do after a warning).
    if (response && !String(response.headers.get('content-type')).includes('application/wasm')) {
      source = await response.arrayBuffer();
    }
    await instantiate(source);
  } catch (e) {
    // A dev server's answer for a file that is not there is often its index.html, with 200.
    const type = response && response.ok && response.headers.get('content-type');
    const hint = type && !type.includes('application/wasm')
      ? ` (the server answered with Content-Type ${type}${type.includes('html') ? ': a web page, not the .wasm file' : ''})`
      : '';
    throw wasmLoadFailed(where, e, hint, xwing);
  }
}

const load = (input) => loadModule(input, wasmState.where, (source) => wasm.default({ module_or_path: source }));

/**
 * Loads the wasm module. Optional: every async function calls it on first use. `input` may be
 * a URL, a Response, bytes or a WebAssembly.Module (e.g. for a strict CSP or a custom path).
 * Failures reject with an HttpipeError `WASM_LOAD_FAILED` naming what it tried; a later call
 * tries again.
 */
export function init(input) {
  if (!ready) {
    if (wasmState.initialised) {
      markReady();
      ready = setUpWebCrypto();
    } else {
      ready = load(input).then(markReady).then(setUpWebCrypto);
      ready.catch(() => { ready = null; });
    }
    ready.then(() => { readyDone = true; }, () => {});
  }
  return ready;
}

// ---- the post-quantum module (src/wasm/xwing.rs) ---------------------------------------
// age1pq1 recipients and AGE-SECRET-KEY-PQ-1 identities need the X-Wing KEM (ML-KEM-768 +
// X25519), a module of its own: httpipe_xwing_bg.wasm, ~15 KB gzipped, that a page without
// such keys never loads (issue #27). Every function that takes keys loads it first when one of
// them is post-quantum; where the entry can (Node, Deno, workerd) synchronously.
const POST_QUANTUM_KEY = /age1pq1|age-secret-key-pq-1/i;
let xwingLoaded = false;
let xwingLoading = null;

function hasPostQuantumKey(options) {
  const some = (keys) => Array.isArray(keys) && keys.some((k) => typeof k === 'string' && POST_QUANTUM_KEY.test(k));
  return options != null && (some(options.recipients) || some(options.identities));
}

function registerXWing(source) {
  wasm.setXWingModule(source instanceof WebAssembly.Module ? source : new WebAssembly.Module(source));
  xwingLoaded = true;
}

// Loads it now where the entry can; false where it can't (browsers fetch it).
function xwingNow() {
  if (!xwingLoaded) {
    try {
      const source = xwingState.now();
      if (source) registerXWing(source);
    } catch (e) { throw wasmLoadFailed(describe(xwingState.where), e, '', true); }
  }
  return xwingLoaded;
}

// The post-quantum module from `input`, else from where the entry says it is.
const compileXWing = (input) => loadModule(input, xwingState.where, async (source) => {
  if (!(source instanceof WebAssembly.Module)) {
    source = await (isResponse(source) ? WebAssembly.compileStreaming(source) : WebAssembly.compile(source));
  }
  registerXWing(source);
}, true);

/**
 * Loads the post-quantum module (httpipe_xwing_bg.wasm). Optional: every function that gets
 * an age1pq1 recipient or AGE-SECRET-KEY-PQ-1 identity loads it first; in a browser,
 * `identityToRecipient()` of a post-quantum identity (synchronous) needs it loaded before.
 * `input` like init()'s (a URL, a Response, bytes or a WebAssembly.Module) for a custom path.
 */
export async function loadPostQuantum(input) {
  try {
    await init();
    if (xwingLoaded) return;
    // a location of the caller's own: loaded on its own, not joined to a default load in flight
    if (input !== undefined) { await compileXWing(input); return; }
    if (xwingNow()) return;
    if (!xwingLoading) {
      xwingLoading = compileXWing();
      xwingLoading.catch(() => { xwingLoading = null; });
    }
    // the default location failed, but the caller's own loaded meanwhile: loaded all the same
    await xwingLoading.catch((e) => { if (!xwingLoaded) throw e; });
  } catch (e) { throw wrapError(e); }
}

// init(), and the post-quantum module when `options` hold a post-quantum key. While one of them
// loads, ABORTED as soon as `options.signal` aborts (the load goes on for later calls); once
// they are there, the driver answers the signal, as it does during the transfer.
function initFor(options) {
  const needsXWing = hasPostQuantumKey(options);
  const loading = init().then(() => (needsXWing ? loadPostQuantum() : undefined));
  const signal = options?.signal;
  // not an AbortSignal: the options' check says what's wrong
  if ((readyDone && (!needsXWing || xwingLoaded)) || typeof signal?.addEventListener !== 'function') return loading;
  loading.catch(() => {});
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new HttpipeError('aborted by the AbortSignal', 'ABORTED', { cause: signal.reason }));
    if (signal.aborted) { onAbort(); return; }
    signal.addEventListener('abort', onAbort, { once: true });
    loading.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function requireInit(what) {
  if (wasmState.initialised) { markReady(); return; }
  if (wasmState.syncFailure) throw wasmLoadFailed(describe(wasmState.where), wasmState.syncFailure);
  throw new HttpipeError(`${what} needs the wasm module: call \`await init()\` first`, 'UNSUPPORTED');
}

// ---- sources ----------------------------------------------------------------------------
const enc = new TextEncoder();

function isAsyncIterable(x) { return x != null && typeof x[Symbol.asyncIterator] === 'function'; }
function isIterable(x) { return x != null && typeof x !== 'string' && typeof x[Symbol.iterator] === 'function'; }

function toBytes(chunk) {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === 'string') return enc.encode(chunk);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new HttpipeError('a source chunk must be a Uint8Array (or string / ArrayBuffer)', 'UNSUPPORTED');
}

function fromIterator(it) {
  return new ReadableStream({
    async pull(ctrl) {
      try {
        const { value, done } = await it.next();
        if (done) ctrl.close(); else ctrl.enqueue(toBytes(value));
      } catch (e) { ctrl.error(e); }
    },
    async cancel(reason) { if (typeof it.return === 'function') await it.return(reason); },
  }, { highWaterMark: 0 });
}

function fromBytes(bytes) {
  // Hand big buffers over in views of 1 MiB, so progress and parts move smoothly.
  const STEP = 1 << 20;
  let at = 0;
  return new ReadableStream({
    pull(ctrl) {
      if (at >= bytes.byteLength) { ctrl.close(); return; }
      ctrl.enqueue(bytes.subarray(at, Math.min(at + STEP, bytes.byteLength)));
      at += STEP;
    },
  }, { highWaterMark: 0 });
}

// A source that can be read again gives `reopen(start, end)`, a stream of its bytes
// start..end: a resume (PROTOCOL.md §12.3) reads them again instead of keeping a replay window.
const bytesSource = (b) => ({ stream: fromBytes(b), size: b.byteLength,
  reopen: (start, end) => fromBytes(b.subarray(start, end)) });

/**
 * @returns {{ stream: ReadableStream<Uint8Array>, size?: number, type?: string, name?: string,
 *   reopen?: (start: number, end: number) => ReadableStream<Uint8Array> }}
 */
function normaliseSource(source) {
  if (source instanceof ReadableStream) {
    // read by someone else: reading it would fail midway, after the peer was met
    if (source.locked) throw new HttpipeError('the source stream is locked: another reader has it (pass a stream nobody reads, or one branch of its tee())', 'UNSUPPORTED');
    return { stream: source };
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return { stream: source.stream(), size: source.size, type: source.type || undefined,
      name: typeof source.name === 'string' && source.name ? source.name : undefined,
      reopen: (start, end) => source.slice(start, end).stream() };
  }
  if (typeof source === 'string') return bytesSource(enc.encode(source));
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return bytesSource(toBytes(source));
  if (isAsyncIterable(source)) return { stream: fromIterator(source[Symbol.asyncIterator]()) };
  if (isIterable(source)) return { stream: fromIterator(source[Symbol.iterator]()) };
  throw new HttpipeError('source must be a Blob, ReadableStream, Uint8Array, string or (async) iterable of bytes', 'UNSUPPORTED');
}

/** The `autoFlush` option in milliseconds (`undefined`: off); UNSUPPORTED unless a positive
 * number a timer can wait (setTimeout fires at once past 2^31 - 1 ms). */
function autoFlushMs(options) {
  const ms = options ? options.autoFlush : undefined;
  if (ms === undefined) return undefined;
  if (typeof ms !== 'number' || !(ms > 0) || ms > 2e9) {
    throw new HttpipeError(`\`autoFlush\` must be a positive number of milliseconds, at most 2000000000; got ${typeof ms === 'number' ? ms : typeof ms}`, 'UNSUPPORTED');
  }
  return ms;
}

// Batches small writes for log-style producers: hands the batch on at most `ms` later (or at
// 64 KiB, or on flush()).
function batcher(ms) {
  let parts = [];
  let size = 0;
  let timer = null;
  let ctrl = null;
  const emit = () => {
    if (timer !== null) { clearTimeout(timer); timer = null; }
    if (size === 0 || !ctrl) return;
    const out = new Uint8Array(size);
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.byteLength; }
    parts = []; size = 0;
    try { ctrl.enqueue(out); } catch { /* stream already closed or errored */ }
  };
  const stream = new TransformStream({
    start(c) { ctrl = c; },
    transform(chunk) {
      const b = toBytes(chunk);
      if (b.byteLength === 0) return;
      parts.push(b.slice()); size += b.byteLength;
      if (size >= 65536) emit();
      else if (timer === null) timer = setTimeout(emit, ms);
    },
    flush() { emit(); },
  });
  return { stream, emit };
}

function sendOptions(options, meta) {
  const o = { ...options };
  if (o.size === undefined && meta.size !== undefined) o.size = meta.size;
  if (o.contentType === undefined && meta.type !== undefined) o.contentType = meta.type;
  if (o.filename === undefined && meta.name !== undefined) o.filename = meta.name;
  return o;
}

// ---- transfers --------------------------------------------------------------------------

/** Sends `source` to `options.path` on `options.relay`; resolves with a SendReport. */
export async function send(source, options) {
  try {
    const ms = autoFlushMs(options);
    const meta = normaliseSource(source);
    let stream = meta.stream;
    if (ms !== undefined) stream = stream.pipeThrough(batcher(ms).stream);
    await initFor(options).catch((e) => { stream.cancel(e).catch(() => {}); throw e; });
    return await wasm.sendStream(stream, sendOptions(options, meta), meta.reopen);
  } catch (e) { throw wrapError(e); }
}

/**
 * Sends `source` by a short code (docs/PROTOCOL.md §14): resolves with `{ code, done }` once
 * the code's channel is this sender's (show `code` to the receiver); `done` settles with the
 * SendReport when the transfer ends (WRONG_CODE if the receiver's code differed).
 */
export async function sendWithCode(source, options) {
  try {
    const ms = autoFlushMs(options);
    const meta = normaliseSource(source);
    let stream = meta.stream;
    if (ms !== undefined) stream = stream.pipeThrough(batcher(ms).stream);
    await initFor(options).catch((e) => { stream.cancel(e).catch(() => {}); throw e; });
    let gotCode;
    const code = new Promise((resolve) => { gotCode = resolve; });
    const done = wasm.codeSend(sendOptions(options, meta), (c) => gotCode(c))
      .then((o) => wasm.sendStream(stream, o, meta.reopen))
      .catch((e) => { throw wrapError(e); });
    done.catch(() => {});
    // `done` settles before a code only when the exchange failed first.
    return { code: await Promise.race([code, done.then(() => code)]), done };
  } catch (e) { throw wrapError(e); }
}

// `for await (const chunk of received.stream)` everywhere (index.d.ts: ByteStream): where the
// runtime's ReadableStream has no async iterator (Safari), the stream gets one like the
// standard's.
function iterateStream() { return chunksOf(this); }

function iterable(received) {
  const s = received.stream;
  if (s && typeof s[Symbol.asyncIterator] !== 'function') s[Symbol.asyncIterator] = iterateStream;
  return received;
}

/** Receives by a short code: resolves like `receive()`, with the sender's filename/size/type. */
export async function receiveWithCode(code, options) {
  try {
    await initFor(options);
    const { options: o, offer } = await wasm.codeReceive(String(code), options);
    return iterable(Object.assign(await wasm.receive(o), offer));
  } catch (e) { throw wrapError(e); }
}

/** Receives the stream at `options.path`; resolves when it starts. */
export async function receive(options) {
  try {
    await initFor(options);
    return iterable(await wasm.receive(options));
  } catch (e) { throw wrapError(e); }
}

/** Rendezvous only (Connect API): resolves with the data URL once the peer is there. */
export async function connect(options) {
  try {
    await initFor(options);
    return await wasm.connect(options);
  } catch (e) { throw wrapError(e); }
}

/**
 * A WritableStream producer: write, `flush()`, close; `done` resolves with the SendReport.
 * The writable ends with the transfer's verdict: `writer.close()` and `writer.closed` resolve
 * only once `done` did (the relay's success, and the receipt when one is due) and reject with
 * its error. When the transfer fails (the relay is down, the module doesn't load, the peer
 * left), the writable errors with the same HttpipeError as `done`: `write()` rejects with it,
 * never with `undefined`, and never waits forever for a transfer that is over. Chunks are bytes
 * (a string is sent as UTF-8), as a source's are.
 */
export function openWriter(options) {
  let bad = null;
  let ms;
  try { ms = autoFlushMs(options); } catch (e) { bad = e; }
  const b = ms !== undefined ? batcher(ms) : null;
  const pipe = b ? b.stream : new TransformStream({ transform(chunk, c) { c.enqueue(toBytes(chunk)); } });
  // The transfer reads through this reader, so that its end can error the writable with
  // `done`'s reason (cancelling a TransformStream's readable errors its writable).
  const reader = pipe.readable.getReader();
  let done = null;
  const fail = (reason) => { reader.cancel(reason).catch(() => {}); };
  const source = new ReadableStream({
    async pull(c) {
      const { value, done: end } = await reader.read();
      if (end) c.close(); else c.enqueue(value);
    },
    // The transfer gave up reading: the writable errors with its HttpipeError (or this reason
    // if it ended well).
    cancel(reason) { done.then(() => fail(reason), fail); },
  }, { highWaterMark: 0 });
  done = bad ? Promise.reject(bad) : send(source, { ...options, autoFlush: undefined });
  // A failure before the transfer read anything (init, options): nobody cancels `source`.
  done.catch(fail);
  // The caller's writable: the pipe's, whose close waits for the verdict (a closed pipe says
  // only that the last chunk was handed on), and which errors with `done`'s error as soon as
  // the transfer fails, written to or not (`closed` rejects then, and so do later calls).
  const into = pipe.writable.getWriter();
  const writable = new WritableStream({
    start(c) { done.catch((e) => c.error(e)); },
    write: (chunk) => into.write(chunk),
    // a pipe the failure errored first rejects with a TypeError: `done` says what happened
    async close() { await into.close().catch(() => {}); await done; },
    abort: (reason) => into.abort(reason),
  });
  return {
    writable,
    async flush() { if (b) b.emit(); },
    done,
  };
}

/**
 * Receives the stream at `options.path` into `destination` and tells the sender only once the
 * destination took every byte and closed (PROTOCOL.md §12.2 with `receipt: 'manual'`): a
 * write that fails (a full disk) cancels the stream, so the sender hears the receiver did not
 * save it, never "delivered". `destination`: a WritableStream (a file's `createWritable()`,
 * Deno's `file.writable`, ...) or a Node writable stream (`fs.createWriteStream(name)`).
 * Resolves with the stream's metadata after the sender has the receipt; rejects with the
 * destination's own error when it failed, else an HttpipeError.
 */
export async function receiveTo(destination, options) {
  const writable = toWritable(destination);
  const received = await receive({ ...options, receipt: options && options.receipt === false ? false : 'manual' });
  try {
    await received.stream.pipeTo(writable);
    if (received.confirm) await received.confirm();
  } catch (e) {
    throw e instanceof HttpipeError || !(e instanceof Error) ? wrapError(e) : e;
  }
  const { contentType, filename, size } = received;
  return { contentType, filename, size };
}

/** A WritableStream, as it is, or one over a Node writable stream (its `write`/`end` callbacks). */
function toWritable(d) {
  if (d instanceof WritableStream) return d;
  if (!d || typeof d.write !== 'function' || typeof d.end !== 'function' || typeof d.once !== 'function') {
    throw new HttpipeError('receiveTo(destination, options): destination must be a WritableStream or a Node writable stream', 'UNSUPPORTED');
  }
  let failed = null;
  d.once('error', (e) => { failed = e; });
  const settle = (fn) => new Promise((resolve, reject) => {
    if (failed) { reject(failed); return; }
    const onError = (e) => reject(e);
    d.once('error', onError);
    fn((err) => { d.off?.('error', onError); if (err || failed) reject(err || failed); else resolve(); });
  });
  return new WritableStream({
    write: (chunk) => settle((done) => d.write(chunk, done)),
    // 'finish': every byte went to the file (the callback of end()); errors while closing reject
    close: () => settle((done) => d.end(() => done())),
    abort: (reason) => { d.destroy?.(reason instanceof Error ? reason : undefined); },
  });
}

/** The consumer's byte stream (like `receive(...).stream`). */
export async function openReader(options) {
  return (await receive(options)).stream;
}

// ---- crypto on its own ------------------------------------------------------------------

function cryptoTransform(options, make) {
  let c = null;
  return new TransformStream({
    async start() { await initFor(options).catch((e) => { throw wrapError(e); }); try { c = make(); } catch (e) { throw wrapError(e); } },
    transform(chunk, ctrl) {
      try { const out = c.update(toBytes(chunk)); if (out.byteLength) ctrl.enqueue(out); } catch (e) { throw wrapError(e); }
    },
    flush(ctrl) {
      try { const out = c.finish(); if (out.byteLength) ctrl.enqueue(out); } catch (e) { throw wrapError(e); } finally { c.free(); }
    },
  });
}

// With WebCrypto's cipher (src/wasm/webcrypto.rs): the same with asynchronous calls; up to
// `depth` encryptor calls in flight (the page frames the next write while WebCrypto seals),
// each output enqueued in order as soon as it is ready. The cipher is the one of the moment the
// stream is made, or, made before init, of its start.
function webCryptoTransform(options, makeWasm, makeWeb, depth) {
  if (webSetUp && wasm.cryptoBackendName() !== 'webcrypto') return cryptoTransform(options, makeWasm);
  let c = null;
  let tail = Promise.resolve();
  const inFlight = [];
  return new TransformStream({
    async start() {
      await initFor(options).catch((e) => { throw wrapError(e); });
      try {
        if (wasm.cryptoBackendName() === 'webcrypto') { c = makeWeb(); if (c.ready) await c.ready(); } else c = makeWasm();
      } catch (e) { throw wrapError(e); }
    },
    async transform(chunk, ctrl) {
      try {
        const out = c.update(toBytes(chunk));
        tail = tail.then(() => out).then((o) => { if (o.byteLength) ctrl.enqueue(o); });
        tail.catch(() => {});
        inFlight.push(tail);
        while (inFlight.length > depth) await inFlight.shift();
      } catch (e) { throw wrapError(e); }
    },
    async flush(ctrl) {
      try { await tail; const out = await c.finish(); if (out.byteLength) ctrl.enqueue(out); } catch (e) { throw wrapError(e); } finally { c.free(); }
    },
  });
}

/** Encrypts a byte stream (age-rt by default; every chunk is flushed as one record). */
export function encryptStream(options) {
  return webCryptoTransform(options, () => new wasm.Encryptor(options), () => new wasm.WebEncryptor(options), 4);
}

/** Decrypts age or age-rt (auto-detected); errors WRONG_KEY before any plaintext. */
export function decryptStream(options) {
  return webCryptoTransform(options, () => new wasm.Decryptor(options), () => new wasm.WebDecryptor(options), 0);
}

/** A new X25519 identity "AGE-SECRET-KEY-1..." (needs init). */
export function generateIdentity() {
  requireInit('generateIdentity');
  try { return wasm.generateIdentity(); } catch (e) { throw wrapError(e); }
}

/** A new hybrid post-quantum identity "AGE-SECRET-KEY-PQ-1..." (ML-KEM-768 + X25519; needs init, not the post-quantum module). */
export function generateHybridIdentity() {
  requireInit('generateHybridIdentity');
  try { return wasm.generateHybridIdentity(); } catch (e) { throw wrapError(e); }
}

/** The "age1..." / "age1pq1..." recipient of an identity (needs init). */
export function identityToRecipient(identity) {
  requireInit('identityToRecipient');
  // a non-string reached the module's string argument as garbage ("memory access out of bounds")
  if (typeof identity !== 'string') {
    throw new HttpipeError(`identityToRecipient() takes an identity string ("AGE-SECRET-KEY-1..."), got ${identity === null ? 'null' : typeof identity}`, 'UNSUPPORTED');
  }
  if (POST_QUANTUM_KEY.test(identity) && !xwingNow()) {
    throw new HttpipeError('identityToRecipient() of a post-quantum identity needs the post-quantum module, '
      + 'which this runtime loads asynchronously: `await loadPostQuantum()` first', 'UNSUPPORTED');
  }
  try { return wasm.identityToRecipient(identity); } catch (e) { throw wrapError(e); }
}
