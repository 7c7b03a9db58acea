// Turns SDK errors (HttpipeError.code, docs/js-api.md) into sentences people understand.
// `side` is 'send' or 'receive': the same code reads differently on each side.

const MESSAGES = {
  PEER_DISCONNECTED: {
    send: 'The other side left before the transfer finished (the receiver cancelled or closed the page). Nothing was delivered completely.',
    receive: 'The other side left before the transfer finished. The partial file was discarded.',
  },
  TRUNCATED: {
    send: 'The transfer was cut short. The receiver did not get the whole file.',
    receive: 'The transfer was cut short: the sender cancelled or lost its connection. The incomplete file was discarded, nothing was saved.',
  },
  WRONG_KEY: {
    send: 'The receiver could not decrypt the stream.',
    receive: 'Wrong passphrase or key: this stream was encrypted for someone else. Nothing was saved. Check the passphrase and try again.',
  },
  DECRYPT_FAILED: {
    send: 'The receiver could not decrypt the stream.',
    receive: 'The data failed its integrity check (corrupted or tampered with). The file was discarded, nothing was saved.',
  },
  NETWORK: {
    send: "Can't reach the relay. Check that it is running and that you are online.",
    receive: "Can't reach the relay. Check that it is running and that you are online.",
  },
  RELAY_ERROR: {
    send: 'The relay refused the transfer.',
    receive: 'The relay refused the transfer.',
  },
  CONNECT_TIMEOUT: {
    send: 'Nobody opened the link in time.',
    receive: 'The sender did not show up in time.',
  },
  UNAUTHORIZED: { send: 'This relay needs an access token.', receive: 'This relay needs an access token.' },
  FORBIDDEN: { send: 'The access token does not allow this.', receive: 'The access token does not allow this.' },
  UNSUPPORTED: {
    send: "This browser can't do this transfer.",
    receive: "This browser can't do this transfer.",
  },
  ABORTED: { send: 'Cancelled.', receive: 'Cancelled.' },
  UNCONFIRMED: {
    send: "Everything left this page, but the receiver never confirmed it saved the file. Ask them whether it arrived, or send it again.",
    receive: 'The sender did not hear back from this page.',
  },
};

/**
 * @param {unknown} err  an HttpipeError (has .code) or any Error
 * @param {'send'|'receive'} side
 * @returns {{code: string, title: string, detail: string}}
 */
export function describeError(err, side) {
  const code = err && typeof err === 'object' && typeof err.code === 'string' ? err.code : 'UNKNOWN';
  const detail = err && err.message ? String(err.message) : String(err);
  const m = MESSAGES[code];
  if (m) return { code, title: m[side], detail };
  if (err && err.name === 'AbortError') return { code: 'ABORTED', title: 'Cancelled.', detail };
  if (err instanceof TypeError && /fetch|network/i.test(detail)) {
    return { code: 'NETWORK', title: MESSAGES.NETWORK[side], detail };
  }
  return { code, title: 'Something went wrong.', detail };
}

const HEADLINES = {
  PEER_DISCONNECTED: { send: 'The other side left.', receive: 'The other side left.' },
  TRUNCATED: { send: 'The transfer was cut short.', receive: 'Cut short: nothing was saved.' },
  WRONG_KEY: { send: 'The receiver could not decrypt.', receive: 'Wrong passphrase or key.' },
  DECRYPT_FAILED: { send: 'The receiver could not decrypt.', receive: 'Damaged data: nothing was saved.' },
  NETWORK: { send: "Can't reach the relay.", receive: "Can't reach the relay." },
  UNCONFIRMED: { send: 'Not confirmed by the receiver.', receive: 'Not confirmed.' },
};

/** The short status line for a failure (the panel's heading), by error code and side. */
export function headline(code, side) {
  return (HEADLINES[code] && HEADLINES[code][side]) || 'The transfer failed.';
}
