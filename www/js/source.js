// What the sender sends: one file as is, several files or a folder as one streaming ZIP
// (client-zip, with the paths inside the folder; sizes predicted exactly so the receiver sees
// a percentage), or text as UTF-8.
import { makeZip, predictLength } from '/assets/vendor/client-zip.js';
import { zipName } from './folders.js';

export const TEXT_TYPE = 'text/plain;charset=utf-8';

/**
 * @param {{entries?: {file?: File, path: string}[], files?: File[], text?: string}} items
 *   `entries`: files with their relative paths ("photos/a.jpg"; "photos/empty/" for an empty
 *   folder); `files`: plain files (their names)
 * @returns {{kind: 'file'|'zip'|'text', name: string, size: number, type: string, count: number,
 *   open: () => ReadableStream<Uint8Array>}}
 */
export function describeItems(items) {
  if (items.text !== undefined) {
    const bytes = new TextEncoder().encode(items.text);
    return { kind: 'text', name: 'text.txt', size: bytes.length, type: TEXT_TYPE, count: 1,
      open: () => new Blob([bytes]).stream() };
  }
  const entries = items.entries || (items.files || []).map((file) => ({ file, path: file.name }));
  const files = entries.filter((e) => e.file);
  if (entries.length === 1 && files.length === 1 && !entries[0].path.includes('/')) {
    const f = files[0].file;
    return { kind: 'file', name: f.name || 'file', size: f.size, type: f.type || 'application/octet-stream', count: 1,
      open: () => f.stream() };
  }
  // client-zip: an entry with a name but neither input nor size is an empty folder
  const meta = entries.map((e) => (e.file ? { name: e.path, size: e.file.size } : { name: e.path }));
  return {
    kind: 'zip',
    name: zipName(entries),
    size: Number(predictLength(meta)),
    type: 'application/zip',
    count: files.length,
    open: () => makeZip(entries.map((e) => (e.file
      ? { input: e.file, name: e.path, lastModified: e.file.lastModified, size: e.file.size }
      : { name: e.path }))),
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
