// Type tests of the API with a web platform's own types: the DOM lib, the WebWorker lib,
// @types/node, @cloudflare/workers-types and Deno (tsconfig.json, tsconfig.webworker.json,
// tsconfig.node.json, tsconfig.workers.json, deno check). The package's empty global declarations must merge with
// theirs: values from the SDK have the runtime's full types, and the runtime's values fit the SDK.
import { init, send, receive, openWriter, openReader, encryptStream, decryptStream, pipeline, lines, collect, fromPipe, gzip, toPipe, type Run } from 'httpipe';

const relay = 'http://127.0.0.1:8080';

export async function web(): Promise<void> {
  // the runtime's values as SDK inputs
  await init(new URL('https://cdn.example/httpipe_wasm_bg.wasm'));
  await init(fetch('https://cdn.example/httpipe_wasm_bg.wasm'));
  await init(new Request('https://cdn.example/httpipe_wasm_bg.wasm'));
  await send(new Blob(['hello']), { relay, path: '/p', signal: AbortSignal.timeout(10_000) });
  const bytes = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new TextEncoder().encode('x')); c.close(); } });
  await send(bytes, { relay, path: '/p' });
  await send(bytes.pipeThrough(encryptStream({ passphrase: 'pw' })), { relay, path: '/p' });

  // the SDK's values with the runtime's members
  const { stream } = await receive({ relay, path: '/p' });
  const reader = stream.getReader();
  const first = await reader.read();
  if (!first.done) { const chunk: Uint8Array = first.value; void chunk.byteLength; }
  reader.releaseLock();
  const plain: ReadableStream<Uint8Array> = (await openReader({ relay, path: '/p' })).pipeThrough(decryptStream({ passphrase: 'pw' }));
  await plain.pipeTo(new WritableStream<Uint8Array>({ write(c) { void c.byteLength; } }));
  const w = openWriter({ relay, path: '/log' });
  const writer = w.writable.getWriter();
  await writer.write(new TextEncoder().encode('line\n'));
  await writer.close();
  void (await w.done).relayState;

  // byte sources in pipelines: Blob and ReadableStream records are Uint8Array chunks
  const fromBlob: Run<string[]> = pipeline(new Blob(['a\nb\n']), lines(), collect<string>());
  const fromStream: Run<Uint8Array[]> = pipeline(bytes, collect<Uint8Array>());
  const ac = new AbortController();
  pipeline(fromPipe({ relay, path: '/in', signal: ac.signal }), gzip(), toPipe({ relay, path: '/out' }), { signal: ac.signal });
  void fromBlob; void fromStream;
}
