// The receiver code users write (issue 29): `for await` over a received stream, then the
// chunks into a Blob and a Response, without a cast and without the DOM.AsyncIterable lib
// (tsconfig.vite.json is Vite's template lib: ES2020 + DOM + DOM.Iterable). Checked in every
// setup with a Blob: DOM, WebWorker, @types/node, workers-types, Deno.
import { receive, receiveWithCode, openReader } from 'httpipe';

const relay = 'http://127.0.0.1:8080';

export async function saveAsBlob(path: string): Promise<Blob> {
  const { stream, contentType } = await receive({ relay, path });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return new Blob(chunks, { type: contentType ?? 'application/octet-stream' });
}

export async function byCode(code: string): Promise<Response> {
  const { stream } = await receiveWithCode(code, { relay });
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const first = chunks[0];
  return first ? new Response(first) : new Response(new Blob(chunks));
}

export async function reader(path: string): Promise<number> {
  let bytes = 0;
  for await (const chunk of await openReader({ relay, path })) bytes += chunk.byteLength;
  return bytes;
}
