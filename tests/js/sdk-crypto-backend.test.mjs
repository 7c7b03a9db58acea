// The payload cipher (issue #13, src/crypto/aead): in Node the package seals and opens payload
// chunks with node:crypto's ChaCha20-Poly1305 (detected once at init by a known-answer test),
// and falls back to the wasm cipher; `cryptoBackend()` says which and can force the wasm one.
// Both must be interchangeable: what one encrypts the other decrypts (age and age-rt,
// recipients and passphrase, sizes around the 64 KiB chunk), and a tampered chunk fails
// DECRYPT_FAILED under both without releasing its plaintext. (Every other Node test now runs
// its transfers with node:crypto.) Deno's detection: sdk-deno.test.mjs; workerd's:
// sdk-worker.test.mjs; Chromium and Firefox (no node:crypto): sdk-chromium / demo-firefox.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { PKG, rejection } from './lib/sdk.mjs';

const sdk = await import(PKG);
await sdk.init();
after(() => sdk.cryptoBackend('auto'));

async function collect(stream) {
  const parts = [];
  for await (const c of stream) parts.push(c);
  return new Uint8Array(Buffer.concat(parts));
}

/** Encrypts `bytes` with `backend`, in chunks of `chunk` bytes. */
async function encrypt(backend, bytes, options, chunk = 100_000) {
  sdk.cryptoBackend(backend);
  const src = new ReadableStream({
    start(c) {
      for (let i = 0; i < bytes.length; i += chunk) c.enqueue(bytes.subarray(i, i + chunk));
      c.close();
    },
  });
  return collect(src.pipeThrough(sdk.encryptStream(options)));
}

async function decrypt(backend, bytes, options) {
  sdk.cryptoBackend(backend);
  return collect(new Blob([bytes]).stream().pipeThrough(sdk.decryptStream(options)));
}

test('Node picks node:crypto at init; cryptoBackend() switches between it and wasm', () => {
  assert.equal(sdk.cryptoBackend(), 'node:crypto');
  assert.equal(sdk.cryptoBackend('wasm'), 'wasm');
  assert.equal(sdk.cryptoBackend(), 'wasm');
  assert.equal(sdk.cryptoBackend('auto'), 'node:crypto');
  assert.throws(() => sdk.cryptoBackend('openssl'), (e) => e.name === 'HttpipeError' && e.code === 'UNSUPPORTED');
});

test('what one backend encrypts the other decrypts: age and age-rt, recipients and passphrase, 0 B to 200 KiB', { timeout: 60_000 }, async () => {
  const identity = sdk.generateIdentity();
  const recipient = sdk.identityToRecipient(identity);
  const sizes = [0, 1, 65535, 65536, 65537, 200 * 1024 + 3];
  for (const format of ['age', 'age-rt']) {
    for (const size of sizes) {
      const bytes = new Uint8Array(size).map((_, i) => (i * 31 + (i >> 8)) & 255);
      for (const [enc, dec] of [['auto', 'wasm'], ['wasm', 'auto']]) {
        const ct = await encrypt(enc, bytes, { recipients: [recipient], format });
        const pt = await decrypt(dec, ct, { identities: [identity] });
        assert.deepEqual(pt, bytes, `${format} ${size} B: encrypted by ${enc}, decrypted by ${dec}`);
      }
    }
  }
  // scrypt once (slow by design): both ways
  const bytes = new Uint8Array(70_000).fill(7);
  const ct = await encrypt('auto', bytes, { passphrase: 'correct horse' });
  assert.deepEqual(await decrypt('wasm', ct, { passphrase: 'correct horse' }), bytes);
});

/** Runs `fn` with `crypto.getRandomValues` (the wasm module's randomness) made deterministic. */
async function fixedRandom(fn) {
  const real = globalThis.crypto.getRandomValues;
  let x = 12345;
  globalThis.crypto.getRandomValues = (a) => {
    const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let i = 0; i < b.length; i++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; b[i] = x >>> 24; }
    return a;
  };
  try { return await fn(); } finally { globalThis.crypto.getRandomValues = real; }
}

