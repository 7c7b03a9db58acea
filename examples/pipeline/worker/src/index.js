// The anonymising step between two pipes, on Cloudflare Workers:
//   GET /run?relay=http://127.0.0.1:8080&in=/raw&out=/clean
// reads the hospital's records from `in`, drops the personal fields, replaces the NHS number
// by a keyed pseudonym (HMAC-SHA256 with PSEUDONYM_KEY), coarsens birth date and postcode,
// writes the result to `out` (re-encrypted for the researchers), and answers with the
// pipeline's report. Passphrases and key come from the environment (wrangler.toml [vars] or
// secrets), never from the URL. In an npm project import from "httpipe" instead.
import { pipeline, fromPipe, ndjson, map, toPipe, HttpipeError } from '../../../../pkg/workerd.js';

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

async function anonymiser(secret) {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return async ({ name, email, nhsNumber, birthDate, postcode, ...rest }) => ({
    ...rest, // id, ward, stayDays: no personal data
    patient: hex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(nhsNumber))).slice(0, 32),
    birthYear: Number(birthDate.slice(0, 4)),
    area: postcode.split(' ')[0],
  });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== '/run') return new Response('try /run?relay=...&in=/raw&out=/clean\n', { status: 404 });
    const q = (k) => url.searchParams.get(k);
    try {
      const anonymise = await anonymiser(env.PSEUDONYM_KEY);
      const run = pipeline(
        fromPipe({ relay: q('relay'), path: q('in'), passphrase: env.RAW_PASSPHRASE, timeout: 120 }),
        ndjson.decode(),
        map(anonymise, { concurrency: 16 }), // async (WebCrypto); the order is kept
        ndjson.encode(),
        toPipe({ relay: q('relay'), path: q('out'), passphrase: env.CLEAN_PASSPHRASE, timeout: 120 }),
      );
      return Response.json(await run.done);
    } catch (e) {
      const code = e instanceof HttpipeError ? e.code : 'UNKNOWN';
      return Response.json({ error: code, message: String(e.message) }, { status: 502 });
    }
  },
};
