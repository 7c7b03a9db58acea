// Types of the httpipe package (contract: docs/js-api.md). Checked by tests/types/ under
// `tsc --strict` with the DOM lib, the WebWorker lib, `lib: ["es2022"]` and no DOM, @types/node,
// @cloudflare/workers-types, and by Deno's checker.

// ---- Web platform types used below ----
// The declarations need a few types of the web platform. They are declared here as empty
// global interfaces so that this file compiles without the DOM lib (`lib: ["es2022"]`, Node
// with @types/node, @cloudflare/workers-types, Deno): an empty interface merges with the
// runtime's own declaration of the same name wherever there is one (the DOM lib, @types/node,
// workers-types, Deno's lib), so user code sees the full types; where there is none, these
// types are opaque. They declare no members, so they never change a merged declaration.
// (BufferSource is a type alias in those libs, which can't merge: {@link InitInput} spells it out.)
declare global {
  interface AbortSignal {}
  interface Blob {}
  interface ReadableStream<R> {}
  interface WritableStream<W> {}
  interface TransformStream<I, O> {}
  interface Request {}
  interface Response {}
  interface URL {}
  namespace WebAssembly {
    interface Module {}
  }
}

/**
 * Stable error codes of {@link HttpipeError}: the transfer codes (the same as the Rust core's
 * and the CLI's), the package's own `WASM_LOAD_FAILED`, and the pipeline codes.
 */
export type HttpipeErrorCode =
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'CONNECT_TIMEOUT' | 'PEER_DISCONNECTED' | 'TRUNCATED'
  | 'DECRYPT_FAILED' | 'WRONG_KEY' | 'RELAY_ERROR' | 'ABORTED' | 'UNSUPPORTED' | 'NETWORK'
  // send(): the receiver promised a receipt (docs/PROTOCOL.md §12) and none valid arrived
  | 'UNCONFIRMED'
  // sendWithCode() / receiveWithCode(): a malformed code, no sender waiting for it, or the two
  // sides' codes differ (docs/PROTOCOL.md §14); no data was sent
  | 'WRONG_CODE'
  // the relay is at a limit for now: its short-code channels were busy, or this address holds
  // too many waiting or short-code requests (HTTP 429, docs/PROTOCOL.md §9, §14.5)
  | 'RELAY_BUSY'
  // the package: init() could not fetch, read or instantiate the .wasm module
  | 'WASM_LOAD_FAILED'
  // pipelines: a record that can't be decoded, a step's callback threw, a sink gave up
  | 'INVALID_RECORD' | 'STEP_FAILED' | 'SINK_FAILED';

/** The one error class of the package: `code` is stable, `message` says what to do. */
export declare class HttpipeError extends Error {
  constructor(message: string, code: HttpipeErrorCode, options?: { cause?: unknown });
  readonly name: 'HttpipeError';
  readonly code: HttpipeErrorCode;
  /**
   * The other side's code, when it named one (PROTOCOL.md §12.2, a `failed` receipt): on a
   * `send` that rejects `PEER_DISCONNECTED` because the receiver failed, e.g. `WRONG_KEY`
   * (the receiver typed a wrong passphrase). Absent otherwise.
   */
  readonly peerCode?: HttpipeErrorCode;
}

/** A progress report (at most every 100 ms, and once at the end). */
export interface Progress {
  /** Plaintext bytes so far. */
  bytes: number;
  /** Plaintext bytes in all, when known (a Blob, bytes or string source, or the `size` option). */
  total?: number;
  /** Bytes per second, smoothed over the last 2 seconds or so. */
  bytesPerSecond: number;
  /** Breaks resumed after so far (PROTOCOL.md §12.3). */
  resumed: number;
  /** True while a break is being resumed ("connection lost — resuming…"): a report comes when it starts and when it ends. */
  reconnecting: boolean;
}

/**
 * An absent, `undefined` or `null` member is unset; a member of another type is an HttpipeError
 * `UNSUPPORTED` naming it; members the SDK doesn't know are ignored.
 */
export interface CommonOptions {
  /** Relay base URL, e.g. "https://relay.example" or "http://127.0.0.1:8080". */
  relay: string;
  /** Stream path, e.g. "/team/reports/2026-11"; `.`/`..` segments, `\`, `?`, `#` and control characters are refused (UNSUPPORTED). */
  path: string;
  /** Access token (PROTOCOL.md §6), sent as `Authorization: Bearer`. */
  token?: string;
  /** Meet the peer on the Connect API first (PROTOCOL.md §5). Default true. */
  rendezvous?: boolean;
  /** Seconds to wait for the peer (with rendezvous; without it, the consumer's wait), then CONNECT_TIMEOUT. Default: no limit; at most 2 000 000 (23 days). The relay counts whole seconds: a fraction is rounded up (0.3 → 1 s; PROTOCOL.md §11.2). */
  timeout?: number;
  /** Aborting it aborts the transfer (ABORTED; the peer sees the abort). */
  signal?: AbortSignal;
  /** Called with the progress, at most every 100 ms and once at the end. */
  onProgress?: (p: Progress) => void;
  /** Encrypt (send) / decrypt (receive) with a passphrase (age scrypt stanza); an empty one is refused (UNSUPPORTED). */
  passphrase?: string;
  /**
   * Resume after a break (PROTOCOL.md §12.3): when both sides ask for it, a cut connection
   * (network, proxy, relay restart) is resumed where the receiver stands. A number: seconds to
   * keep trying to meet the other side again; true (default): 60; false: a break fails the
   * transfer at once (TRUNCATED / PEER_DISCONNECTED). A peer whose process died is waited for
   * that long before the error (a peer that failed or cancelled says so at once). A
   * connection that stalls without closing (a tunnel) counts as a break once both sides have
   * waited 10 s for each other (§12.4).
   */
  resume?: boolean | number;
}

