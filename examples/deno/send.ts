// Deno producer: streams a file (or stdin) to a stream path on an httpipe relay.
//   deno run --allow-net --allow-read examples/deno/send.ts <relay> <path> [file|-] [passphrase]
// e.g. deno run --allow-net --allow-read examples/deno/send.ts http://127.0.0.1:8080 /demo report.csv
// With an npm install, import from "npm:httpipe" instead of the local build.
import { send } from '../../pkg/index.js';

const [relay, path, file = '-', passphrase] = Deno.args;
if (!relay || !path) {
  console.error('usage: send.ts <relay> <path> [file|-] [passphrase]');
  Deno.exit(2);
}
const source = file === '-' ? Deno.stdin.readable : (await Deno.open(file)).readable;
try {
  const report = await send(source, {
    relay,
    path,
    passphrase,
    filename: file === '-' ? undefined : file.split('/').at(-1),
    onProgress: (p) => console.error(`sent ${p.bytes} bytes (${(p.bytesPerSecond / 1e6).toFixed(1)} MB/s)`),
  });
  console.log(JSON.stringify(report));
} catch (e) {
  const err = e as { code?: string; message?: string };
  console.error(`failed: ${err.code}: ${err.message}`);
  Deno.exit(1);
}
