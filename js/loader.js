// Internal (the package does not export it): how the entry (index.js, workerd.js) tells
// api.js where the wasm module is. The entry calls setLoader() once at import, and
// markInitialised() when it instantiated the module synchronously (Node, Deno, workerd).
export const wasmState = {
  /** The default location of the .wasm file, for `init()` without an argument (URL or text). */
  where: undefined,
  /** `read(source)`: the bytes of a local (file:) source, else the source itself. */
  read: (source) => source,
  /** The error of a synchronous load at import that did not work (reported by generateIdentity). */
  syncFailure: null,
  initialised: false,
};

export function setLoader({ where, read, failure }) {
  wasmState.where = where;
  if (read) wasmState.read = read;
  wasmState.syncFailure = failure || null;
}

export function markInitialised() {
  wasmState.initialised = true;
  wasmState.syncFailure = null;
}

// The post-quantum module (httpipe_xwing_bg.wasm: the X-Wing KEM of age1pq1 recipients and
// AGE-SECRET-KEY-PQ-1 identities, issue #27), which api.js loads only when such a key is used.
// The entry says where it is (`where`: like wasmState.where, read by wasmState.read) and, where
// it can be had synchronously (Node and Deno read the file, workerd imported it), `now()`: its
// bytes or WebAssembly.Module; elsewhere (browsers) `now()` is null and api.js fetches `where`.
export const xwingState = {
  where: undefined,
  now: () => null,
};

export function setXWingLoader({ where, now }) {
  xwingState.where = where;
  if (now) xwingState.now = now;
}
