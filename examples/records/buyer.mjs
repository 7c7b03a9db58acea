// The buyer: decrypts the supplier's records and loads them in batches into its store (here a
// directory, one file per batch named by its idempotency key), retrying failed batches and
// keeping the ones that keep failing aside.
//   node examples/records/buyer.mjs http://127.0.0.1:8080 /acme/inventory 'shared passphrase' ./store
import fs from 'node:fs/promises';
import { pipeline, fromPipe, ndjson, batch, sink } from '../../pkg/index.js'; // in your project: from 'httpipe'

const [relay, path, passphrase, store = './store'] = process.argv.slice(2);
await fs.mkdir(`${store}/dead`, { recursive: true });

const load = (rows, { key }) => fs.writeFile(`${store}/batch-${key}.json`, JSON.stringify(rows)); // same key, same file: a retry can't duplicate
const quarantine = (rows, { key, error }) => fs.writeFile(`${store}/dead/batch-${key}.json`, JSON.stringify({ error: String(error), rows }));

const run = pipeline(fromPipe({ relay, path, passphrase }), ndjson.decode(), batch({ maxItems: 500, maxWaitMs: 1000 }),
  sink(load, { retry: { attempts: 5, baseDelayMs: 200 }, deadLetter: quarantine }));
const report = await run.done;
console.log(JSON.stringify({ batches: report.sink.delivered, deadLettered: report.deadLettered, retries: report.retries }));