export interface SendOptions extends CommonOptions {
  /**
   * Recipients to encrypt to (instead of a passphrase): X25519 "age1..." or hybrid
   * post-quantum "age1pq1..." (ML-KEM-768 + X25519, age 1.3), not both kinds at once
   * (UNSUPPORTED: the X25519 stanza would give up the post-quantum protection). Each entry is
   * one key or a recipients file's text (one key per line, `#` comments and blank lines ignored).
   * An empty list is UNSUPPORTED (never a plain transfer): leave the option out for one.
   * age-rt's header (4096 bytes) holds two post-quantum recipients (1557 bytes each): more need
   * `format: 'age'` (else UNSUPPORTED).
   */
  recipients?: string[];
  /** Encrypted format, default 'age-rt' (real-time records); 'age' for the age CLI. */
  format?: 'age-rt' | 'age';
  /** MIME type forwarded to the consumer as Content-Type (plain streams only: not sent when encrypting). Default: a Blob's type. */
  contentType?: string;
  /** File name forwarded as Content-Disposition (plain streams only). Default: a File's name. */
  filename?: string;
  /** Plaintext size in bytes, for progress totals and the consumer's `size` (plain streams only). Default: a Blob's, bytes' or string's size. */
  size?: number;
  /** Milliseconds (> 0, at most 2 000 000 000): batch small writes and hand them on at most this late (or at 64 KiB, or on `flush()`). */
  autoFlush?: number;
  /** Upload transport: 'auto' (default) streams where possible and falls back to segmented. */
  upload?: 'auto' | 'stream' | 'segmented';
  /** Segmented upload part size in bytes. Default 1 MiB (1048576), at most 16 MiB. */
  partSize?: number;
  /**
   * Delivery receipts (PROTOCOL.md §12). Default true: when the receiver sends receipts (this
   * SDK does), `send()` resolves only on its valid receipt (`report.receipt`); otherwise (curl,
   * the ZebraStream clients, `rendezvous: false`) on the relay's verdict, without `receipt`.
   * An encrypted send counts as delivered only on an authenticated receipt (made with the
   * transfer's key): the receipt of a receiver without keys, for the ciphertext it stored, is
   * UNCONFIRMED — anyone who knows the path could have sent it (PROTOCOL.md §12.2).
   * 'ciphertext': accept such receipts too (`receipt.authenticated` false, `receipt.bytes` the
   * ciphertext's). false: no receipt asked for.
   */
  receipt?: boolean | 'ciphertext';
  /** Seconds to wait for the receipt after the relay delivered every byte, then UNCONFIRMED. Default 120; at most 2 000 000. */
  receiptTimeout?: number;
  /**
   * Bytes of the replay window (PROTOCOL.md §12.3): the last bytes sent are kept (copied into the
   * window's own 1 MiB blocks, so memory stays bounded) so that a break resumes; a break that lost more than this fails with
   * PEER_DISCONNECTED (TRUNCATED on the receiver), the message giving both offsets. Default
   * 32 MiB (33554432), at most 1 GiB; 0 keeps nothing. A `Blob`/`File` or bytes source keeps no
   * window: a resume reads it again from the receiver's offset (encrypted: sealed again from
   * the chunk there, each chunk sent only if its tag is the one sent before), so `resumeWindow`
   * doesn't bound its resume.
   */
  resumeWindow?: number;
}

export interface ReceiveOptions extends CommonOptions {
  /** Identities to decrypt with (instead of a passphrase): "AGE-SECRET-KEY-1..." (X25519) and/or "AGE-SECRET-KEY-PQ-1..." (post-quantum); each entry one key or an identity file's text as `age-keygen` / `httpipe keygen` write it (comments and blank lines ignored). */
  identities?: string[];
  /**
   * Delivery receipts (PROTOCOL.md §12), when the sender asks for one. true (default): sent
   * when the stream was read to its end (its last read resolves after the sender has it,
   * at most 30 s later); 'manual': sent by `confirm()` (e.g. after saving the file); false:
   * never. A cancelled stream tells the sender so; a failed one sends its error code, and
   * errors once the sender has it (at most 2 s later; a stream the sender cut: at once).
   */
  receipt?: boolean | 'manual';
  /**
   * Without `passphrase` or `identities`: hand out an encrypted stream's ciphertext as it is
   * (to store it and decrypt later). Default false: a stream that begins like age or age-rt
   * fails WRONG_KEY ("the stream is encrypted") before its header line is handed out
   * (PROTOCOL.md §11.3).
   */
  ciphertext?: boolean;
}

