// Type tests of the transfer API, runtime-neutral: no DOM, Node, Workers or Deno type is named
// here, so this file checks under every tsconfig.*.json (lib ES2022 alone too) and Deno.
// Every line must type-check under --strict; every `@ts-expect-error` line must be an error.
import {
  init, send, receive, connect, openWriter, openReader, encryptStream, decryptStream,
  generateIdentity, generateHybridIdentity, identityToRecipient, HttpipeError, sendWithCode, receiveWithCode,
  cryptoBackend, loadPostQuantum,
  type CodeSend, type SendWithCodeOptions, type ReceiveWithCodeOptions,
  type HttpipeErrorCode, type SendOptions, type ReceiveOptions, type SendReport, type Received,
  type Progress, type InitInput, type Source, type Writer,
} from 'httpipe';

// No `any` leaks out of the public types: each of these would be `true` for an `any`.
type IsAny<T> = 0 extends 1 & T ? true : false;
type NotAny<T> = IsAny<T> extends true ? never : T;
const relay = 'http://127.0.0.1:8080';

export async function transfers(): Promise<void> {
  await init();
  await init('https://cdn.example/httpipe_wasm_bg.wasm');
  await init(new Uint8Array([0, 97, 115, 109]));
  await init(Promise.resolve<InitInput>(new ArrayBuffer(8)));
  const onProgress = (p: Progress): void => { void (p.bytes + (p.total ?? 0) + p.bytesPerSecond); };
  const options: SendOptions = { relay, path: '/p', passphrase: 'pw', timeout: 30, autoFlush: 100, partSize: 1 << 20, upload: 'auto', onProgress };
  const report: NotAny<SendReport> = await send('hello', options);
  const transport: 'stream' | 'segmented' = report.transport;
  void transport;
  await send(new Uint8Array(3), { relay, path: '/p', recipients: [identityToRecipient(generateIdentity())], format: 'age' });
  const pq: string = generateHybridIdentity();
  await loadPostQuantum();
  await loadPostQuantum('https://cdn.example/httpipe_xwing_bg.wasm');
  await send(new Uint8Array(3), { relay, path: '/p', recipients: [identityToRecipient(pq)] });
  void decryptStream({ identities: [pq, 'AGE-SECRET-KEY-1...'] });
  await send([new Uint8Array(1), 'text'], { relay, path: '/p' });
  await send((async function* chunks() { yield 'a'; yield new Uint8Array(1); })(), { relay, path: '/p' });
  const r: NotAny<Received> = await receive({ relay, path: '/p', identities: ['AGE-SECRET-KEY-1...'] } satisfies ReceiveOptions);
  const size: number | undefined = r.size;
  void size;
  const dataUrl: string = await connect({ relay, path: '/p', mode: 'await-reader', timeout: 5 });
  void dataUrl;
  const w: Writer = openWriter({ relay, path: '/log', autoFlush: 500 });
  await w.flush();
  const done: SendReport = await w.done;
  void done;
  void (await openReader({ relay, path: '/p' }));
  void encryptStream({ passphrase: 'pw' });
  void decryptStream({ identities: [generateIdentity()] });
  const src: Source = 'text';
  void src;
  // short codes: the code derives the path and the key
  const byCode: NotAny<CodeSend> = await sendWithCode('hello', { relay, timeout: 60, onProgress } satisfies SendWithCodeOptions);
  const code: string = byCode.code;
  const sent: SendReport = await byCode.done;
  void sent;
  const got: NotAny<Received> = await receiveWithCode(code, { relay, receipt: 'manual' } satisfies ReceiveWithCodeOptions);
  void got.filename;
  // @ts-expect-error the code derives the path
  await sendWithCode('x', { relay, path: '/p' });
  // @ts-expect-error ...and the key
  await receiveWithCode(code, { relay, passphrase: 'pw' });
}

// Error codes: one exhaustive switch, the package's own WASM_LOAD_FAILED among them.
export function describe(e: unknown): string {
  if (!(e instanceof HttpipeError)) return 'not ours';
  const code: HttpipeErrorCode = e.code;
  switch (code) {
    case 'UNAUTHORIZED': case 'FORBIDDEN': return 'token';
    case 'CONNECT_TIMEOUT': case 'PEER_DISCONNECTED': case 'TRUNCATED': case 'NETWORK': return 'peer or network';
    case 'UNCONFIRMED': return 'ask the receiver';
    case 'DECRYPT_FAILED': case 'WRONG_KEY': return 'crypto';
    case 'WRONG_CODE': return 'check the code with the sender';
    case 'RELAY_BUSY': return 'try again in a moment';
    case 'RELAY_ERROR': case 'ABORTED': case 'UNSUPPORTED': return 'other';
    case 'WASM_LOAD_FAILED': return 'serve the .wasm file';
    case 'INVALID_RECORD': case 'STEP_FAILED': case 'SINK_FAILED': return 'pipeline';
    default: { const never: never = code; return never; }
  }
}
void new HttpipeError('x', 'WASM_LOAD_FAILED', { cause: 1 });

// ---- misuse ----
// @ts-expect-error not an error code
void new HttpipeError('x', 'NOPE');
// @ts-expect-error path is required
void send('x', { relay });
// @ts-expect-error format is 'age-rt' or 'age'
void send('x', { relay, path: '/p', format: 'gpg' });
// @ts-expect-error timeout is a number of seconds
void receive({ relay, path: '/p', timeout: '30s' });
// @ts-expect-error connect needs a mode
void connect({ relay, path: '/p' });
// (init(42) is not caught: the DOM lib's WebAssembly.Module is an empty interface, so TypeScript
// lets any value through where a Module is expected.)

// the payload cipher: a query, or a forced choice
const backend: 'node:crypto' | 'webcrypto' | 'wasm' = cryptoBackend();
void cryptoBackend('wasm');
void cryptoBackend('auto');
void backend;
// @ts-expect-error only 'wasm' or 'auto'
void cryptoBackend('openssl');
