// Service Worker for streaming downloads (used where the File System Access API isn't available,
// e.g. Firefox and Safari). The page hands over a MessagePort; a navigation to
// /assets/dl/<id>/<name> is answered with a streaming Response whose body pulls chunks from
// that port one at a time (backpressure: the browser's download writer drives the pace, so
// neither the page nor the worker holds the file). An error from the page errors the stream,
// so the browser marks the download failed instead of keeping a partial file as complete.
// Every other request passes through untouched.

const pending = new Map(); // id -> { port, name, size, type }

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('message', (event) => {
  const msg = event.data || {};
  if (msg.type === 'download' && event.ports[0]) {
    pending.set(msg.id, { port: event.ports[0], name: msg.name, size: msg.size, type: msg.contentType });
    event.ports[0].postMessage({ type: 'registered' });
  }
  // 'ping' messages only keep this worker alive during long downloads.
});

function contentDisposition(name) {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

// The page sends 'alive' on the port every few seconds; if it goes silent (tab closed, crashed)
// the download is failed rather than left hanging or, worse, completed short.
const PAGE_SILENCE_MS = 20000;

function streamFromPort(port) {
  let controller;
  let waiting = null; // resolve of the pull in progress
  let lastSeen = Date.now();
  const fail = (message) => {
    try { controller.error(new Error(message)); } catch { /* already closed */ }
    port.close();
  };
  const watchdog = setInterval(() => {
    if (Date.now() - lastSeen > PAGE_SILENCE_MS) {
      clearInterval(watchdog);
      fail('the page that was saving this file went away');
      if (waiting) { const w = waiting; waiting = null; w({ type: 'gone' }); }
    }
  }, 2000);
  port.onmessage = (event) => {
    const msg = event.data || {};
    lastSeen = Date.now();
    if (msg.type === 'alive') return;
    if (msg.type === 'error') {
      // Fail the download at once, whether or not a pull is pending.
      clearInterval(watchdog);
      fail(msg.message || 'transfer failed');
    }
    const w = waiting;
    waiting = null;
    if (w) w(msg);
  };
  return new ReadableStream({
    start(c) { controller = c; },
    pull(c) {
      return new Promise((resolve) => {
        waiting = resolve;
        port.postMessage({ type: 'pull' });
      }).then((msg) => {
        if (msg.type === 'chunk') c.enqueue(new Uint8Array(msg.data));
        else if (msg.type === 'end') { clearInterval(watchdog); c.close(); port.close(); }
      });
    },
    cancel(reason) {
      clearInterval(watchdog);
      port.postMessage({ type: 'cancel', reason: String(reason || 'download cancelled') });
      port.close();
    },
  }, new CountQueuingStrategy({ highWaterMark: 8 }));
}

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  const m = url.pathname.match(/^\/assets\/dl\/([A-Za-z0-9_-]+)\//);
  if (!m) return;
  const entry = pending.get(m[1]);
  if (!entry) {
    event.respondWith(new Response('This download is no longer available.\n', { status: 404 }));
    return;
  }
  pending.delete(m[1]);
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': contentDisposition(entry.name),
    'X-Content-Type-Options': 'nosniff',
  };
  if (Number.isSafeInteger(entry.size)) headers['Content-Length'] = String(entry.size);
  event.respondWith(new Response(streamFromPort(entry.port), { headers }));
});
