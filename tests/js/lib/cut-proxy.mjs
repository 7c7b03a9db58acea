// A TCP proxy for tests, between a client and the relay, that breaks connections the way
// networks do (PROTOCOL.md §12.3): it cuts the connection that carries the Nth byte sent
// through it (client → relay, counted over all its connections), or stalls every
// connection without closing it, or the one that carries the Nth byte (a tunnel, an address
// that changed: later connections pass), or goes down at a cut until revived (every
// connection open then or made meanwhile stalls for good: a link that came back, a NAT that
// forgot its mappings), and can cut everything at once. It can also be slow: open each
// connection to the relay only after a delay, or pass a client's close on only after one
// (a middlebox that holds a dead connection open for a moment).
import net from 'node:net';

/**
 * @param {number} targetPort the relay's port on 127.0.0.1
 * @returns {Promise<{ port: number, url: string, cutAt: (...bytes: number[]) => void,
 *   cutDownAt: (...bytes: number[]) => void, flipAt: (...bytes: number[]) => void, stall: () => void,
 *   stallAt: (...bytes: number[]) => void, stallDownAt: (...bytes: number[]) => void, cutAll: () => void,
 *   downFromCut: () => void, revive: () => void, delayConnections: (ms: number) => void,
 *   delayCloses: (ms: number) => void,
 *   stats: { up: number, down: number, cuts: number, stalls: number, connections: number, cutAtMs?: number },
 *   close: () => Promise<void> }>}
 */
export async function cutProxy(targetPort) {
  const stats = { up: 0, down: 0, cuts: 0, stalls: 0, connections: 0 };
  /** Upstream byte counts at which to cut the connection carrying that byte, ascending. */
  let cuts = [];
  /** The same for bytes relay → client. */
  let downCuts = [];
  let stalled = false;
  /** The next cut takes the link down (`downFromCut`), until `revive`. */
  let downOnCut = false;
  let down = false;
  /** Byte counts (client → relay, relay → client) at which the connection carrying that
   * byte stalls: it carries nothing more either way and stays open (a tunnel, a changed
   * address); connections made later pass. */
  let stallsUp = [];
  let stallsDown = [];
  /** Milliseconds before a new connection is opened to the relay, and before a client's
   * close reaches it. */
  let connectDelay = 0;
  let closeDelay = 0;
  /** Upstream byte positions to flip (XOR 1), like a tampering middlebox. */
  let flips = [];
  const pairs = new Set();

  const cut = (pair) => {
    stats.cuts += 1;
    stats.cutAtMs = performance.now();
    pair.client.resetAndDestroy?.() ?? pair.client.destroy();
    pair.server.destroy();
    pairs.delete(pair);
    if (downOnCut) {
      [down, downOnCut] = [true, false];
      for (const p of pairs) stallPair(p);
    }
  };

  /** Stops a pair for good without closing it: nothing is read (so the sender's buffers
   * fill and it blocks, as behind a dead link) and nothing is written. */
  const stallPair = (pair) => {
    stats.stalls += 1;
    pair.stalled = true;
    pair.client.pause();
    pair.server.pause();
  };

  const server = net.createServer((client) => {
    stats.connections += 1;
    const upstream = new net.Socket();
    if (connectDelay) {
      client.pause();
      setTimeout(() => { upstream.connect(targetPort, '127.0.0.1'); if (!pair.stalled) client.resume(); }, connectDelay);
    } else {
      upstream.connect(targetPort, '127.0.0.1');
    }
    const pair = { client, server: upstream };
    pairs.add(pair);
    if (down) stallPair(pair);
    const drop = () => { client.destroy(); upstream.destroy(); pairs.delete(pair); };
    const clientGone = () => { if (closeDelay) setTimeout(drop, closeDelay); else drop(); };
    client.on('error', clientGone);
    client.on('close', clientGone);
    // a stalled pair's client hears nothing, the relay's end included (its idle timeout)
    const upstreamGone = () => { if (pair.stalled) upstream.destroy(); else drop(); };
    upstream.on('error', upstreamGone);
    upstream.on('close', upstreamGone);
    /**
     * Forwards `from` → `to`, counting in `stats[dir]`; when the count reaches the next of
     * `cutsOf()` the pair is cut, of `stallsOf()` it stalls (either kept to that byte);
     * `tamper` may change a chunk first.
     */
    const forward = (from, to, dir, cutsOf, stallsOf, tamper = (d) => d) => from.on('data', (chunk) => {
      if (stalled || pair.stalled) return;
      const data = tamper(chunk);
      for (const [due, act] of [[stallsOf(), stallPair], [cutsOf(), cut]]) {
        if (due.length && stats[dir] + data.length >= due[0]) {
          const keep = due.shift() - stats[dir];
          stats[dir] += keep;
          if (keep > 0) to.write(data.subarray(0, keep));
          act(pair);
          return;
        }
      }
      stats[dir] += data.length;
      if (!to.write(data)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
    forward(client, upstream, 'up', () => cuts, () => stallsUp, (chunk) => {
      let data = chunk;
      for (const at of flips) {
        if (at >= stats.up && at < stats.up + data.length) {
          data = Buffer.from(data);
          data[at - stats.up] ^= 1;
        }
      }
      flips = flips.filter((at) => at >= stats.up + data.length);
      return data;
    });
    forward(upstream, client, 'down', () => downCuts, () => stallsDown);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = /** @type {net.AddressInfo} */ (server.address());
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    stats,
    cutAt: (...bytes) => { cuts = [...cuts, ...bytes].sort((a, b) => a - b); },
    cutDownAt: (...bytes) => { downCuts = [...downCuts, ...bytes].sort((a, b) => a - b); },
    flipAt: (...bytes) => { flips = [...flips, ...bytes]; },
    stall: () => { stalled = true; },
    downFromCut: () => { downOnCut = true; },
    revive: () => { down = false; },
    delayConnections: (ms) => { connectDelay = ms; },
    delayCloses: (ms) => { closeDelay = ms; },
    stallAt: (...bytes) => { stallsUp = [...stallsUp, ...bytes].sort((a, b) => a - b); },
    stallDownAt: (...bytes) => { stallsDown = [...stallsDown, ...bytes].sort((a, b) => a - b); },
    cutAll: () => { stalled = false; for (const p of [...pairs]) cut(p); },
    close: () => new Promise((resolve) => {
      for (const p of [...pairs]) { p.client.destroy(); p.server.destroy(); }
      server.close(() => resolve());
    }),
  };
}
