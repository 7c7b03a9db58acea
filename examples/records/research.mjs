// The research organisation: pulls the current export and decrypts it with its age identity
// (made with `httpipe keygen` or `age-keygen`); here it just counts the rows.
//   node examples/records/research.mjs http://127.0.0.1:8080 /hospital/export research.key
import fs from 'node:fs';
import { pipeline, fromPipe, csv, collect } from '../../pkg/index.js'; // in your project: from 'httpipe'

const [relay, path, keyFile] = process.argv.slice(2);
const identity = fs.readFileSync(keyFile, 'utf8').split('\n').find((l) => l.startsWith('AGE-SECRET-KEY-'));

const run = pipeline(fromPipe({ relay, path, identities: [identity] }), csv.decode(), collect());
const rows = (await run.done).result;
console.log(JSON.stringify({ rows: rows.length, columns: Object.keys(rows[0] || {}), first: rows[0] }));
