// Node's fetch cuts a request whose response head took 300 s (headersTimeout) or whose body
// said nothing for 300 s (bodyTimeout). This child shortens both to 3 s in Node's own global
// dispatcher (as an application could: a proxy agent, other limits) and waits 8 s where a real
// transfer waits longer than 300 s:
//   node node-fetch-limits-child.mjs <relay>
// Prints one JSON line: { control, slowFirstByte, codeWait, dispatched }.
import { PKG, sleep } from './sdk.mjs';

const relay = process.argv[2];
const sdk = await import(PKG);
const WAIT_MS = 8000;
const outcome = (p) => p.then((v) => ({ ok: true, value: v }), (e) => ({ ok: false, code: e.code ?? e.cause?.code, message: String(e.message) }));

await fetch(`${relay}/version`); // loads Node's undici, which sets its global dispatcher
const KEY = Symbol.for('undici.globalDispatcher.1');
const Agent = globalThis[KEY].constructor;
const short = new Agent({ headersTimeout: 3000, bodyTimeout: 3000 });
let dispatched = 0;
globalThis[KEY] = new Proxy(short, {
  get(target, prop) {
    if (prop === 'dispatch') return (opts, handler) => { dispatched += 1; return target.dispatch(opts, handler); };
    const v = Reflect.get(target, prop);
    return typeof v === 'function' ? v.bind(target) : v;
  },
});

// Control: the limits are in force — a plain GET whose producer comes after 8 s is cut.
const control = outcome(fetch(`${relay}/limits/control-${process.pid}`).then((r) => r.text()));

// A consumer whose producer's first byte comes 8 s after they met (a writer with a slow source).
const slowFirstByte = outcome((async () => {
  const path = `/limits/slow-${process.pid}`;
  const received = sdk.receive({ relay, path }).then(async (r) => {
    let text = '';
    for await (const c of r.stream) text += new TextDecoder().decode(c);
    return text;
  });
  const w = sdk.openWriter({ relay, path });
  const wr = w.writable.getWriter();
  await sleep(WAIT_MS);
  await wr.write('late\n');
  await wr.close();
  const [text, report] = await Promise.all([received, w.done]);
  return { text, relayState: report.relayState };
})());

// A short code's sender whose receiver types the code 8 s later (PROTOCOL.md §14.2 step 1).
const codeWait = outcome((async () => {
  const { code, done } = await sdk.sendWithCode(new TextEncoder().encode('by code\n'), { relay });
  await sleep(WAIT_MS);
  const r = await sdk.receiveWithCode(code, { relay });
  let text = '';
  for await (const c of r.stream) text += new TextDecoder().decode(c);
  const report = await done;
  return { text, relayState: report.relayState };
})());

const results = { control: await control, slowFirstByte: await slowFirstByte, codeWait: await codeWait };
process.stdout.write(`${JSON.stringify({ ...results, dispatched })}\n`);