/** A verified delivery receipt (PROTOCOL.md §12.2). */
export interface Receipt {
  /** Plaintext bytes the receiver released to its application: equal to `report.bytes` (with `receipt: 'ciphertext'` and a receiver without keys, `authenticated` false: the ciphertext's bytes). */
  bytes: number;
  /** Hex, equal to the sender's: SHA-256 of the chunk tags (a receiver that decrypts), else XXH3-128 of the bytes as they arrived (PROTOCOL.md §12.2). */
  digest: string;
  /** Signed with a key derived from the transfer's file key (encrypted transfers): neither the relay nor anyone without the key could have made it. */
  authenticated: boolean;
}

export interface SendReport {
  /** Plaintext bytes sent. */
  bytes: number;
  /** Milliseconds from the call to the relay's final status line. */
  durationMs: number;
  /** The upload transport used: one streaming request, or segmented parts. */
  transport: 'stream' | 'segmented';
  /** The relay's final status line, "[STATE:TRANSFER_SUCCESSFUL]". */
  relayState: string;
  /** The receiver's verified receipt; undefined when the receiver doesn't send receipts (then only `relayState` says the bytes left the relay). */
  receipt?: Receipt;
  /** Breaks the transfer resumed after (PROTOCOL.md §12.3); 0 without any. */
  resumes: number;
}

/**
 * The bytes the SDK hands out: Uint8Array over a plain ArrayBuffer (never a
 * SharedArrayBuffer), so they go into `new Blob(chunks)`, `new Response(chunk)` and every
 * `BufferSource` without a cast (TypeScript ≥ 5.7 tells the two apart).
 */
export type Bytes = Uint8Array<ArrayBuffer>;

/**
 * A received byte stream: a ReadableStream that `for await` iterates in every lib setup
 * (the SDK adds the async iterator where the runtime's ReadableStream lacks it, e.g. Safari,
 * and the type says so without the `DOM.AsyncIterable` lib).
 */
export type ByteStream = ReadableStream<Bytes> & AsyncIterable<Bytes>;

export interface Received {
  /** The plaintext, as it arrives; errors TRUNCATED if the producer's stream is cut. */
  stream: ByteStream;
  /** The producer's Content-Type (plain streams; undefined when encrypted). */
  contentType?: string;
  /** The producer's file name, from Content-Disposition (plain streams). */
  filename?: string;
  /** Bytes: the producer's Content-Length or declared size (plain streams, when it sent one). */
  size?: number;
  /**
   * With `receipt: 'manual'`: tells the sender every byte arrived (call it after the stream
   * ended and the data is saved). Resolves when the sender has the receipt (or asked for
   * none), or when a sender stopped (aborted) after its last byte stated that end: the data is
   * complete, though that sender does not learn it was saved; rejects UNSUPPORTED before the
   * stream's end, UNCONFIRMED if the sender didn't come for it within 30 s (gone: the data is
   * still complete), TRUNCATED if the stream is plain, the sender promised to state its end and
   * this is not the end it stated (PROTOCOL.md §12.2: the stream was cut though it ended
   * cleanly; discard the data). A decrypted stream's end is authenticated: never TRUNCATED here.
   */
  confirm?: () => Promise<void>;
}

/** What `send` takes: bytes, text, a Blob/File, a byte stream (not locked to another reader:
 * that is UNSUPPORTED at once; cancelled when `send` settles before its end) or an (async)
 * iterable of chunks. */
export type Source = Blob | ReadableStream<Uint8Array> | Uint8Array | ArrayBuffer | string
  | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;

export interface ConnectOptions {
  /** Relay base URL. */
  relay: string;
  /** Stream path. */
  path: string;
  /** 'await-reader': the producer waits for a consumer; 'await-writer': the consumer waits for a producer. */
  mode: 'await-reader' | 'await-writer';
  /** Access token (PROTOCOL.md §6). */
  token?: string;
  /** Seconds to wait for the peer, then CONNECT_TIMEOUT. Default: no limit. */
  timeout?: number;
  /** Aborting it stops the wait (ABORTED). */
  signal?: AbortSignal;
}

export interface Writer {
  /**
   * Write chunks (a string goes as UTF-8), then close (or abort: the consumer sees TRUNCATED).
   * `close()` and `closed` settle with the transfer's verdict: they resolve once `done` did and
   * reject with its error; a failed transfer errors the writable with `done`'s HttpipeError at
   * once, written to or not (a later `close()` rejects with the Streams standard's TypeError).
   */
  writable: WritableStream<Uint8Array | string>;
  /** Hands batched writes (autoFlush) on now. */
  flush(): Promise<void>;
  /** Resolves with the report once the consumer got everything; rejects like `send`. */
  done: Promise<SendReport>;
}

export interface EncryptOptions {
  /** Encrypt with a passphrase (age scrypt stanza). */
  passphrase?: string;
  /** Recipients "age1..." (X25519) or "age1pq1..." (post-quantum), instead of a passphrase; not both kinds at once. */
  recipients?: string[];
  /** Default 'age-rt' (each chunk flushed as one record); 'age' for the age CLI. */
  format?: 'age-rt' | 'age';
}
export interface DecryptOptions {
  /** The passphrase the stream was encrypted with. */
  passphrase?: string;
  /** Identities "AGE-SECRET-KEY-1..." (X25519) and/or "AGE-SECRET-KEY-PQ-1..." (post-quantum), instead of a passphrase; each entry one key or an identity file's text. */
  identities?: string[];
}

