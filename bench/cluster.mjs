#!/usr/bin/env node
// Relay cluster: a pair split across two nodes vs the same pair on one node (throughput, relay CPU per GiB, rendezvous latency) and Redis commands per transfer
//
//   cargo build --release && node bench/cluster.mjs
//   BENCH_MB=512 RUNS=5 PAIRS=500 node bench/cluster.mjs
//
// Two `httpipe-relay --cluster` nodes A and B on one throw-away redis-server (PROTOCOL.md §13),
// loopback. The peer of every cross-node figure is the same-node figure measured in the same
// run (alternating, same clients), and the table gives their ratio.
//   1. single stream, HTTP/1.1, curl -T file → relay → curl -o /dev/null, BENCH_MB MiB (default
//      256), median of RUNS (default 3): same node (both on A); cross-node with the producer
//      forwarded (consumer waits on B, producer enters at A); cross-node with the consumer
//      forwarded (producer waits on A, consumer enters at B). Also the relays' CPU seconds
//      (both nodes, utime+stime from /proc) per GiB.
//   2. rendezvous latency: a receiver waiting (on B, or on A for same-node), a 1-byte POST
//      to A: time from the POST written to the receiver's first body byte, raw TCP sockets
//      opened beforehand, median of PAIRS (default 200) after 10 warm-up pairs; every pair on a
//      fresh path (so each one claims it in Redis). Also the whole tiny transfer (GET written →
//      POST's status log read to its end), median.
//   3. Redis commands per transfer: `INFO commandstats` deltas over the pairs of 2., minus the
//      idle heartbeat rate measured beforehand (3 s with no traffic) times the loop's duration:
//      the scripts (EVALSHA, one round trip each; §13.5 says 3 for a cross-node pair: claim,
//      claim, release) and every command, those the scripts run included (commandstats counts
//      both).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startRedis, startCluster } from '../tests/js/lib/cluster.mjs';

