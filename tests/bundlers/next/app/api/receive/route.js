// Receives a stream from the relay in Node (the route handler's runtime) and answers with
// its length and SHA-256: GET /api/receive?relay=URL&path=/p
import { createHash } from 'node:crypto';
import { receive } from 'httpipe';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export async function GET(request) {
  const q = new URL(request.url).searchParams;
  try {
    const { stream } = await receive({ relay: q.get('relay'), path: q.get('path'), timeout: 20 });
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of stream) {
      hash.update(chunk);
      bytes += chunk.byteLength;
    }
    return Response.json({ bytes, sha256: hash.digest('hex') });
  } catch (e) {
    return Response.json({ error: `${e.code || e.name}: ${e.message}` }, { status: 500 });
  }
}
