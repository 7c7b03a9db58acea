// What the sender sends: one file as is, several files as one streaming ZIP (client-zip,
// sizes predicted exactly so the receiver sees a percentage), or text as UTF-8.
import { makeZip, predictLength } from '/assets/vendor/client-zip.js';

/**
 * @param {{files?: File[], text?: string}} items
 * @returns {{kind: 'file'|'zip'|'text', name: string, size: number, type: string, open: () => ReadableStream<Uint8Array>}}
 */
export function describeItems(items) {
  if (items.text !== undefined) {
    const bytes = new TextEncoder().encode(items.text);
    return { kind: 'text', name: 'text.txt', size: bytes.length, type: 'text/plain;charset=utf-8',
      open: () => new Blob([bytes]).stream() };
  }
  const files = items.files || [];
  if (files.length === 1) {
    const f = files[0];
    return { kind: 'file', name: f.name || 'file', size: f.size, type: f.type || 'application/octet-stream', open: () => f.stream() };
  }
  const entries = files.map((f) => ({ name: f.name, size: f.size }));
  return {
    kind: 'zip',
    name: `httpipe-${files.length}-files.zip`,
    size: Number(predictLength(entries)),
    type: 'application/zip',
    open: () => makeZip(files.map((f) => ({ input: f, name: f.name, lastModified: f.lastModified, size: f.size }))),
  };
}

/** Passes a stream through, reporting the cumulative byte count. */
export function counting(stream, onBytes) {
  let n = 0;
  return stream.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      n += chunk.byteLength;
      onBytes(n);
      controller.enqueue(chunk);
    },
  }));
}

/**
 * Predicts whether this page's uploads go as segmented parts (PROTOCOL.md §4, §10): no
 * streaming request bodies in this browser, or a plain-http page (HTTP/1.1, no streaming).
 */
export function expectSegmented() {
  if (location.protocol === 'http:') return true;
  let duplexRead = false;
  try {
    const has = new Request(location.origin, {
      method: 'POST', body: new ReadableStream(),
      get duplex() { duplexRead = true; return 'half'; },
    }).headers.has('Content-Type');
    return !(duplexRead && !has);
  } catch {
    return true;
  }
}
