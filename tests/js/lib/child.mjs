// Runs a Node script as a child process and reads its JSON-lines events.
import { spawn } from 'node:child_process';

export function runChild(args, { env } = {}) {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(env || {}) } });
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
  return {
    proc,
    events,
    stderr: () => stderr,
    exited,
    /** Resolves with the first event matching `pred` (seen already or later). */
    waitFor(pred, ms = 30_000) {
      const seen = events.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`child event not seen in ${ms} ms; events ${JSON.stringify(events)}; stderr ${stderr}`)), ms);
        waiters.push({ pred, resolve: (e) => { clearTimeout(t); resolve(e); } });
      });
    },
    kill(sig = 'SIGKILL') { if (proc.exitCode === null) proc.kill(sig); },
  };
}
