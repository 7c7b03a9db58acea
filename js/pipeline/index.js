// Record pipelines on httpipe (docs/js-api.md "Pipelines"): sources → steps → sinks, with
// the pipe as the only hop between organisations.
export { pipeline, defineStep, defineSink, transformStep } from './core.js';
export { fromPipe, defineSource } from './sources.js';
export { map, filter, flatMap, tap, batch, meter, gzip, gunzip, encrypt, decrypt } from './steps.js';
export { ndjson, csv, lines } from './codecs.js';
export { toPipe, sink, collect, partition } from './sinks.js';
export { serve } from './serve.js';
