// Shared helpers for the SDK tests: the built package, random sources with a running
// checksum, stream hashing, unique stream paths, child processes.
import { createHash, randomFillSync } from 'node:crypto';
import path from 'node:path';
import { ROOT } from './relay.mjs';

export const PKG = path.join(ROOT, 'pkg', 'index.js');

let counter = 0;
/** A fresh stream path for one test. */
export function uniquePath(tag = 't') {
  counter += 1;
  return `/sdk-test/${tag}-${process.pid}-${Date.now()}-${counter}`;
}

/**
 * A ReadableStream of `total` random bytes in chunks of `chunk` bytes (pull-based, so
 * backpressure holds) and a promise of its sha256 once fully read.
 */
export function randomSource(total, chunk = 256 * 1024) {
  const hash = createHash('sha256');
  let sent = 0;
  let resolveDigest;
  const digest = new Promise((r) => { resolveDigest = r; });
  const stream = new ReadableStream({
    pull(ctrl) {
      if (sent >= total) {
        ctrl.close();
        resolveDigest(hash.digest('hex'));
        return;
      }
      const n = Math.min(chunk, total - sent);
      const buf = randomFillSync(new Uint8Array(n));
      hash.update(buf);
      sent += n;
      ctrl.enqueue(buf);
    },
  }, { highWaterMark: 0 });
  return { stream, digest };
}

/** Random bytes and their sha256. */
export function randomBytes(n) {
  const b = randomFillSync(new Uint8Array(n));
  return { bytes: b, sha256: createHash('sha256').update(b).digest('hex') };
}

/** Reads a stream to its end: byte count and sha256 (rejects with the stream's error). */
export async function hashStream(stream) {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const c of stream) {
    hash.update(c);
    bytes += c.byteLength;
  }
  return { bytes, sha256: hash.digest('hex') };
}

export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Resolves with the rejection of `p` (fails if it resolves). */
export async function rejection(p) {
  try {
    const v = await p;
    throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
  } catch (e) {
    return e;
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `p`, or a rejection naming `what` once `ms` passed. The timer ends with `p`: an uncleared
 * one kept the test file's process alive for its whole `ms` after the last test (sdk-resume
 * idled 55 s).
 */
export function within(p, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * The channel whose key is `key` (PROTOCOL.md §5.1), as a peer calls it: the URL names the
 * derived id (`query`), the key goes in a header (`headers`), never in the URL.
 */
export function channelOf(key) {
  const id = createHash('sha256').update('httpipe channel v1\n').update(key).digest('base64url').slice(0, 22);
  return { id, query: `channel=${id}`, headers: { 'X-Httpipe-Channel-Key': key } };
}
