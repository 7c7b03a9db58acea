// Types of the httpipe package (contract: docs/js-api.md).

/** Stable error codes of {@link HttpipeError}. */
export type HttpipeErrorCode =
  | 'UNAUTHORIZED' | 'FORBIDDEN' | 'CONNECT_TIMEOUT' | 'PEER_DISCONNECTED' | 'TRUNCATED'
  | 'DECRYPT_FAILED' | 'WRONG_KEY' | 'RELAY_ERROR' | 'ABORTED' | 'UNSUPPORTED' | 'NETWORK'
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

/** Loads the wasm module (optional: async functions do it on first use). */
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

export * from './pipeline.js';
