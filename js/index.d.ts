// Types of the httpipe package (contract: docs/js-api.md).

/** Stable error codes of {@link HttpipeError}. */
export type HttpipeErrorCode =
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'CONNECT_TIMEOUT' | 'PEER_DISCONNECTED' | 'TRUNCATED'
  | 'DECRYPT_FAILED' | 'WRONG_KEY' | 'RELAY_ERROR' | 'ABORTED' | 'UNSUPPORTED' | 'NETWORK'
  // the package: init() could not fetch, read or instantiate the .wasm module
  | 'WASM_LOAD_FAILED'
  // pipelines: a record that can't be decoded, a step's callback threw, a sink gave up
  | 'INVALID_RECORD' | 'STEP_FAILED' | 'SINK_FAILED';

/** The one error class of the package. */
export declare class HttpipeError extends Error {
  constructor(message: string, code: HttpipeErrorCode, options?: { cause?: unknown });
  readonly name: 'HttpipeError';
  readonly code: HttpipeErrorCode;
}

/** A progress report: plaintext bytes so far, the total when known, a smoothed rate. */
export interface Progress {
  bytes: number;
  total?: number;
  bytesPerSecond: number;
}

export interface CommonOptions {
  /** Relay base URL, e.g. "https://relay.example" or "http://127.0.0.1:8080". */
  relay: string;
  /** Stream path, e.g. "/team/reports/2026-11". */
  path: string;
  /** Access token (PROTOCOL.md §6), sent as `Authorization: Bearer`. */
  token?: string;
  /** Use the Connect API first (PROTOCOL.md §5). Default true. */
  rendezvous?: boolean;
  /** Seconds to wait for the peer (rendezvous; without it, the consumer's wait). */
  timeout?: number;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Encrypt (send) / decrypt (receive) with a passphrase (age scrypt stanza). */
  passphrase?: string;
}

export interface SendOptions extends CommonOptions {
  /** X25519 recipients "age1..." (instead of a passphrase). */
  recipients?: string[];
  /** Encrypted format, default 'age-rt' (real-time records); 'age' for the age CLI. */
  format?: 'age-rt' | 'age';
  /** Forwarded to the consumer (plain streams; encrypted streams are application/octet-stream). */
  contentType?: string;
  /** Forwarded as Content-Disposition. */
  filename?: string;
  /** Plaintext size in bytes, for progress totals (taken from Blob/bytes sources). */
  size?: number;
  /** Milliseconds: batch small writes and hand them on at most this late. */
  autoFlush?: number;
  /** Upload transport: 'auto' (default) streams where possible and falls back to segmented. */
  upload?: 'auto' | 'stream' | 'segmented';
  /** Segmented upload part size in bytes (default 1 MiB, at most 16 MiB). */
  partSize?: number;
}

export interface ReceiveOptions extends CommonOptions {
  /** X25519 identities "AGE-SECRET-KEY-1..." to decrypt with. */
  identities?: string[];
}

export interface SendReport {
  /** Plaintext bytes sent. */
  bytes: number;
  durationMs: number;
  transport: 'stream' | 'segmented';
  /** The relay's final status line, "[STATE:TRANSFER_SUCCESSFUL]". */
  relayState: string;
}

export interface Received {
  stream: ReadableStream<Uint8Array>;
  contentType?: string;
  filename?: string;
  /** Content-Length of a plain stream, when the producer sent one. */
  size?: number;
}

export type Source = Blob | ReadableStream<Uint8Array> | Uint8Array | ArrayBuffer | string
  | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;

export interface ConnectOptions {
  relay: string;
  path: string;
  mode: 'await-reader' | 'await-writer';
  token?: string;
  timeout?: number;
  signal?: AbortSignal;
}

export interface Writer {
  writable: WritableStream<Uint8Array>;
  /** Hands batched writes (autoFlush) on now. */
  flush(): Promise<void>;
  /** Resolves with the report once the consumer got everything; rejects like `send`. */
  done: Promise<SendReport>;
}