/**
 * Options of {@link sendWithCode}: those of `send` without the ones the code derives (the
 * stream path, the key: age-rt to a recipient derived from the exchange). `filename`,
 * `contentType` and `size` (a File's by default) travel sealed to the receiver.
 */
export type SendWithCodeOptions = Omit<SendOptions, 'path' | 'passphrase' | 'recipients' | 'format'>;

/** Options of {@link receiveWithCode}: those of `receive` without the ones the code derives. */
export type ReceiveWithCodeOptions = Omit<ReceiveOptions, 'path' | 'passphrase' | 'identities'>;

/** What {@link sendWithCode} resolves with, once the code's channel is this sender's. */
export interface CodeSend {
  /** The code to read to the receiver, e.g. "7-guitarist-revenge" (works once). */
  code: string;
  /**
   * Settles when the transfer ends: the report as `send`'s; WRONG_CODE when the receiver used
   * another code or someone else tried this one (nothing was sent; make a new code).
   */
  done: Promise<SendReport>;
}

/**
 * Input accepted by {@link init}: the URL of the .wasm file (fetched; in Node and Deno a
 * file: URL is read from disk), a Request or Response for it, its bytes, or a compiled module.
 */
export type InitInput = string | URL | Request | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/**
 * Loads the wasm module. Optional: every async function does it on first use (Node and Deno
 * load it at import). Rejects with WASM_LOAD_FAILED, naming the location it tried; calling it
 * again tries again. Anything but an InitInput rejects with UNSUPPORTED, saying what it takes.
 */
export declare function init(input?: InitInput | Promise<InitInput>): Promise<void>;
/**
 * Loads the post-quantum module (`httpipe_xwing_bg.wasm`: the X-Wing KEM of "age1pq1..."
 * recipients and "AGE-SECRET-KEY-PQ-1..." identities, ~15 KB gzipped), after {@link init}.
 * Optional: every function that gets such a key loads it first, so a page that never uses
 * one never downloads it. Needed before {@link identityToRecipient} of a post-quantum identity
 * in a browser (that function is synchronous; Node, Deno and workerd load it there). `input`:
 * like init()'s, for a custom location. Rejects with WASM_LOAD_FAILED naming what it tried
 * (UNSUPPORTED for anything but an InitInput); calling it again tries again.
 */
export declare function loadPostQuantum(input?: InitInput | Promise<InitInput>): Promise<void>;
/**
 * Sends `source` to `options.path`; resolves once the consumer got everything. A source that
 * fails makes it reject ABORTED ("the source failed: …", `cause`: the source's own error; an
 * HttpipeError the source failed with is passed on as it is).
 */
export declare function send(source: Source, options: SendOptions): Promise<SendReport>;
/**
 * Sends `source` by a short code (PROTOCOL.md §14): picks a free channel on the relay and
 * resolves with `{ code, done }` once it holds it; show or read `code` to the receiver. A
 * SPAKE2 exchange on the code makes the key; the data goes end-to-end encrypted (age-rt).
 */
export declare function sendWithCode(source: Source, options: SendWithCodeOptions): Promise<CodeSend>;
/**
 * Receives by a short code as a person typed it (case and spaces don't matter): resolves like
 * `receive`, with the sender's `filename`, `size` and `contentType`. Rejects WRONG_CODE for a
 * malformed code (before any request), when no sender waits for it (after 10 s), or when the
 * sender's code is another one.
 */
export declare function receiveWithCode(code: string, options: ReceiveWithCodeOptions): Promise<Received>;
/**
 * Receives the stream at `options.path`; resolves when it starts. Rejects TRUNCATED when the
 * sender it met failed or went away before sending anything (a vanished one: within about 25 s,
 * PROTOCOL.md §12.5).
 */
export declare function receive(options: ReceiveOptions): Promise<Received>;
/** Rendezvous only (Connect API): resolves with the data URL once the peer is there. */
export declare function connect(options: ConnectOptions): Promise<string>;
/**
 * A WritableStream producer: write, `flush()`, close; `done` resolves with the report, and
 * `writer.close()` only once `done` did (a closed writer is a delivered stream).
 */
