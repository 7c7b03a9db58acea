// Functions a browser page and Node both run from the same source text: `*_SRC` goes into
// `page.evaluate` and is evaluated there, the function of the same name is it here.
// `gen(total, seed)`: deterministic pseudo-random bytes (xorshift32), a ReadableStream of
// 256 KiB chunks. `sum(stream)`: a cheap order-sensitive checksum of a byte stream.
export const GEN_SRC = `(total, seed) => {
  let x = seed >>> 0 || 1;
  let sent = 0;
  return new ReadableStream({
    pull(ctrl) {
      if (sent >= total) { ctrl.close(); return; }
      const n = Math.min(256 * 1024, total - sent);
      const words = new Uint32Array(Math.ceil(n / 4));
      for (let i = 0; i < words.length; i++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; words[i] = x; }
      ctrl.enqueue(new Uint8Array(words.buffer, 0, n));
      sent += n;
    },
  }, { highWaterMark: 0 });
}`;
// eslint-disable-next-line no-eval
export const gen = (0, eval)(GEN_SRC);

// FNV-1a over the bytes, and their count: { bytes, fnv }.
export const SUM_SRC = `async (stream) => {
  let h = 0x811c9dc5, n = 0;
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (let i = 0; i < value.length; i++) { h ^= value[i]; h = Math.imul(h, 16777619) >>> 0; }
    n += value.length;
  }
  return { bytes: n, fnv: h >>> 0 };
}`;
// eslint-disable-next-line no-eval
export const sum = (0, eval)(SUM_SRC);

// True when the page's WebCrypto has ChaCha20-Poly1305 (and it seals 100 bytes into 116).
export const CHACHA_PROBE_SRC = `async () => {
  try {
    const s = crypto.subtle;
    const k = await s.importKey('raw-secret', new Uint8Array(32).fill(7), { name: 'ChaCha20-Poly1305' }, false, ['encrypt']);
    const ct = new Uint8Array(await s.encrypt({ name: 'ChaCha20-Poly1305', iv: new Uint8Array(12) }, k, new Uint8Array(100)));
    return ct.length === 116;
  } catch { return false; }
}`;

/**
 * Opens `origin`/version in `page` (Playwright's, puppeteer's or lib/webkit.mjs's: any with
 * goto and evaluate) and loads the package there as `window.httpipe`, initialised.
 */
export async function loadSdkPage(page, origin) {
  await page.goto(`${origin}/version`);
  await page.evaluate(async () => { window.httpipe = await import('/assets/pkg/index.js'); await window.httpipe.init(); });
}

/**
 * The page (Playwright's or lib/webkit.mjs's) receives `path` from `relayUrl` and keeps reading
 * in the background, yielding to its event loop between chunks, as a page that shows progress
 * or writes a file does (a loop of reads that all resolve at once starved the page's own timers:
 * polling for `window.got` timed out while 700 MB had arrived). Resolves once more than `bytes`
 * arrived.
 */
export async function pageReceivesInBackground(page, relayUrl, path, bytes = 4 << 20) {
  await page.evaluate(async ({ relayUrl, path }) => {
    const r = await window.httpipe.receive({ relay: relayUrl, path });
    const reader = r.stream.getReader();
    window.got = 0;
    (async () => {
      for (;;) {
        window.got += (await reader.read()).value.length;
        await new Promise((res) => setTimeout(res, 0));
      }
    })();
  }, { relayUrl, path });
  await page.waitForFunction((n) => window.got > n, bytes, { polling: 50 });
}
