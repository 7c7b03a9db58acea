// Where received bytes go, without holding the file in memory where the browser allows it.
// Strategies, in the order 'auto' tries them:
//   'sw'   Service Worker streaming download (sw.js): the browser's download manager pulls
//          chunks from this page; on failure the download is marked failed. First: it needs
//          no click, so the sender never waits for the receiver to choose a place.
//   'fsa'  File System Access API (showSaveFilePicker): streams to the chosen file; on failure
//          the writable is aborted, so the browser discards its temporary file. Needs a click
//          ("Ask me where to save"), meanwhile the sender waits.
//   'blob' in memory, then an <a download>: only for small payloads (BLOB_LIMIT).
// A sink is { write(chunk): Promise, close(): Promise, abort(reason): Promise, kind }.

export const BLOB_LIMIT = 64 * 1024 * 1024;

let swRegistration = null;

/** Registers the download worker (once). Resolves to true when it is active. */
export async function registerDownloadWorker() {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return false;
  try {
    const reg = await navigator.serviceWorker.register('/assets/sw.js', { scope: '/assets/' });
    const worker = reg.active || reg.installing || reg.waiting;
    if (worker && worker.state !== 'activated') {
      await new Promise((resolve) => {
        worker.addEventListener('statechange', () => { if (worker.state === 'activated') resolve(); });
      });
    }
    swRegistration = reg;
    return true;
  } catch (err) {
    console.warn('download worker unavailable:', err);
    return false;
  }
}

export function hasFsa() {
  return typeof window.showSaveFilePicker === 'function';
}

/** The strategy 'auto' picks, given what this browser offers. */
export function autoStrategy(size) {
  if (swRegistration && swRegistration.active) return 'sw';
  if (hasFsa()) return 'fsa';
  if (size === undefined || size <= BLOB_LIMIT) return 'blob';
  return 'none';
}

/** Does this strategy need a click (user activation) before it can start? */
export function needsGesture(strategy) {
  return strategy === 'fsa';
}

/** File System Access API: must be called from a user gesture (click). */
export async function fsaSink(name) {
  const handle = await window.showSaveFilePicker({ suggestedName: name });
  const writable = await handle.createWritable();
  return {
    kind: 'fsa',
    write: (chunk) => writable.write(chunk),
    close: () => writable.close(),
    abort: (reason) => writable.abort(reason).catch(() => {}),
  };
}

/**
 * Service Worker download. `onCancel` is called if the person cancels the download in the
 * browser's download UI.
 */
export async function swSink(name, size, onCancel) {
  const active = swRegistration && swRegistration.active;
  if (!active) throw new Error('download worker not active');
  const id = crypto.randomUUID().replace(/-/g, '');
  const channel = new MessageChannel();
  const port = channel.port1;
  let pullCount = 0;            // pulls requested but not yet answered
  let finished = false;
  const pullWaiters = [];
  const registered = new Promise((resolve) => {
    port.onmessage = (event) => {
      const msg = event.data || {};
      if (msg.type === 'registered') resolve();
      else if (msg.type === 'pull') { pullCount++; const w = pullWaiters.shift(); if (w) w(); }
      else if (msg.type === 'cancel') { finished = true; onCancel && onCancel(msg.reason); const w = pullWaiters.shift(); if (w) w(); }
    };
  });
  active.postMessage({ type: 'download', id, name, size, contentType: 'application/octet-stream' }, [channel.port2]);
  await registered;
  // Keeps the worker alive (its own message events) and tells it this page is still here.
  const keepAlive = setInterval(() => {
    try { active.postMessage({ type: 'ping' }); port.postMessage({ type: 'alive' }); } catch { /* worker gone */ }
  }, 5000);
  const frame = document.createElement('iframe');
  frame.hidden = true;
  frame.src = `/assets/dl/${id}/${encodeURIComponent(name)}`;
  document.body.appendChild(frame);
  const waitPull = () => (pullCount > 0 || finished ? Promise.resolve() : new Promise((r) => pullWaiters.push(r)));
  const cleanup = () => { clearInterval(keepAlive); setTimeout(() => frame.remove(), 60000); };
  return {
    kind: 'sw',
    async write(chunk) {
      await waitPull();
      if (finished) throw Object.assign(new Error('The download was cancelled in the browser.'), { code: 'ABORTED' });
      pullCount--;
      // Copy into a fresh buffer we can transfer (the chunk may be a view on wasm memory).
      const copy = chunk.slice();
      port.postMessage({ type: 'chunk', data: copy.buffer }, [copy.buffer]);
    },
    async close() {
      await waitPull();
      if (!finished) { pullCount--; port.postMessage({ type: 'end' }); }
      finished = true;
      cleanup();
    },
    async abort(reason) {
      if (!finished) {
        finished = true;
        port.postMessage({ type: 'error', message: String(reason && reason.message || reason || 'failed') });
      }
      cleanup();
    },
  };
}

/** In memory; the result is a Blob (for previews, text, and small downloads). */
export function blobSink(limit = BLOB_LIMIT) {
  const parts = [];
  let bytes = 0;
  let resolveBlob;
  const blob = new Promise((r) => { resolveBlob = r; });
  return {
    kind: 'blob',
    blob,
    async write(chunk) {
      bytes += chunk.byteLength;
      if (bytes > limit) {
        throw Object.assign(new Error(`Too large to keep in memory (over ${limit} bytes) and this browser can't stream to disk here. Open the page over https or on localhost.`), { code: 'UNSUPPORTED' });
      }
      parts.push(chunk.slice());
    },
    async close() { resolveBlob(new Blob(parts)); },
    async abort() { parts.length = 0; resolveBlob(null); },
  };
}

/** Saves a Blob with a temporary <a download> (small payloads only). */
export function downloadBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