export interface EncryptOptions { passphrase?: string; recipients?: string[]; format?: 'age-rt' | 'age'; }
export interface DecryptOptions { passphrase?: string; identities?: string[]; }

/** Input accepted by {@link init}. */
export type InitInput = string | URL | Request | Response | BufferSource | WebAssembly.Module;

/**
 * Loads the wasm module. Optional: every async function does it on first use (Node and Deno
 * load it at import). Rejects with WASM_LOAD_FAILED, naming the location it tried; calling it
 * again tries again.
 */
export declare function init(input?: InitInput | Promise<InitInput>): Promise<void>;
export declare function send(source: Source, options: SendOptions): Promise<SendReport>;
export declare function receive(options: ReceiveOptions): Promise<Received>;
export declare function connect(options: ConnectOptions): Promise<string>;
export declare function openWriter(options: SendOptions): Writer;
export declare function openReader(options: ReceiveOptions): Promise<ReadableStream<Uint8Array>>;
export declare function encryptStream(options: EncryptOptions): TransformStream<Uint8Array, Uint8Array>;
export declare function decryptStream(options: DecryptOptions): TransformStream<Uint8Array, Uint8Array>;
/** Needs the module loaded (`await init()` in browsers). */
export declare function generateIdentity(): string;
/** Needs the module loaded (`await init()` in browsers). */
export declare function identityToRecipient(identity: string): string;

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

/** The records a source yields. */
export type RecordOf<S> =
  S extends ByteSource ? Uint8Array
  : S extends SourceFactory<infer T> ? T
  : S extends (...args: any[]) => infer R ? RecordOf<Awaited<R>>
  : S extends Promise<infer P> ? RecordOf<P>
  : S extends AsyncIterable<infer T> ? T
  : S extends Iterable<infer T> ? T
  : never;

/** Timers used by batch() and retries: tests pass a fake clock. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
export interface PipelineOptions {
  /** Aborting it aborts the run (like `run.abort(reason)`). */
  signal?: AbortSignal;
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
  /** Records the source yielded; items the sink delivered. */
  records: { in: number; out: number };
  /** Bytes the source yielded; bytes the sink was given (byte records only). */
  bytes: { in: number; out: number };
  source: { name: 'source'; recordsOut: number; bytesOut: number };
  steps: StepStats[];
  sink: SinkStats;
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
  readonly signal: AbortSignal;
}

