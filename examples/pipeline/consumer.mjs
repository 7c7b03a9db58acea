// Step 3 of 3, the researchers (Node): reads the anonymised records from /clean and counts
// and checksums them, the way a loader would before inserting them.
//   node examples/pipeline/consumer.mjs http://127.0.0.1:8080 /clean 'clean passphrase'
import { createHash } from 'node:crypto';
import { pipeline, fromPipe, ndjson, sink } from '../../pkg/index.js'; // in your project: from 'httpipe'

const [relay, path, passphrase] = process.argv.slice(2);
const PERSONAL = ['name', 'email', 'nhsNumber', 'birthDate', 'postcode'];
const ids = [];
const patients = [];
const fields = new Set();
let personal = 0; // records that still carry a personal field: must stay 0

const count = (r) => {
  ids.push(r.id);
  patients.push(r.patient);
  for (const k of Object.keys(r)) fields.add(k);
  if (PERSONAL.some((k) => k in r)) personal++;
};
const run = pipeline(fromPipe({ relay, path, passphrase, timeout: 120 }), ndjson.decode(), sink(count));
const report = await run.done.catch((e) => {
  console.error(`failed: ${e.code}: ${e.message}`); // e.g. TRUNCATED: the producer or the worker failed
  process.exit(1);
});

// Order-independent checksums of the record set: sha256 of the sorted values.
const sha256 = (xs) => createHash('sha256').update(xs.sort().join('\n')).digest('hex');
console.log(JSON.stringify({
  records: report.sink.delivered,
  bytes: report.bytes.in,
  idsSha256: sha256(ids),
  patientsSha256: sha256(patients),
  distinctPatients: new Set(patients).size,
  fields: [...fields].sort(),
  personal,
}));
