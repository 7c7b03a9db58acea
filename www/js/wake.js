// Keeps the screen on while a transfer runs (Screen Wake Lock API, where the browser has it):
// a phone that locks its screen suspends the page and kills the transfer. The browser drops
// the lock when the page is hidden; it is asked for again when the page is shown while a
// transfer still runs. `document.body.dataset.wakeLock` says what happened ('held',
// 'released', 'refused', 'unsupported'), for the tests and for curious people.

const holders = new Set();
let sentinel = null;
let asking = null;

function mark(state) {
  document.body.dataset.wakeLock = state;
}

function supported() {
  return typeof navigator !== 'undefined' && navigator.wakeLock && typeof navigator.wakeLock.request === 'function';
}

async function request() {
  if (!supported()) { mark('unsupported'); return; }
  if (sentinel || asking || document.visibilityState !== 'visible') return;
  asking = navigator.wakeLock.request('screen').then((s) => {
    if (holders.size === 0) { s.release().catch(() => {}); mark('released'); return; }
    sentinel = s;
    mark('held');
    s.addEventListener('release', () => {
      if (sentinel === s) sentinel = null;
      if (holders.size === 0) mark('released');
    });
  }, () => mark('refused')).finally(() => { asking = null; });
  await asking;
}

/** `who` (a sender or receiver) runs a transfer: keep the screen on. */
export function holdWakeLock(who) {
  holders.add(who);
  request();
}

/** `who` finished: let the screen sleep once nobody runs a transfer. */
export function releaseWakeLock(who) {
  holders.delete(who);
  if (holders.size === 0 && sentinel) {
    const s = sentinel;
    sentinel = null;
    s.release().catch(() => {});
    mark('released');
  }
}

if (typeof document !== 'undefined') {
  document.addEventListener('visibilitychange', () => {
    if (holders.size > 0 && document.visibilityState === 'visible') request();
  });
}
