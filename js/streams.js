// Internal (the package does not export it): a ReadableStream's chunks as an async iterator,
// as the standard's `for await` over a stream: leaving early cancels the stream. For runtimes
// whose ReadableStream has no async iterator (Safari); used by api.js and pipeline/sources.js.
export async function* chunksOf(stream) {
  const reader = stream.getReader();
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) { ended = true; return; }
      yield value;
    }
  } finally {
    if (!ended) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
