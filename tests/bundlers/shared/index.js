// The page of the Vite, esbuild and webpack fixtures (copied to each fixture's src/index.js by
// tests/js/bundlers.test.mjs): imports the package by its name, sends a few KB to a stream
// path of each relay given in the query (?relay=URL&relay=URL&path=/p&size=N) and receives
// them back in the same page, then shows the result (body[data-result] for the test); then
// encrypts to a post-quantum recipient and decrypts in the page (body[data-pq]): the second
// module (httpipe_xwing_bg.wasm) loads from where the bundler put it, and only then.
import { send, receive, init, generateHybridIdentity, loadPostQuantum, identityToRecipient, encryptStream, decryptStream } from 'httpipe';

const q = new URLSearchParams(location.search);
const relays = q.getAll('relay');
const base = q.get('path') || '/bundler';
const size = Number(q.get('size') || 8192);

function payload(n, seed) {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; out[i] = x & 0xff; }
  return out;
}

async function roundTrip(relay, path, seed) {
  const sent = payload(size, seed);
  const incoming = receive({ relay, path, timeout: 20 }).then(async ({ stream }) => new Uint8Array(await new Response(stream).arrayBuffer()));
  incoming.catch(() => {}); // reported below, after send's own error if both fail
  const report = await send(sent, { relay, path, timeout: 20 });
  const got = await incoming;
  const equal = got.length === sent.length && got.every((b, i) => b === sent[i]);
  return { relay, bytes: got.length, equal, transport: report.transport };
}

async function postQuantum() {
  const loaded = () => performance.getEntriesByType('resource').some((e) => e.name.includes('httpipe_xwing'));
  const before = loaded();
  try {
    await init();
    const identity = generateHybridIdentity();
    await loadPostQuantum();
    const recipient = identityToRecipient(identity);
    const text = 'post-quantum, from a bundle';
    const sealed = await new Response(new Blob([text]).stream().pipeThrough(encryptStream({ recipients: [recipient] }))).arrayBuffer();
    const opened = await new Response(new Blob([sealed]).stream().pipeThrough(decryptStream({ identities: [identity] }))).text();
    return { before, equal: opened === text, recipient: recipient.slice(0, 7) };
  } catch (e) {
    return { before, error: `${e.code || e.name}: ${e.message}` };
  }
}

async function main() {
  const results = [];
  for (const [i, relay] of relays.entries()) {
    try {
      results.push(await roundTrip(relay, `${base}-${i}`, i + 1));
    } catch (e) {
      results.push({ relay, error: `${e.code || e.name}: ${e.message}` });
    }
  }
  document.getElementById('out').textContent = results
    .map((r) => (r.error ? `${r.relay}: ${r.error}` : `${r.relay}: ${r.bytes} bytes back, ${r.equal ? 'equal' : 'DIFFERENT'} (${r.transport})`))
    .join('\n');
  document.body.dataset.pq = JSON.stringify(await postQuantum());
  document.body.dataset.result = JSON.stringify(results);
}

main();