// One overload per length, the one without options first: TypeScript checks an argument once
// per call, so overloads must not overlap in arity more than this (a step such as batch() takes
// its record type from its neighbours).
export declare function pipeline<S extends PipelineSource<any>, R>(source: S, sink: Sink<RecordOf<S>, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, R>(source: S, s1: Step<RecordOf<S>, A>, sink: Sink<A, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, R>(source: S, sink: Sink<RecordOf<S>, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, sink: Sink<B, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, R>(source: S, s1: Step<RecordOf<S>, A>, sink: Sink<A, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, sink: Sink<C, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, sink: Sink<B, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, sink: Sink<D, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, sink: Sink<C, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, sink: Sink<E, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, sink: Sink<D, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, sink: Sink<F, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, sink: Sink<E, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, G, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, sink: Sink<G, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, sink: Sink<F, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, G, H, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, s8: Step<G, H>, sink: Sink<H, R>): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, G, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, sink: Sink<G, R>, options: PipelineOptions): Run<R>;
export declare function pipeline<S extends PipelineSource<any>, A, B, C, D, E, F, G, H, R>(source: S, s1: Step<RecordOf<S>, A>, s2: Step<A, B>, s3: Step<B, C>, s4: Step<C, D>, s5: Step<D, E>, s6: Step<E, F>, s7: Step<F, G>, s8: Step<G, H>, sink: Sink<H, R>, options: PipelineOptions): Run<R>;

// ---- sources ----
/** The stream at `options.path` as byte chunks; a producer failing mid-stream → TRUNCATED. */
export declare function fromPipe(options: ReceiveOptions): SourceFactory<Uint8Array>;
/** A custom source: `open(ctx)` returns an async iterable of record chunks (arrays), once per run. */
export declare function defineSource<T>(name: string, open: (ctx: { signal: AbortSignal }) => AsyncIterable<T[]>): SourceFactory<T>;

// ---- steps ----
export interface MapOptions {
  /** Records in flight at once (async fn). Default 1. */
  concurrency?: number;
  /** Keep input order (default true); false passes results on as they finish. */
  ordered?: boolean;
}
export declare function map<I, O>(fn: (record: I, index: number) => O | Promise<O>, options?: MapOptions): Step<I, O>;
export declare function filter<I, O extends I = I>(fn: ((record: I, index: number) => record is O) | ((record: I, index: number) => unknown)): Step<I, O>;
export declare function flatMap<I, O>(fn: (record: I, index: number) => Iterable<O> | AsyncIterable<O> | O[] | null | undefined | Promise<Iterable<O> | O[] | null | undefined>): Step<I, O>;
export interface TapOptions {
  /** When `buffer` records wait for the side branch: 'block' (default) holds the main line; 'drop' skips the side branch for that record. */
  policy?: 'block' | 'drop';
  /** Records waiting for the side branch, at most. Default 1024. */
  buffer?: number;
}
export declare function tap<T>(fn: (record: T, index: number) => unknown, options?: TapOptions): Step<T, T>;
export interface BatchOptions<T> {
  /** Records per batch, at most (default 1000; unlimited when only maxBytes is given). */
  maxItems?: number;
  /** Pass the batch on once its size reaches this many bytes (`size`). */
  maxBytes?: number;
  /** Milliseconds after a batch's first record at which it is passed on, full or not. */
  maxWaitMs?: number;
  /** A record's size for maxBytes: default byteLength / string length / JSON length. */
  size?: (record: T) => number;
}
export declare function batch<T>(options?: BatchOptions<T>): Step<T, T[]>;
export declare function meter<T>(name?: string): Step<T, T>;
export declare function gzip(): Step<Uint8Array, Uint8Array>;
export declare function gunzip(): Step<Uint8Array, Uint8Array>;
export declare function encrypt(options: EncryptOptions): Step<Uint8Array, Uint8Array>;
export declare function decrypt(options: DecryptOptions): Step<Uint8Array, Uint8Array>;
export declare function lines(options?: { skipEmpty?: boolean }): Step<Uint8Array | string, string>;
export declare const ndjson: {
  /** Byte chunks (or strings) → one JSON value per non-blank line; bad JSON → INVALID_RECORD "line N". */
  decode<T = unknown>(options?: { reviver?: (this: any, key: string, value: any) => any }): Step<Uint8Array | string, T>;
  /** Values → one Uint8Array per chunk of records, each record a line. */
  encode<T = unknown>(options?: { replacer?: (this: any, key: string, value: any) => any }): Step<T, Uint8Array>;
};
/** A step from a sans-IO transformer factory (`push(items) => out[]`, `end() => out[]`). */
export declare function transformStep<I, O>(name: string, make: () => { push(items: I[]): O[]; end(): O[] }): Step<I, O>;
/** A custom step: `run(input, ctx)` maps an async iterable of record chunks (arrays) to another. */
export declare function defineStep<I, O>(name: string, run: (input: AsyncIterable<I[]>, ctx: StepContext) => AsyncIterable<O[]>): Step<I, O>;
export interface StepContext {
  signal: AbortSignal;
  clock: Clock;
  /** Fails the run with `error`. */
  fail(error: unknown): void;
  label: string;
}

// ---- sinks ----
/** Sends the byte chunks (Uint8Array or string records) with the SDK's send options. */
export declare function toPipe(options: SendOptions): Sink<Uint8Array | string>;
export declare function collect<T>(): Sink<T, T[]>;
export interface DeliveryInfo {
  /** Idempotency key: the item's position in the sink's input (or `key(item, seq)`), stable across retries and re-runs over the same input. */
  key: string;
  /** 1 for the first try. */
  attempt: number;
  signal: AbortSignal;
}
export interface RetryOptions {
  /** Tries in all, including the first. Default 3. */
  attempts?: number;
  /** Delay before retry n: 'exponential' (baseDelayMs·2^(n−1), default), 'fixed' (baseDelayMs) or a function. */
  backoff?: 'exponential' | 'fixed' | ((attempt: number) => number);
  /** Milliseconds, default 100. */
  baseDelayMs?: number;
  /** Milliseconds, default 30 000. */
  maxDelayMs?: number;
  /** true (default): the delay is drawn from [d/2, d]; a number j in (0, 1]: from [d(1−j), d]; false: none. */
  jitter?: boolean | number;
  /** Whether a failure is worth another try (default: unless `error.retryable === false`). */
  retryOn?: (error: unknown, attempt: number) => boolean;
}
export interface DeadLetter<T> { key: string; attempts: number; code?: string; error: string; record: T }
export interface SinkOptions<T> {
  retry?: RetryOptions;
  /** Where an item goes after its last failed attempt: a function, or a sink (e.g. toPipe) that receives NDJSON DeadLetter entries. Without it the run fails with SINK_FAILED. */
  deadLetter?: ((item: T, info: { key: string; error: unknown; attempts: number }) => unknown) | Sink<Uint8Array | string>;
  /** Deliveries in flight at once. Default 1 (in order). */
  concurrency?: number;
  /** The idempotency key of an item: default its position in the sink's input. */
  key?: (item: T, seq: number) => string | number;
  /** Random source for jitter (tests). */
  random?: () => number;
}
export declare function sink<T>(fn: (item: T, info: DeliveryInfo) => unknown, options?: SinkOptions<T>): Sink<T>;
export interface PartitionOptions<T> extends Omit<SendOptions, 'path'> {
  /** One stream path per worker. */
  paths: string[];
  /** Records with equal keys go to the same path, in order (FNV-1a of String(key)); default round-robin. */
  key?: (record: T) => unknown;
  /** How each lane's records become bytes (default ndjson.encode()). */
  encode?: Step<T, Uint8Array>;
}
export declare function partition<T>(options: PartitionOptions<T>): Sink<T>;

// ---- run on arrival ----
export interface Peer {
  relay: string; path: string; token?: string;
  /** Already met on the Connect API: spread the peer into toPipe()/fromPipe(). */
  rendezvous: false;
  signal: AbortSignal;
  /** 1 for the first peer served. */
  round: number;
  /** The Connect API's answer. */
  dataUrl: string;
}
export interface ServeOptions {
  relay: string; path: string;
  /** 'await-reader': the producer side waits for each consumer; 'await-writer': the consumer side waits for each producer. */
  mode: 'await-reader' | 'await-writer';
  token?: string;
  /** Seconds per wait on the Connect API (then it waits again). */
  timeout?: number;
  signal?: AbortSignal;
  /** Serve this many peers, then stop. Default: until aborted. */
  rounds?: number;
  /** After each round that completed, with its report. */
  onRound?: (report: PipelineReport<unknown>, round: number) => void;
  onError?: (error: HttpipeError, round: number) => void;
}
export interface ServeReport {
  rounds: number; completed: number; failed: number;
  reports: PipelineReport<unknown>[];
  failures: Array<{ round: number; error: unknown }>;
  durationMs: number; aborted: boolean;
  current?: PipelineReport<unknown>;
}
export declare function serve(factory: (peer: Peer) => Run<unknown>, options: ServeOptions): {
  /** Resolves after abort() (or `rounds` peers); rejects on a refusal such as UNAUTHORIZED. */
  done: Promise<ServeReport>;
  abort(reason?: unknown): void;
  stats(): ServeReport;
};
