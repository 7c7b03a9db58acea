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
  UNAUTHORIZED: {
    send: 'This relay needs an access token (a write token), and none or an invalid one was given. Enter it under Options, then send again.',
    receive: 'This relay needs an access token (a read token), and none or an invalid one was given. Enter it below, then try again.',
  },
  FORBIDDEN: {
    send: "The access token doesn't allow sending here: it needs to be a write token for this path (or a parent path).",
    receive: "The access token doesn't allow receiving here: it needs to be a read token for this path (or a parent path).",
  },
  RELAY_BUSY: {
    send: 'The relay is busy right now: its short-code channels are taken, or this network has too many transfers waiting on it. Try again in a moment.',
    receive: 'The relay is busy right now: this network has too many transfers or code lookups waiting on it. Try again in a moment.',
  },
  WRONG_CODE: {
    send: 'Someone entered a wrong code, so this code no longer works. Nothing was sent. Make a new code and read it out again.',
    receive: "It doesn't match the sender's code. Nothing was received. Check the code with the sender: they need to make a new one.",
  },
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
  if (code === 'WRONG_CODE' && side === 'receive' && /no sender is waiting/.test(detail)) {
    return { code, title: 'Nobody is sending with this code: it was used already, it expired, or it was mistyped. Nothing was received.', detail };
  }
  if (code === 'FORBIDDEN' && /\/code\/v1\//.test(detail)) {
    return { code, title: "Short codes on this relay need a code token (ask its operator for one): this token doesn't allow them.", detail };
  }
  if (code === 'PEER_DISCONNECTED' && side === 'send' && err.peerCode === 'WRONG_KEY') {
    return { code, title: 'The receiver could not decrypt (a wrong passphrase, or no key). Nothing was sent.', detail };
  }
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
  WRONG_CODE: { send: 'Wrong code.', receive: 'Wrong code.' },
  UNAUTHORIZED: { send: 'An access token is needed.', receive: 'An access token is needed.' },
  FORBIDDEN: { send: "The access token doesn't fit.", receive: "The access token doesn't fit." },
  CONNECT_TIMEOUT: { send: 'Nobody came.', receive: 'The sender did not come.' },
  RELAY_BUSY: { send: 'The relay is busy.', receive: 'The relay is busy.' },
};

/** The short status line for a failure (the panel's heading), by error code and side. */
export function headline(code, side) {
  return (HEADLINES[code] && HEADLINES[code][side]) || 'The transfer failed.';
}
