'use client';
// Sends a few KB from the browser to each relay URL given in the query
// (?relay=URL&relay=URL&path=/p&size=N&via=URL) while the route handler /api/receive receives
// them in Node (from `via` if given: the same relay's plain port, as Node would reject its
// self-signed TLS certificate); shows whether the handler got the same bytes
// (body[data-result] for the test).
import { useEffect, useState } from 'react';
import { send } from 'httpipe';

function payload(n, seed) {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; out[i] = x & 0xff; }
  return out;
}

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

async function roundTrip(relay, via, path, size, seed) {
  const sent = payload(size, seed);
  const received = fetch(`/api/receive?${new URLSearchParams({ relay: via || relay, path })}`).then((r) => r.json());
  received.catch(() => {}); // reported below, after send's own error if both fail
  const report = await send(sent, { relay, path, timeout: 20 });
  const got = await received;
  if (got.error) throw new Error(`route handler: ${got.error}`);
  const sha256 = hex(await crypto.subtle.digest('SHA-256', sent));
  return { relay, bytes: got.bytes, equal: got.bytes === size && got.sha256 === sha256, transport: report.transport };
}

export default function Sender() {
  const [text, setText] = useState('running…');
  useEffect(() => {
    const q = new URLSearchParams(window.location.search);
    const size = Number(q.get('size') || 8192);
    const base = q.get('path') || '/bundler';
    (async () => {
      const results = [];
      for (const [i, relay] of q.getAll('relay').entries()) {
        try {
          results.push(await roundTrip(relay, q.get('via'), `${base}-${i}`, size, i + 1));
        } catch (e) {
          results.push({ relay, error: `${e.code || e.name}: ${e.message}` });
        }
      }
      setText(results
        .map((r) => (r.error ? `${r.relay}: ${r.error}` : `${r.relay}: the route handler got ${r.bytes} bytes, ${r.equal ? 'equal' : 'DIFFERENT'} (${r.transport})`))
        .join('\n'));
      document.body.dataset.result = JSON.stringify(results);
    })();
  }, []);
  return <pre id="out" style={{ whiteSpace: 'pre-wrap' }}>{text}</pre>;
}
