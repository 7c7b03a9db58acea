// Step 1 of 3, the hospital's export job (Deno): N patient records as NDJSON, encrypted, to /raw.
//   deno run --allow-net examples/pipeline/producer.ts http://127.0.0.1:8080 /raw 'raw passphrase' 20000
// With an npm install, import from "npm:httpipe" instead of the local build.
import { pipeline, ndjson, toPipe } from '../../pkg/index.js';

const [relay, path, passphrase, n = '20000'] = Deno.args;
const WARDS = ['cardiology', 'oncology', 'maternity', 'orthopaedics'];
const ids: string[] = [];

function* patients(count: number) { // stands in for a database query
  for (let i = 0; i < count; i++) {
    const id = `ADM-${String(i).padStart(7, '0')}`; // the admission: no personal data
    ids.push(id);
    yield {
      id,
      nhsNumber: String(9_000_000_000 + i),
      name: `Patient ${i}`,
      email: `patient${i}@example.org`,
      birthDate: `${1930 + (i % 80)}-0${1 + (i % 9)}-1${i % 10}`,
      postcode: `SW${1 + (i % 20)} ${i % 10}AB`,
      ward: WARDS[i % WARDS.length],
      stayDays: 1 + (i % 30),
    };
  }
}

const run = pipeline(() => patients(Number(n)), ndjson.encode(), toPipe({ relay, path, passphrase, timeout: 120 }));
const report = await run.done.catch((e) => {
  console.error(`failed: ${e.code}: ${e.message}`);
  Deno.exit(1);
});
// An order-independent checksum of the record set: sha256 of the sorted ids.
const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(ids.sort().join('\n')));
const idsSha256 = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
console.log(JSON.stringify({ records: ids.length, bytes: report.bytes.out, idsSha256 }));
