// A Cloudflare Worker against the `workerd` entry (tsconfig.workers.json: @cloudflare/workers-types,
// bundler resolution with the workerd condition): Request/Response are the Workers' own.
import { init, send, receive, HttpipeError } from 'httpipe/workerd';
import * as root from 'httpipe';

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const relay = url.searchParams.get('relay') ?? 'http://127.0.0.1:8080';
    try {
      if (request.method === 'POST' && request.body) {
        const report = await send(request.body, { relay, path: url.pathname, timeout: 60 });
        return Response.json(report);
      }
      const { stream, contentType } = await receive({ relay, path: url.pathname });
      return new Response(stream, { headers: { 'content-type': contentType ?? 'application/octet-stream' } });
    } catch (e) {
      const code = e instanceof HttpipeError ? e.code : 'UNKNOWN';
      return Response.json({ error: code }, { status: 502 });
    }
  },
} satisfies ExportedHandler;

// init() with the module a Workers bundler imports (workers-types' WebAssembly.Module class).
export async function withModule(module: WebAssembly.Module): Promise<void> { await init(module); }

// The two entries have the same API.
const same: typeof root.send = send;
void same;