test('node:crypto and wasm seal the same bytes: with fixed randomness the ciphertexts are identical (age, age-rt; passphrase and recipient)', { timeout: 60_000 }, async () => {
  const identity = sdk.generateIdentity();
  const recipient = sdk.identityToRecipient(identity);
  const bytes = new Uint8Array(3 * 65536 + 777).map((_, i) => (i * 7 + (i >> 9)) & 255);
  for (const format of ['age', 'age-rt']) {
    for (const options of [{ recipients: [recipient] }, ...(format === 'age-rt' ? [{ passphrase: 'same bytes' }] : [])]) {
      const native = await fixedRandom(() => encrypt('auto', bytes, { ...options, format }));
      const portable = await fixedRandom(() => encrypt('wasm', bytes, { ...options, format }));
      assert.ok(native.length > bytes.length);
      assert.ok(Buffer.from(native).equals(Buffer.from(portable)), `${format} ${Object.keys(options)[0]}: node:crypto and wasm gave other bytes`);
      // and the fixed randomness is what made them equal: a second run differs
      assert.ok(!Buffer.from(await encrypt('auto', bytes, { ...options, format })).equals(Buffer.from(native)));
    }
  }
});

test('a tampered chunk: DECRYPT_FAILED under both backends, and no plaintext of it released', { timeout: 30_000 }, async () => {
  const identity = sdk.generateIdentity();
  const recipient = sdk.identityToRecipient(identity);
  for (const format of ['age', 'age-rt']) {
    const bytes = new Uint8Array(3 * 65536).fill(1);
    const ct = await encrypt('auto', bytes, { recipients: [recipient], format }, 65536);
    // flip a byte in the middle of the second chunk's ciphertext
    const bad = ct.slice();
    bad[ct.length - 65536 - 100] ^= 1;
    for (const backend of ['auto', 'wasm']) {
      sdk.cryptoBackend(backend);
      const out = [];
      const e = await rejection((async () => {
        for await (const c of new Blob([bad]).stream().pipeThrough(sdk.decryptStream({ identities: [identity] }))) out.push(c);
      })());
      assert.equal(e.code, 'DECRYPT_FAILED', `${format}, ${backend}: ${e.message}`);
      const released = out.reduce((n, c) => n + c.length, 0);
      assert.ok(released <= 65536, `${format}, ${backend}: ${released} bytes released before the bad chunk`);
    }
  }
  sdk.cryptoBackend('auto');
});

// Without the runtime's scrypt (forced here; a browser has none), a passphrase's scrypt runs
// in a throwaway instance of the wasm module (src/wasm/scrypt.rs): its 256 MiB (log2 N = 18)
// go with that instance, where they stayed in the package's own wasm memory before (a wasm
// memory never shrinks: +~270 MB for the page's life). In its own process, with gc exposed.
test('wasm backend: a passphrase round trip gives scrypt\'s 256 MiB back (RSS after gc < +64 MB)', { timeout: 60_000 }, async () => {
  const { runChild } = await import('./lib/child.mjs');
  const script = `
    const sdk = await import(${JSON.stringify(PKG)});
    await sdk.init();
    sdk.cryptoBackend('wasm');
    const rss = () => process.memoryUsage().rss;
    gc();
    const before = rss();
    const ct = await new Response(new Blob(['hello']).stream().pipeThrough(sdk.encryptStream({ passphrase: 'pw' }))).arrayBuffer();
    const text = await new Response(new Blob([ct]).stream().pipeThrough(sdk.decryptStream({ passphrase: 'pw' }))).text();
    const peak = rss();
    gc(); await new Promise((r) => setTimeout(r, 100)); gc();
    console.log(JSON.stringify({ text, backend: sdk.cryptoBackend(), before, peak, after: rss() }));`;
  const child = runChild(['--expose-gc', '--input-type=module', '-e', script]);
  const r = await child.waitFor((e) => 'text' in e, 50_000);
  assert.equal(r.text, 'hello');
  assert.equal(r.backend, 'wasm');
  console.log(`# scrypt in a throwaway instance: RSS ${(r.before / 1e6).toFixed(0)} → ${(r.peak / 1e6).toFixed(0)} MB, after gc ${(r.after / 1e6).toFixed(0)} MB`);
  assert.ok(r.after - r.before < 64e6, `RSS after gc is ${((r.after - r.before) / 1e6).toFixed(0)} MB over the start`);
});
