// Cloudflare Worker: produces a generated NDJSON feed, encrypted end to end with age-rt, into a
// stream path on an httpipe relay, and answers with the SDK's report.
//   GET /produce?relay=https://relay.example&path=/feeds/demo&lines=1000&passphrase=secret[&failAt=500]
//   (or &recipient=age1... / age1pq1... instead of a passphrase: a post-quantum recipient makes
//   the SDK instantiate its post-quantum module, imported with the Worker)
// And the other way: GET /receive?relay=...&path=...[&identity=AGE-SECRET-KEY-...] answers with
// the stream at `path`, decrypted with `identity` when one is given.
// A consumer anywhere reads it with the SDK (`receive({ relay, path, passphrase })`), the
// ZebraStream CLI, or curl + age. In an npm project import from "httpipe" instead (the package's
// "workerd" export condition loads the wasm module the Workers way).
import { send, receive, cryptoBackend, HttpipeError } from '../../../pkg/workerd.js';

function feed(lines, failAt) {
  let seq = 0;
  const enc = new TextEncoder();
  return new ReadableStream({
    pull(ctrl) {
      if (seq >= failAt) { ctrl.error(new Error(`the feed failed at line ${seq}`)); return; }
      if (seq >= lines) { ctrl.close(); return; }
      // A batch of records per pull: realistic log/metric lines.
      let batch = '';
      for (let i = 0; i < 100 && seq < lines && seq < failAt; i++, seq++) {
        batch += `${JSON.stringify({ seq, at: new Date(0).toISOString(), level: seq % 10 ? 'info' : 'warn', msg: `event ${seq}` })}\n`;
      }
      ctrl.enqueue(enc.encode(batch));
    },
  });
}

/**
 * The stream once its first bytes arrived: a producer that fails before them (after the
 * meeting) rejects here, so the Worker answers with an error status instead of an empty 200.
 * (A failure after the first bytes can only cut the response: see js/README.md.)
 */
async function started(stream) {
  const reader = stream.getReader();
  const first = await reader.read();
  return new ReadableStream({
    start(c) { if (first.done) c.close(); else c.enqueue(first.value); },
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) c.close(); else c.enqueue(value);
    },
    cancel(reason) { return reader.cancel(reason); },
  });
}

/** GET /receive?relay=...&path=...: the stream at `path` as this Worker's response. */
async function relayed(url) {
  const identities = url.searchParams.getAll('identity');
  const options = { relay: url.searchParams.get('relay'), path: url.searchParams.get('path'), timeout: 60,
    identities: identities.length ? identities : undefined };
  try {
    const { stream, contentType } = await receive(options);
    return new Response(await started(stream), { headers: { 'content-type': contentType ?? 'application/octet-stream' } });
  } catch (e) {
    return Response.json({ error: e instanceof HttpipeError ? e.code : 'UNKNOWN', message: String(e.message) }, { status: 502 });
  }
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === '/receive') return relayed(url);
    if (url.pathname !== '/produce') return new Response('try /produce?relay=...&path=... or /receive?relay=...&path=...\n', { status: 404 });
    const relay = url.searchParams.get('relay');
    const path = url.searchParams.get('path');
    const lines = Number(url.searchParams.get('lines') || '1000');
    const passphrase = url.searchParams.get('passphrase') || undefined;
    const recipients = url.searchParams.getAll('recipient');
    // failAt=N: the feed fails after N lines (the consumer then sees TRUNCATED, never a short clean end)
    const failAt = Number(url.searchParams.get('failAt') || Infinity);
    try {
      const report = await send(feed(lines, failAt), { relay, path, passphrase, recipients: recipients.length ? recipients : undefined,
        contentType: 'application/x-ndjson', timeout: 60 });
      // `nodejs_compat` (wrangler.toml) gives the SDK node:crypto's native ChaCha20-Poly1305
      return Response.json({ ...report, cryptoBackend: cryptoBackend() });
    } catch (e) {
      const code = e instanceof HttpipeError ? e.code : 'UNKNOWN';
      return Response.json({ error: code, message: String(e.message) }, { status: 502 });
    }
  },
};
