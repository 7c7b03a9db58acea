// Type tests of the pipeline API, runtime-neutral (every tsconfig.*.json and Deno; run by
// scripts/test.sh): every pipeline here must type-check under --strict, and every
// `@ts-expect-error` line must be an error.
import {
  pipeline, fromPipe, toPipe, ndjson, lines, map, filter, flatMap, tap, batch, meter, gzip, gunzip,
  encrypt, decrypt, sink, collect, partition, serve, HttpipeError,
  defineStep, defineSink, defineSource, transformStep,
  type Run, type PipelineReport, type Step,
} from 'httpipe';

interface Item { sku: string; qty: number }
const relay = 'http://127.0.0.1:8080';
declare const signal: AbortSignal;

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
pipeline('a\nb\n', lines(), flatMap((l) => l.split('')), tap((c) => { void c; }, { policy: 'drop' }), collect<string>());
pipeline(items, partition<Item>({ relay, paths: ['/w1', '/w2'], key: (i) => i.sku }));
pipeline(items, ndjson.encode(), toPipe({ relay, path: '/dl' }), { signal });
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

// ---- custom parts, options without `any` ----
const upper = defineStep<string, string>('upper', async function* run(input, ctx) {
  void ctx.signal;
  for await (const chunk of input) yield chunk.map((l) => l.toUpperCase());
});
const count = defineSink<string, number>('count', async (input, ctx) => {
  let n = 0;
  for await (const chunk of input) n += chunk.length;
  void ctx.label;
  return n;
});
const r3 = pipeline(defineSource<string>('letters', async function* open() { yield ['a', 'b']; }), upper, count);
r3.done.then((rep: PipelineReport<number>) => rep.result.toFixed());
const pairs = transformStep<string, [string, number]>('pairs', () => ({ push: (xs) => xs.map((x) => [x, x.length]), end: () => [] }));
pipeline(['a'], pairs, collect<[string, number]>());
// reviver / replacer: `unknown`, not `any`, and still inferred
pipeline('{"a":1}\n', ndjson.decode<Item>({ reviver: (key, value) => (key === 'qty' && typeof value === 'number' ? value * 2 : value) }), collect<Item>());
pipeline(items, ndjson.encode<Item>({ replacer: (key, value) => (key === 'sku' ? undefined : value) }), toPipe({ relay, path: '/x' }));
serve((peer) => pipeline(fromPipe({ ...peer }), lines(), collect<string>()), {
  relay, path: '/in', mode: 'await-writer', rounds: 3, timeout: 30,
  onRound: (report, round) => { void report.durationMs; void round; },
  onError: (error, round) => { const code: HttpipeError['code'] = error.code; void code; void round; },
});
// RecordOf: a string is a byte source (not an iterable of characters), an array yields its items
const bytesOut: Run<Uint8Array[]> = pipeline('text', collect<Uint8Array>());
const itemsOut: Run<Item[]> = pipeline([{ sku: 'A', qty: 1 }], collect<Item>());
void bytesOut; void itemsOut;
// @ts-expect-error a string source yields Uint8Array chunks, not strings
pipeline('text', collect<string>());
// @ts-expect-error the reviver's value is unknown: it can't be used as a number unchecked
pipeline('1\n', ndjson.decode({ reviver: (_key, value) => value * 2 }), collect());
