// Type tests of the pipeline API (`tsc -p tests/types`, run by scripts/test.sh): every
// pipeline here must type-check under --strict, and every `@ts-expect-error` line must be an error.
import {
  pipeline, fromPipe, toPipe, ndjson, lines, map, filter, flatMap, tap, batch, meter, gzip, gunzip,
  encrypt, decrypt, sink, collect, partition, serve, HttpipeError,
  type Run, type PipelineReport, type Step,
} from '../../pkg/index.js';

interface Item { sku: string; qty: number }
const relay = 'http://127.0.0.1:8080';

async function* items(): AsyncGenerator<Item> { yield { sku: 'A', qty: 1 }; }

// bytes → records → bytes
const r1: Run<undefined> = pipeline(fromPipe({ relay, path: '/in' }), ndjson.decode<Item>(), map((i) => ({ ...i, qty: i.qty * 2 })), ndjson.encode(), toPipe({ relay, path: '/out' }));
// records from an async generator function (replayable), batched into a retrying sink
pipeline(items, batch({ maxItems: 100, maxWaitMs: 1000 }), sink(async (b: Item[], { key, attempt }) => { void key; void attempt; void b.length; }, { retry: { attempts: 5 }, deadLetter: (b) => { void b; } }));
// collect's result type follows the records
const r2 = pipeline([1, 2, 3], map((n) => String(n)), collect<string>());
r2.done.then((rep: PipelineReport<string[]>) => rep.result.map((s) => s.toUpperCase()));
// a type-guard filter narrows
pipeline([1, 'a', 2] as (number | string)[], filter((x): x is number => typeof x === 'number'), map((n) => n + 1), collect<number>());
// every byte step chains with every other byte step
pipeline(new Uint8Array(4), gzip(), gunzip(), encrypt({ passphrase: 'p' }), decrypt({ passphrase: 'p' }), lines(), meter<string>('lines'), collect<string>());
pipeline('a\nb\n', lines(), flatMap((l) => l.split('')), tap((c) => console.log(c), { policy: 'drop' }), collect<string>());
pipeline(items, partition<Item>({ relay, paths: ['/w1', '/w2'], key: (i) => i.sku }));
pipeline(items, ndjson.encode(), toPipe({ relay, path: '/dl' }), { signal: AbortSignal.timeout(1000) });
serve((peer) => pipeline(items, ndjson.encode(), toPipe({ ...peer, passphrase: 'p' })), { relay, path: '/export', mode: 'await-reader' });
void r1; void HttpipeError;
const s: Step<Uint8Array | string, Item> = ndjson.decode<Item>();
void s;

// ---- wrong adjacencies ----
// @ts-expect-error records are not bytes: toPipe needs ndjson.encode() first
pipeline(items, toPipe({ relay, path: '/x' }));
// @ts-expect-error gzip takes bytes, not records
pipeline(items, gzip(), toPipe({ relay, path: '/x' }));
// @ts-expect-error ndjson.decode takes bytes, not numbers
pipeline([1, 2], ndjson.decode(), collect());
// @ts-expect-error map's output is a string, collect<number> wants numbers
pipeline([1, 2], map((n: number) => String(n)), collect<number>());
// @ts-expect-error the sink's fn expects a batch (Item[]) but gets single records
pipeline(items, sink(async (b: Item[]) => { void b; }));
// @ts-expect-error a step can't come last: the last argument is a sink
pipeline(items, map((i: Item) => i));