export declare function openWriter(options: SendOptions): Writer;
/** A Node writable stream, as `receiveTo` takes it (e.g. `fs.createWriteStream(name)`). */
export interface NodeWritableLike {
  write(chunk: Uint8Array, callback: (error?: Error | null) => void): unknown;
  end(callback?: () => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
}
/**
 * Receives into `destination` (a WritableStream or a Node writable stream) and confirms to the
 * sender only after the destination took every byte and closed (PROTOCOL.md §12.2): the way to
 * save a stream whose receipt means "saved". A failing write (a full disk) cancels the stream
 * and rejects with the destination's error; the sender then rejects PEER_DISCONNECTED. Resolves
 * with the stream's metadata once the sender has the receipt.
 */
export declare function receiveTo(destination: WritableStream<Uint8Array> | NodeWritableLike, options: ReceiveOptions): Promise<Omit<Received, 'stream' | 'confirm'>>;
/** The consumer's byte stream (`receive(options)` then `.stream`). */
export declare function openReader(options: ReceiveOptions): Promise<ByteStream>;
/** Encrypts a byte stream (age-rt by default; each chunk is flushed as one record). */
export declare function encryptStream(options: EncryptOptions): TransformStream<Uint8Array, Bytes>;
/** Decrypts age or age-rt (auto-detected); errors WRONG_KEY before any plaintext. */
export declare function decryptStream(options: DecryptOptions): TransformStream<Uint8Array, Bytes>;
/** A new X25519 identity "AGE-SECRET-KEY-1...". Needs the module loaded (`await init()` in browsers). */
export declare function generateIdentity(): string;
/**
 * A new hybrid post-quantum identity "AGE-SECRET-KEY-PQ-1..." (ML-KEM-768 + X25519, age 1.3's
 * `mlkem768x25519`, like `age-keygen -pq`). Its recipient "age1pq1..." is 1959 characters long.
 * Needs the module loaded (`await init()` in browsers), not the post-quantum one.
 */
export declare function generateHybridIdentity(): string;
/**
 * The recipient of an identity: "age1..." (X25519) or "age1pq1..." (post-quantum). Needs the
 * module loaded (`await init()` in browsers), and for a post-quantum identity in a browser the
 * post-quantum module too (`await loadPostQuantum()`; else UNSUPPORTED saying so).
 */
export declare function identityToRecipient(identity: string): string;
/**
 * The cipher that seals and opens the payload of streams opened from now on: WebCrypto's
 * ChaCha20-Poly1305 (`'webcrypto'`: Chromium 150+ in a secure context, where there is no
 * node:crypto; probed at init), the runtime's native one (`'node:crypto'`: Node, Deno, Workers
 * with nodejs_compat) or the wasm one (`'wasm'`: Firefox, Safari, ...). `'wasm'` forces the wasm
 * cipher, `'auto'` returns to the detected one; same bytes and errors either way. Needs the
 * module loaded. Throws HttpipeError `UNSUPPORTED` for another choice.
 */
export declare function cryptoBackend(choice?: 'wasm' | 'auto'): 'webcrypto' | 'node:crypto' | 'wasm';

// ---- Pipelines (docs/js-api.md "Pipelines"; js/pipeline/) ----
declare const stepIn: unique symbol;
declare const stepOut: unique symbol;
declare const sinkIn: unique symbol;
declare const sourceOut: unique symbol;

/** A step from records `I` to records `O`: a factory, fresh state on every run. */
export interface Step<I, O> {
  readonly name: string;
  readonly [stepIn]: (input: I) => void;
  readonly [stepOut]: O;
}
/** Where records `I` leave the run; `R` is the run's `report.result` (collect: the records). */
export interface Sink<I, R = undefined> {
  readonly name: string;
  readonly [sinkIn]: (input: I) => R;
}
/** A replayable source of records `T` (fromPipe, defineSource). */
export interface SourceFactory<T> {
  readonly name: string;
  readonly [sourceOut]: T;
}

/** Byte sources of the SDK: their records are Uint8Array chunks. */
export type ByteSource = Blob | ReadableStream<Uint8Array> | Uint8Array | ArrayBuffer | string;
type Direct<T> = SourceFactory<T> | AsyncIterable<T> | Iterable<T>;
/** Anything `pipeline()` takes as its source (a function is called once per run). */
export type PipelineSource<T> = ByteSource | Direct<T> | Promise<Direct<T>> | ((ctx: { signal: AbortSignal }) => ByteSource | Direct<T> | Promise<Direct<T>>);

/**
 * The records a source yields. Strings and bytes are byte sources (their iterators would
 * yield characters or numbers); Blob and ReadableStream come last because where no web lib
 * declares them they are the empty interfaces above, which every type matches.
 */
export type RecordOf<S> =
  S extends string | Uint8Array | ArrayBuffer ? Uint8Array
  : S extends SourceFactory<infer T> ? T
  : S extends (...args: never[]) => infer R ? RecordOf<Awaited<R>>
  : S extends Promise<infer P> ? RecordOf<P>
  : S extends AsyncIterable<infer T> ? T
  : S extends Iterable<infer T> ? T
  : S extends Blob | ReadableStream<Uint8Array> ? Uint8Array
  : never;

/** Timers used by batch() and retries: tests pass a fake clock. */
export interface Clock {
  /** Milliseconds since some fixed point (Date.now()). */
  now(): number;
  /** Calls `fn` after `ms` milliseconds; returns a handle for clearTimeout. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
export interface PipelineOptions {
  /** Aborting it aborts the run (like `run.abort(reason)`). */
  signal?: AbortSignal;
  /** The timers of batch() and of the sink's retries. Default: the system clock. */
  clock?: Clock;
}

/** Counters of one step: records are array items, bytes are Uint8Array lengths (0 for other records). */
export interface StepStats {
  name: string;
  recordsIn: number; recordsOut: number;
  bytesIn: number; bytesOut: number;
  /** tap with policy 'drop': records the side branch skipped. */
  dropped?: number;
}
export interface SinkStats {
  name: string;
  /** Records (or batches) the sink was given, and their bytes when they are byte chunks. */
  recordsIn: number; bytesIn: number;
  /** Items delivered: fn resolved (sink), or the transfer completed (toPipe, partition). */
  delivered: number;
  /** Calls of fn, retries among them, items handed to the dead letter. */
  attempts: number; retries: number; deadLettered: number;
  /** toPipe / partition / a dead-letter pipe: one SendReport per stream path. */
  transfers: Array<SendReport & { path: string; records?: number; deadLetter?: boolean }>;
}
export interface PipelineReport<R = undefined> {
  state: 'running' | 'done' | 'failed';
  /** Milliseconds from start to end (or to now, in stats()). */
  durationMs: number;
  /** Records the source yielded (a byte source: the records its first decoding step made); items the sink delivered. */
  records: { in: number; out: number };
  /** Bytes the source yielded; bytes the sink was given (byte records only). */
  bytes: { in: number; out: number };
  source: { name: 'source'; recordsOut: number; bytesOut: number };
  steps: StepStats[];
  sink: SinkStats;
  /** The sink's retries and dead-lettered items (as in `sink`). */
  retries: number;
  deadLettered: number;
  /** The sink's result: collect() puts the records here. */
  result: R;
}
/** A running pipeline. */
export interface Run<R = undefined> {
  /** The report; rejects with the run's first error (HttpipeError: its code says which). */
  done: Promise<PipelineReport<R>>;
  /** Tears down every step, the source and the sink; `done` rejects ABORTED (cause: reason). */
  abort(reason?: unknown): void;
  /** Live counters, the report's shape. */
  stats(): PipelineReport<R>;
  /** Aborts when the run fails or is aborted. */
  readonly signal: AbortSignal;
}

// One overload per length, the one without options first: TypeScript checks an argument once
// per call, so overloads must not overlap in arity more than this (a step such as batch() takes
// its record type from its neighbours). `PipelineSource<unknown>` accepts every source (the
// type is covariant in its records); RecordOf<S> then names the records.
export declare function pipeline<S extends PipelineSource<unknown>, R>(source: S, sink: Sink<RecordOf<S>, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, R>(source: S, s1: Step<RecordOf<S>, A>, sink: Sink<A, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, R>(source: S, sink: Sink<RecordOf<S>, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, sink: Sink<B, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, R>(source: S, s1: Step<RecordOf<S>, A>, sink: Sink<A, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, sink: Sink<C, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, sink: Sink<B, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, sink: Sink<D, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, sink: Sink<C, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, sink: Sink<E, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, sink: Sink<D, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, sink: Sink<F, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, sink: Sink<E, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, G, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, sink: Sink<G, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, sink: Sink<F, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, G, H, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, s8: Step<G, H>, sink: Sink<H, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, G, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, sink: Sink<G, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<unknown>, A, B, C, D, E, F, G, H, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, s8: Step<G, H>, sink: Sink<H, R>, options: PipelineOptions): Run<R>;

// ---- sources ----
/** The stream at `options.path` as byte chunks; a producer failing mid-stream → TRUNCATED. */
export declare function fromPipe(options: ReceiveOptions): SourceFactory<Bytes>;
/** A custom source: `open(ctx)` returns an async iterable of record chunks (arrays), once per run. */
export declare function defineSource<T>(name: string, open: (ctx: { signal: AbortSignal }) => AsyncIterable<T[]>): SourceFactory<T>;

// ---- steps ----
export interface MapOptions {
  /** Calls of an async fn in flight at once. Default 1. */
  concurrency?: number;
  /** Keep input order (default true); false passes results on as they finish. */
  ordered?: boolean;
}
/** `fn(record, index)` for every record, sync or async. */
export declare function map<I, O>(fn: (record: I, index: number) => O | Promise<O>, options?: MapOptions): Step<I, O>;
/** Keeps the records for which `fn` is truthy; a type guard narrows the records' type. */
export declare function filter<I, O extends I = I>(fn: ((record: I, index: number) => record is O) | ((record: I, index: number) => unknown)): Step<I, O>;
/** `fn` returns the records to pass on for one record: an array, an (async) iterable, or null/undefined for none. */
export declare function flatMap<I, O>(fn: (record: I, index: number) => Iterable<O> | AsyncIterable<O> | O[] | null | undefined | Promise<Iterable<O> | O[] | null | undefined>): Step<I, O>;
export interface TapOptions {
  /** When `buffer` records wait for the side branch: 'block' (default) holds the main line; 'drop' skips the side branch for that record. */
  policy?: 'block' | 'drop';
  /** Records waiting for the side branch, at most. Default 1024. */
  buffer?: number;
}
/** A side branch: `fn(record, index)` one record at a time, in order; the records pass on unchanged. */
export declare function tap<T>(fn: (record: T, index: number) => unknown, options?: TapOptions): Step<T, T>;
export interface BatchOptions<T> {
  /** Records per batch, at most (default 1000; unlimited when only maxBytes is given). */
  maxItems?: number;
  /** Pass the batch on once its size reaches this many bytes (as measured by `size`). */
  maxBytes?: number;
  /** Milliseconds after a batch's first record at which it is passed on, full or not. Default: no limit. */
  maxWaitMs?: number;
  /** A record's size in bytes for maxBytes. Default: byteLength / string length / JSON length. */
  size?: (record: T) => number;
}
/** Groups records into arrays (at `maxItems`, `maxBytes`, `maxWaitMs`, and at the end). */
export declare function batch<T>(options?: BatchOptions<T>): Step<T, T[]>;
/** Names a point of the line in the report and stats(); records pass on unchanged. */
export declare function meter<T>(name?: string): Step<T, T>;
/** Compresses byte chunks (the runtime's CompressionStream). */
export declare function gzip(): Step<Uint8Array, Bytes>;
/** Decompresses byte chunks (the runtime's DecompressionStream); corrupt input → INVALID_RECORD. */
export declare function gunzip(): Step<Uint8Array, Bytes>;
/** Encrypts byte chunks, as encryptStream. */
export declare function encrypt(options: EncryptOptions): Step<Uint8Array, Bytes>;
/** Decrypts byte chunks, as decryptStream. */
export declare function decrypt(options: DecryptOptions): Step<Uint8Array, Bytes>;
export interface LinesOptions {
  /** Drop empty lines. Default false. */
  skipEmpty?: boolean;
}
/** Byte chunks (or strings) → lines, without their "\n" / "\r\n"; a last line without a newline counts. */
export declare function lines(options?: LinesOptions): Step<Uint8Array | string, string>;
export interface NdjsonDecodeOptions {
  /** Passed to JSON.parse for every line. */
  reviver?: (this: unknown, key: string, value: unknown) => unknown;
}
export interface NdjsonEncodeOptions {
  /** Passed to JSON.stringify for every record. */
  replacer?: (this: unknown, key: string, value: unknown) => unknown;
}
export declare const ndjson: {
  /** Byte chunks (or strings) → one JSON value per non-blank line; bad JSON → INVALID_RECORD "line N". */
  decode<T = unknown>(options?: NdjsonDecodeOptions): Step<Uint8Array | string, T>;
  /** Values → one Uint8Array per chunk of records, each record a line; a value with no JSON form → INVALID_RECORD. */
  encode<T = unknown>(options?: NdjsonEncodeOptions): Step<T, Bytes>;
};
export interface CsvDecodeOptions {
  /** true (default): the first row names the columns and rows are objects; false: rows are string arrays; string[]: these column names, no header row in the input. */
  header?: boolean | string[];
  /** One ASCII character, default ",". */
  delimiter?: string;
}
export interface CsvEncodeOptions {
  /** Column names, in order (default: the keys of the first record, for object records; a later record with another field is then INVALID_RECORD, never dropped). */
  columns?: string[];
  /** Write the column row first (default true for object records). */
  header?: boolean;
  /** One character other than a quote, CR or LF; default ",". */
  delimiter?: string;
  /** Line end, default "\r\n" (RFC 4180). */
  eol?: '\r\n' | '\n';
}
/** RFC 4180 CSV. Values stay strings when decoding; bad quoting, a row wider or narrower than the header, invalid UTF-8 → INVALID_RECORD "row N". */
export declare const csv: {
  /** Byte chunks (split anywhere) → rows: objects keyed by the header, or string arrays with `header: false`. */
  decode<T = Record<string, string>>(options?: CsvDecodeOptions): Step<Uint8Array, T>;
  /** Rows (objects or arrays) → one Uint8Array per chunk of rows: null/undefined empty, Date ISO, other objects JSON. */
  encode<T = Record<string, unknown> | unknown[]>(options?: CsvEncodeOptions): Step<T, Bytes>;
};
/** A step from a sans-IO transformer factory (`push(items) => out[]`, `end() => out[]`), made fresh per run. */
export declare function transformStep<I, O>(name: string, make: () => { push(items: I[]): O[]; end(): O[] }): Step<I, O>;
/** A custom step: `run(input, ctx)` maps an async iterable of record chunks (arrays) to another. */
export declare function defineStep<I, O>(name: string, run: (input: AsyncIterable<I[]>, ctx: StepContext) => AsyncIterable<O[]>): Step<I, O>;
/** What a custom step or sink gets besides its input. */
export interface StepContext {
  /** Aborts when the run fails or is aborted: stop then. */
  signal: AbortSignal;
  /** The run's clock (PipelineOptions.clock). */
  clock: Clock;
  /** Fails the run with `error`. */
  fail(error: unknown): void;
  /** Its position and name for messages, e.g. "step 2 (map)" or "sink (mine)". */
  label: string;
}

// ---- sinks ----
/** Sends the byte chunks (Uint8Array or string records) with the SDK's send options. */
export declare function toPipe(options: SendOptions): Sink<Uint8Array | string>;
/** The records, in order, as the report's `result`. */
export declare function collect<T>(): Sink<T, T[]>;
/** A custom sink: `run(input, ctx)` consumes the record chunks (arrays); its result is the report's `result`. An error of its own → SINK_FAILED. */
export declare function defineSink<I, R = undefined>(name: string, run: (input: AsyncIterable<I[]>, ctx: StepContext) => Promise<R> | R): Sink<I, R>;
export interface DeliveryInfo {
  /** Idempotency key: the item's position in the sink's input (or `key(item, seq)`), stable across retries and re-runs over the same input. */
  key: string;
  /** 1 for the first try. */
  attempt: number;
  /** Aborts when the run fails or is aborted. */
  signal: AbortSignal;
}
export interface RetryOptions {
  /** Tries in all, including the first. Default 3. */
  attempts?: number;
  /** Delay before retry n: 'exponential' (baseDelayMs·2^(n−1), default), 'fixed' (baseDelayMs) or a function of n returning milliseconds. */
  backoff?: 'exponential' | 'fixed' | ((attempt: number) => number);
  /** Milliseconds, default 100. */
  baseDelayMs?: number;
  /** Milliseconds, the longest delay. Default 30 000. */
  maxDelayMs?: number;
  /** true (default): the delay is drawn from [d/2, d]; a number j in (0, 1]: from [d(1−j), d]; false: none. */
  jitter?: boolean | number;
  /** Whether a failure is worth another try (default: unless `error.retryable === false`). */
  retryOn?: (error: unknown, attempt: number) => boolean;
}
/** A dead-letter entry, as a dead-letter sink receives it (NDJSON, one per line). */
export interface DeadLetter<T> {
  /** The item's idempotency key. */
  key: string;
  /** Attempts made. */
  attempts: number;
  /** The last error's code, when it had one. */
  code?: string;
  /** The last error's message. */
  error: string;
  /** The item (a record, or a batch after batch()). */
  record: T;
}
export interface SinkOptions<T> {
  /** Retries of a failed delivery. Default: 3 attempts, exponential backoff from 100 ms. */
  retry?: RetryOptions;
  /** Where an item goes after its last failed attempt: a function, or a sink (e.g. toPipe) that receives NDJSON DeadLetter entries. Without it the run fails with SINK_FAILED. */
  deadLetter?: ((item: T, info: { key: string; error: unknown; attempts: number }) => unknown) | Sink<Uint8Array | string>;
  /** Deliveries in flight at once. Default 1 (in order). */
  concurrency?: number;
  /** The idempotency key of an item: default its position in the sink's input. */
  key?: (item: T, seq: number) => string | number;
  /** Random numbers in [0, 1) for jitter (tests). Default Math.random. */
  random?: () => number;
}
/** Delivers each record (or batch) with `fn(item, { key, attempt, signal })`, retried per `retry`. */
export declare function sink<T>(fn: (item: T, info: DeliveryInfo) => unknown, options?: SinkOptions<T>): Sink<T>;
export interface PartitionOptions<T> extends Omit<SendOptions, 'path'> {
  /** One stream path per worker. */
  paths: string[];
  /** Records with equal keys go to the same path, in order (FNV-1a of String(key)); default round-robin. */
  key?: (record: T) => unknown;
  /** How each lane's records become bytes (default ndjson.encode()). */
  encode?: Step<T, Uint8Array>;
}
/** Spreads the records over several stream paths, one transfer (worker) per path. */
export declare function partition<T>(options: PartitionOptions<T>): Sink<T>;

// ---- run on arrival ----
/** A peer that arrived: spread it into toPipe()/fromPipe(). */
export interface Peer {
  /** Relay base URL and stream path, from the Connect API's data URL. */
  relay: string; path: string;
  /** The token of the serve options. */
  token?: string;
  /** Already met on the Connect API. */
  rendezvous: false;
  /** Aborts when serving is aborted. */
  signal: AbortSignal;
  /** 1 for the first peer served. */
  round: number;
  /** The Connect API's answer. */
  dataUrl: string;
}
export interface ServeOptions {
  /** Relay base URL. */
  relay: string;
  /** Stream path. */
  path: string;
  /** 'await-reader': the producer side waits for each consumer; 'await-writer': the consumer side waits for each producer. */
  mode: 'await-reader' | 'await-writer';
  /** Access token (PROTOCOL.md §6). */
  token?: string;
  /** Seconds per wait on the Connect API (then it waits again). Default: no limit. */
  timeout?: number;
  /** Aborting it stops serving, as `abort()`. */
  signal?: AbortSignal;
  /** Serve this many peers, then stop. Default: until aborted. */
  rounds?: number;
  /** After each round that completed, with its report. */
  onRound?: (report: PipelineReport<unknown>, round: number) => void;
  /** After each round that failed (serving goes on). */
  onError?: (error: HttpipeError, round: number) => void;
}
export interface ServeReport {
  /** Peers served, completed rounds, failed rounds. */
  rounds: number; completed: number; failed: number;
  /** The completed rounds' reports. */
  reports: PipelineReport<unknown>[];
  failures: Array<{ round: number; error: unknown }>;
  /** Milliseconds since serve() was called. */
  durationMs: number;
  /** Whether serving was aborted. */
  aborted: boolean;
  /** The round in progress (stats() only). */
  current?: PipelineReport<unknown>;
}
/** Runs `factory(peer)` for every peer that arrives on the Connect API, one at a time. */
export declare function serve(factory: (peer: Peer) => Run<unknown>, options: ServeOptions): {
  /** Resolves after abort() (or `rounds` peers); rejects on a refusal such as UNAUTHORIZED. */
  done: Promise<ServeReport>;
  /** Stops waiting and tears down the current round; `done` resolves. */
  abort(reason?: unknown): void;
  /** The summary so far. */
  stats(): ServeReport;
};
