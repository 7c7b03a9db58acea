// Receive links: everything the receiver needs travels in the URL's #fragment, which browsers
// never send to a server, so the relay sees neither the key nor the file's name.
//
// Short-code links (the QR code of a code, PROTOCOL.md §14) carry just the code:
//
//   https://relay.example/#code=7-guitarist-revenge
//
// and open the receive screen with the code filled in. Key links:
//
//   https://relay.example/#r=/s/k3v9...&k=AGE-SECRET-KEY-1...&n=report.pdf&s=123456&t=application/pdf&m=file
//
// r = stream path (PROTOCOL.md §1), k = age X25519 identity (absent in passphrase mode),
// p = 1 when the receiver must type a passphrase, n = file name, s = size in bytes (plaintext),
// t = media type, m = kind ('file' | 'zip' | 'text').

const BASE32 = 'abcdefghijkmnpqrstuvwxyz23456789'; // no l, o, 0, 1: easy to read aloud and type

/** Random characters from BASE32 (5 bits each) using the platform CSPRNG. */
export function randomChars(count) {
  const bytes = new Uint8Array(count);
  crypto.getRandomValues(bytes);
  let out = '';
  for (const b of bytes) out += BASE32[b & 31];
  return out;
}

/** A fresh, unguessable stream path: "/s/" + 16 chars (80 bits). Never a reserved path (§2). */
export function randomPath() {
  return `/s/${randomChars(16)}`;
}

/** A random passphrase-like secret: 5 groups of 5 chars (125 bits), e.g. "k3v9a-...". */
export function randomPassphrase() {
  return Array.from({ length: 5 }, () => randomChars(5)).join('-');
}

/**
 * Builds the receive link.
 * @param {string} origin  page origin, e.g. "https://127.0.0.1:8443"
 * @param {{path: string, identity?: string, passphrase?: boolean, name?: string, size?: number, type?: string, kind?: string}} t
 * @returns {string}
 */
export function buildLink(origin, t) {
  const q = new URLSearchParams();
  q.set('r', t.path);
  if (t.identity) q.set('k', t.identity);
  if (t.passphrase) q.set('p', '1');
  if (t.name) q.set('n', t.name);
  if (Number.isSafeInteger(t.size) && t.size >= 0) q.set('s', String(t.size));
  if (t.type) q.set('t', t.type);
  if (t.kind) q.set('m', t.kind);
  return `${origin}/#${q.toString()}`;
}

/** A short code's text as people type it: "7-guitarist-revenge", "7 Guitarist Revenge". */
const CODE_LIKE = /^\s*[1-9]\d{0,3}(?:[\s-]+[a-z]+){2}\s*$/i;

/** True if `text` has the shape of a short code (the SDK checks the words themselves). */
export function looksLikeCode(text) {
  return CODE_LIKE.test(String(text || ''));
}

/** "7 Guitarist  revenge" -> "7-guitarist-revenge" (what the page shows and links carry). */
export function normaliseCode(text) {
  return String(text || '').trim().toLowerCase().split(/[\s-]+/).filter(Boolean).join('-');
}

/** The short link of a code: opens the receive screen with the code filled in. */
export function codeLink(origin, code) {
  return `${origin}/#code=${encodeURIComponent(normaliseCode(code))}`;
}

/**
 * Parses a link's fragment (with or without the leading '#').
 * @returns {null | {code: string} | {path: string, identity?: string, passphrase: boolean, name?: string, size?: number, type?: string, kind?: string}}
 *   null when the fragment is not a receive link; `{code}` for a short-code link.
 */
export function parseFragment(fragment) {
  const q = new URLSearchParams(String(fragment || '').replace(/^#/, ''));
  if (q.has('code')) {
    const code = q.get('code');
    return looksLikeCode(code) ? { code: normaliseCode(code) } : null;
  }
  const path = q.get('r');
  if (!path || !path.startsWith('/')) return null;
  const size = q.has('s') ? Number(q.get('s')) : undefined;
  const identity = q.get('k') || undefined;
  if (identity !== undefined && !/^AGE-SECRET-KEY-1[0-9A-Z]+$/.test(identity)) return null;
  return {
    path,
    identity,
    passphrase: !identity,
    name: q.get('n') || undefined,
    size: Number.isSafeInteger(size) && size >= 0 ? size : undefined,
    type: q.get('t') || undefined,
    kind: q.get('m') || undefined,
  };
}

/**
 * What a person typed into "code or link": a short code, a whole link (its fragment is used),
 * a fragment, or a bare stream path ("/s/abc" or "s/abc").
 * @returns {null | ReturnType<typeof parseFragment>}
 */
export function parseTyped(text) {
  const s = String(text || '').trim();
  if (!s) return null;
  if (looksLikeCode(s)) return { code: normaliseCode(s) };
  const hash = s.indexOf('#');
  if (hash >= 0) return parseFragment(s.slice(hash));
  if (/^[a-z]+:\/\//i.test(s)) {
    try {
      const u = new URL(s);
      return u.pathname.length > 1 ? { path: u.pathname, passphrase: true } : null;
    } catch { return null; }
  }
  if (/\s/.test(s)) return null;
  return { path: s.startsWith('/') ? s : `/${s}`, passphrase: true };
}

/** A file name safe to suggest to a save dialog (no path separators or control characters). */
export function safeFileName(name, fallback = 'httpipe-download') {
  const cleaned = String(name || '').replace(/[\u0000-\u001f\u007f/\\]/g, '_').replace(/^\.+/, '').trim();
  return cleaned.slice(0, 200) || fallback;
}

/**
 * The mode an access token grants, from its claims (PROTOCOL.md §6: `hp1.<base64url JSON>.<MAC>`,
 * `m` is 'r', 'w' or 'c' for a code token); not verified (the relay does that). undefined when
 * it can't be read.
 */
export function tokenMode(token) {
  try {
    const b64 = String(token).split('.')[1].replaceAll('-', '+').replaceAll('_', '/');
    const m = JSON.parse(atob(b64)).m;
    return typeof m === 'string' ? m : undefined;
  } catch {
    return undefined;
  }
}
