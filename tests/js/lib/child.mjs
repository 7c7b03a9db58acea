// Runs a Node script as a child process and reads its JSON-lines events.
// Options: `env`; `command` (another executable than this Node, e.g. Deno, with `args` as its
// arguments); `stdin: true` to talk to the child with `send(obj)` (one JSON line).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { ROOT } from './relay.mjs';

export function runChild(args, { env, command = process.execPath, stdin = false, cwd } = {}) {
  const proc = spawn(command, args, { cwd, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], env: { ...process.env, ...(env || {}) } });
  if (stdin) proc.stdin.on('error', () => {}); // a child that exited first: EPIPE
  // Decoded as UTF-8 streams: a character split between two reads stays whole.
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  const events = [];
  const waiters = [];
  let buf = '';
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  proc.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let ev;
      try { ev = JSON.parse(line); } catch { continue; }
      events.push(ev);
      for (const w of [...waiters]) if (w.pred(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev); }
    }
  });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  // A waiter whose event can no longer come (the child's output ended) fails at once.
  let closed = false;
  proc.on('close', (code, signal) => {
    closed = true;
    for (const w of waiters.splice(0)) w.reject(new Error(`child exited (${code ?? signal}) without the event; events ${JSON.stringify(events)}; stderr ${stderr}`));
  });
  return {
    proc,
    events,
    stderr: () => stderr,
    exited,
    /** Resolves with the first event matching `pred` (seen already or later). */
    waitFor(pred, ms = 30_000) {
      const seen = events.find(pred);
      if (seen) return Promise.resolve(seen);
      if (closed) return Promise.reject(new Error(`child exited without the event; events ${JSON.stringify(events)}; stderr ${stderr}`));
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`child event not seen in ${ms} ms; events ${JSON.stringify(events)}; stderr ${stderr}`)), ms);
        waiters.push({ pred, resolve: (e) => { clearTimeout(t); resolve(e); }, reject: (e) => { clearTimeout(t); reject(e); } });
      });
    },
    /** Writes `obj` as one JSON line to the child's stdin (with `stdin: true`). */
    send(obj) { proc.stdin.write(`${JSON.stringify(obj)}\n`); },
    kill(sig = 'SIGKILL') { if (proc.exitCode === null && proc.signalCode === null) proc.kill(sig); },
  };
}

/**
 * Any command with its output collected as UTF-8 (a character may be split between two
 * reads): `done` resolves with `{ code, signal, out, err }` on exit, or rejects after `ms`
 * (the child killed). `children`, if given, holds the live ones (for `after` to kill).
 */
export function runCollected(name, cmd, args, { ms = 60_000, env, children } = {}) {
  const proc = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(env || {}) } });
  if (children) children.add(proc);
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`${name} did not exit within ${ms} ms:\n${err}`)); }, ms);
    proc.on('exit', (code, signal) => { clearTimeout(timer); if (children) children.delete(proc); resolve({ code, signal, out, err }); });
  });
  done.catch(() => {});
  return { proc, done };
}

/** A process's resident set size in bytes (`/proc/PID/status` VmRSS); 0 once it exited. */
export function rssOf(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}

/** Every process: { pid, ppid, name, cmd } (cmd: the command line's arguments), from /proc. */
export function processes() {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      const ppid = Number(stat.replace(/^.*\) /, '').split(' ')[1]);
      out.push({ pid: Number(d), ppid, name: /\((.*)\)/.exec(stat)[1], cmd });
    } catch { /* gone */ }
  }
  return out;
}

/** `root` and its descendants, from `procs` (default: {@link processes} now). */
export function processTree(root, procs = processes()) {
  const ours = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!ours.has(p.pid) && ours.has(p.ppid)) { ours.add(p.pid); grew = true; }
  }
  return procs.filter((p) => ours.has(p.pid));
}