const MB = 1024 * 1024;
const SIZE = (Number(process.env.BENCH_MB) || 256) * MB;
const RUNS = Number(process.env.RUNS) || 3;
const PAIRS = Number(process.env.PAIRS) || 200;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => { const v = [...xs].sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} → ${c}`))));
  });
}

const redis = await startRedis();
const cluster = await startCluster({ nodes: 2, redis });
const [A, B] = cluster.urls;
const pids = cluster.nodes.map((n) => n.proc.pid);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-bench-cluster-'));
const cleanup = async () => { await cluster.stop(); await redis.stop(); fs.rmSync(tmp, { recursive: true, force: true }); };
process.on('SIGINT', async () => { await cleanup(); process.exit(130); });

try {
  // ------------------------------------------------------------ 1. throughput
  const file = path.join(tmp, 'payload.bin');
  {
    const fd = fs.openSync(file, 'w');
    const chunk = Buffer.alloc(16 * MB, 0x5a);
    for (let n = 0; n < SIZE; n += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, SIZE - n));
    fs.closeSync(fd);
  }
  const cpuNow = () => pids.reduce((s, pid) => s + cpuSeconds(pid), 0);
  // first: where the first peer waits; second: where the other enters
  const pairOf = async (p, first, second, consumerFirst) => {
    const recvAt = consumerFirst ? first : second;
    const sendAt = consumerFirst ? second : first;
    const t0 = performance.now();
    const c0 = cpuNow();
    let recv;
    let send;
    if (consumerFirst) {
      recv = run('curl', ['-sS', '-o', '/dev/null', `${recvAt}${p}`]);
      await sleep(30);
      send = run('curl', ['-sS', '-o', '/dev/null', '-T', file, `${sendAt}${p}`]);
    } else {
      send = run('curl', ['-sS', '-o', '/dev/null', '-T', file, `${sendAt}${p}`]);
      await sleep(30);
      recv = run('curl', ['-sS', '-o', '/dev/null', `${recvAt}${p}`]);
    }
    await Promise.all([recv, send]);
    const s = (performance.now() - t0) / 1000;
    return { mbs: SIZE / MB / s, cpu: (cpuNow() - c0) / (SIZE / (1024 * MB)) };
  };
  const variants = {
    same: (p) => pairOf(p, A, A, true),
    producerForwarded: (p) => pairOf(p, B, A, true), // consumer waits on B (owner), producer enters at A
    consumerForwarded: (p) => pairOf(p, A, B, false), // producer waits on A (owner), consumer enters at B
  };
  const tp = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const [k, f] of Object.entries(variants)) tp[k].push(await f(`/bench-cluster-tp-${k}-${i}`));
  }
  const tpMed = Object.fromEntries(Object.entries(tp).map(([k, v]) => [k, { mbs: median(v.map((x) => x.mbs)), cpu: median(v.map((x) => x.cpu)) }]));
  console.error(`throughput: ${JSON.stringify(tpMed)}`);

  // ------------------------------------------------------------ 2./3. rendezvous, Redis commands
  const portOf = (u) => Number(new URL(u).port);
  const connected = async (url) => {
    const sock = net.connect(portOf(url), '127.0.0.1');
    sock.setNoDelay(true);
    await new Promise((r, j) => { sock.once('connect', r); sock.once('error', j); });
    return sock;
  };
  const commandstats = () => {
    const out = redis.cli('INFO', 'commandstats');
    const calls = {};
    for (const m of out.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (m[1] !== 'info') calls[m[1]] = Number(m[2]);
    return calls;
  };
  const total = (c) => Object.values(c).reduce((a, b) => a + b, 0);
  const diff = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - (a[k] || 0)]).filter(([, v]) => v));

  // the heartbeats' own rate, with no traffic
  await sleep(1000);
  const idle0 = commandstats();
  const idleT0 = performance.now();
  await sleep(3000);
  const idleSecs = (performance.now() - idleT0) / 1000;
  const idleDelta = diff(idle0, commandstats());
  const idleRate = total(idleDelta) / idleSecs;
  const scripts = (c) => (c.evalsha || 0) + (c.eval || 0) + (c.fcall || 0);
  const idleScriptRate = scripts(idleDelta) / idleSecs;

  const rendezvous = async (waitAt, postAt, tag) => {
    const first = [];
    const whole = [];
    const before = commandstats();
    const t0 = performance.now();
    for (let i = 0; i < PAIRS + 10; i++) {
      const p = `/bench-cluster-rtt-${tag}-${i}`;
      const g = await connected(waitAt);
      const post = await connected(postAt);
      let gbuf = '';
      let pbuf = '';
      const got = new Promise((resolve) => {
        g.on('data', (d) => {
          gbuf += d.toString('latin1');
          const h = gbuf.indexOf('\r\n\r\n');
          if (h >= 0 && gbuf.slice(h + 4).includes('x')) resolve(performance.now());
        });
      });
      const logDone = new Promise((resolve) => {
        post.on('data', (d) => {
          pbuf += d.toString('latin1');
          if (pbuf.includes('[STATE:TRANSFER_SUCCESSFUL]') || pbuf.includes('[ERROR')) resolve(performance.now());
        });
      });
      const tg = performance.now();
      g.write(`GET ${p} HTTP/1.1\r\nHost: bench\r\n\r\n`);
      await sleep(20); // the receiver is waiting (its claim made)
      const tp0 = performance.now();
      post.write(`POST ${p} HTTP/1.1\r\nHost: bench\r\nContent-Length: 1\r\n\r\nx`);
      const t1 = await got;
      const t2 = await logDone;
      if (!pbuf.includes('[STATE:TRANSFER_SUCCESSFUL]')) throw new Error(`pair ${tag} ${i} failed: ${pbuf}`);
      if (i >= 10) { first.push(t1 - tp0); whole.push(t2 - tg - 20); }
      g.destroy();
      post.destroy();
      await sleep(5);
    }
    const seconds = (performance.now() - t0) / 1000;
    const d = diff(before, commandstats());
    const n = PAIRS + 10;
    return {
      first: median(first),
      whole: median(whole),
      redisRaw: total(d) / n,
      redisNet: (total(d) - idleRate * seconds) / n,
      scriptsNet: (scripts(d) - idleScriptRate * seconds) / n,
      byCommand: Object.entries(d).map(([k, v]) => `${k} ${(v / n).toFixed(2)}`).join(', '),
    };
  };
  const rttSame = await rendezvous(A, A, 'same');
  const rttCross = await rendezvous(B, A, 'cross');
  console.error(`rendezvous: same ${JSON.stringify(rttSame)}, cross ${JSON.stringify(rttCross)}, idle Redis calls/s ${idleRate.toFixed(2)}`);

  // ------------------------------------------------------------ table
  const rows = [
    [`single stream, HTTP/1.1, curl pair, ${SIZE / MB} MiB, MB/s (median of ${RUNS}): producer forwarded A→B`, tpMed.producerForwarded.mbs, tpMed.same.mbs, 1],
    [`single stream, HTTP/1.1, curl pair, ${SIZE / MB} MiB, MB/s (median of ${RUNS}): consumer forwarded B→A`, tpMed.consumerForwarded.mbs, tpMed.same.mbs, 1],
    ['relay CPU seconds per GiB (both nodes), producer forwarded', tpMed.producerForwarded.cpu, tpMed.same.cpu, 3],
    ['relay CPU seconds per GiB (both nodes), consumer forwarded', tpMed.consumerForwarded.cpu, tpMed.same.cpu, 3],
    [`rendezvous latency, POST written → receiver's first byte, ms (median of ${PAIRS})`, rttCross.first, rttSame.first, 3],
    [`tiny transfer, GET written → producer's log ended, minus the 20 ms wait, ms (median of ${PAIRS})`, rttCross.whole, rttSame.whole, 3],
    ['Redis round trips (EVALSHA) per transfer, net of heartbeats', rttCross.scriptsNet, rttSame.scriptsNet, 2],
    ['Redis commands per transfer, those run inside the scripts included, net of heartbeats', rttCross.redisNet, rttSame.redisNet, 2],
  ];
  console.log(`\nhttpipe-relay cluster: 2 nodes + redis-server, loopback, ${os.cpus().length} CPUs\n`);
  console.log('| measurement | cross-node | same node | cross/same |');
  console.log('|---|---:|---:|---:|');
  for (const [name, a, b, d] of rows) console.log(`| ${name} | ${a.toFixed(d)} | ${b.toFixed(d)} | ${(a / b).toFixed(2)} |`);
  console.log(`\nRedis commands per pair by command (raw): cross-node: ${rttCross.byCommand}; same node: ${rttSame.byCommand}`);
  console.log(`idle heartbeats: ${idleScriptRate.toFixed(2)} EVALSHA/s and ${idleRate.toFixed(2)} commands/s (inside scripts included) for 2 nodes`);
  console.log('(INFO commandstats counts the commands a script runs as well as the EVALSHA itself)');
} finally {
  await cleanup();
}
