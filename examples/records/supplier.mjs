// The supplier: streams its inventory as encrypted NDJSON records to the buyer, whenever it runs.
//   node examples/records/supplier.mjs http://127.0.0.1:8080 /acme/inventory 'shared passphrase'
import { pipeline, ndjson, toPipe } from '../../pkg/index.js'; // in your project: from 'httpipe'

const [relay, path, passphrase] = process.argv.slice(2);
const count = Number(process.env.RECORDS || 10000);

async function* inventory() { // stands in for a database cursor
  for (let i = 0; i < count; i++) yield { sku: `SKU-${i}`, warehouse: 'AMS-2', qty: (i * 7) % 50, price: 12.5 };
}

const run = pipeline(inventory, ndjson.encode(), toPipe({ relay, path, passphrase }));
const report = await run.done;
console.log(JSON.stringify({ sent: report.records.in, bytes: report.sink.transfers[0].bytes }));
