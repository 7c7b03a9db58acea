// Deno consumer: writes a stream path's bytes to stdout (or a file).
//   deno run --allow-net --allow-read --allow-write examples/deno/receive.ts <relay> <path> [file|-] [passphrase]
import { receive } from '../../pkg/index.js';

const [relay, path, file = '-', passphrase] = Deno.args;
if (!relay || !path) {
  console.error('usage: receive.ts <relay> <path> [file|-] [passphrase]');
  Deno.exit(2);
}
try {
  const { stream, filename } = await receive({ relay, path, passphrase });
  const out = file === '-' ? Deno.stdout.writable : (await Deno.open(file, { write: true, create: true, truncate: true })).writable;
  await stream.pipeTo(out);
  if (filename) console.error(`received ${filename}`);
} catch (e) {
  const err = e as { code?: string; message?: string };
  console.error(`failed: ${err.code}: ${err.message}`);
  Deno.exit(1);
}
