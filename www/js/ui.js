// Small DOM helpers shared by the sender and receiver panels.
import { ProgressMeter, formatBytes } from './format.js';

export const $ = (id) => document.getElementById(id);

export function show(el, visible = true) { el.hidden = !visible; }

export function setText(el, text) { el.textContent = text; }

/**
 * Binds a <progress> and a stats line to a ProgressMeter, redrawing at most 4 times a second.
 * `onStall(true)` when no byte moved for a few seconds (the other side holds back), and
 * `onStall(false)` when bytes move again.
 * `opts.percent`: an element that shows the percentage in large type.
 * @param {{ onStall?: (stalled: boolean) => void, percent?: HTMLElement }} [opts]
 * @returns {{ meter: ProgressMeter, update(bytes:number): void, finish(bytes?:number): void, stop(): void }}
 */
export function progressView(bar, stats, total, opts = {}) {
  const meter = new ProgressMeter(total);
  let wasStalled = false;
  const draw = () => {
    if (meter.bytes === 0) return; // waiting for the other side: nothing to show yet
    const s = meter.snapshot();
    if (s.percent !== undefined) { bar.max = 100; bar.value = s.percent; } else bar.removeAttribute('value');
    stats.textContent = meter.describe();
    if (opts.percent) opts.percent.textContent = s.percent !== undefined ? `${Math.floor(s.percent)}%` : '';
    if (s.stalled !== wasStalled) {
      wasStalled = s.stalled;
      if (opts.onStall) opts.onStall(s.stalled);
    }
  };
  bar.max = 100;
  bar.value = 0;
  stats.textContent = '';
  if (opts.percent) opts.percent.textContent = '';
  const timer = setInterval(draw, 250);
  return {
    meter,
    update(bytes) { meter.update(bytes); },
    finish(bytes) {
      clearInterval(timer);
      if (wasStalled && opts.onStall) opts.onStall(false);
      if (bytes !== undefined) meter.update(bytes);
      bar.max = 100;
      bar.value = 100;
      if (opts.percent) opts.percent.textContent = '100%';
      const secs = (meter.now() - meter.start) / 1000;
      stats.textContent = `${formatBytes(meter.bytes)} in ${secs.toFixed(1)} s · ${formatBytes(meter.averageRate())}/s on average`;
    },
    /** The transfer ended without success: keep how far it got, drop rate and time left. */
    stop() {
      clearInterval(timer);
      if (wasStalled && opts.onStall) opts.onStall(false);
      const s = meter.snapshot();
      // nothing moved: no bar, no "0%" (the panel's status says what happened)
      if (s.bytes === 0) {
        bar.hidden = true;
        if (opts.percent) opts.percent.textContent = '';
      }
      if (s.percent !== undefined) bar.value = s.percent;
      stats.textContent = s.bytes === 0 ? '' : s.total !== undefined
        ? `${formatBytes(s.bytes)} of ${formatBytes(s.total)} (${Math.floor(s.percent)}%) got through before it stopped.`
        : `${formatBytes(s.bytes)} got through before it stopped.`;
    },
  };
}

/** What a panel says while the SDK reconnects after a broken connection (PROTOCOL.md §12.3). */
export const RESUMING = 'Connection lost — resuming…';

/**
 * An `onProgress` handler that shows {@link RESUMING} in `el` while the SDK reports
 * `reconnecting`, and puts the panel's own line back once the transfer goes on (unless the
 * panel wrote something else meanwhile).
 * @param {HTMLElement} el
 * @returns {(p: { reconnecting?: boolean }) => void}
 */
export function resumeNotice(el) {
  let saved = null;
  return (p) => {
    if (p.reconnecting && saved === null) {
      saved = el.textContent;
      el.textContent = RESUMING;
    } else if (!p.reconnecting && saved !== null) {
      if (el.textContent === RESUMING) el.textContent = saved;
      saved = null;
    }
  };
}

/**
 * Copies text to the clipboard and briefly relabels the button. Where the Clipboard API is
 * missing (plain-http pages on another host), selects `field` and uses the older copy command.
 */
export async function copyButton(button, text, field) {
  const label = button.textContent;
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    if (field) {
      field.focus();
      field.select();
      try { ok = document.execCommand('copy'); } catch { ok = false; }
    }
  }
  button.textContent = ok ? 'Copied' : 'Press Ctrl+C to copy';
  setTimeout(() => { button.textContent = label; }, 1500);
}

/** Shows an error: the sentence for people, then the technical detail in small print. */
export function showError(el, { title, detail }) {
  const main = document.createElement('span');
  main.textContent = title;
  const small = document.createElement('small');
  small.className = 'detail';
  small.textContent = ` Details: ${detail}`;
  el.replaceChildren(main, small);
}

/**
 * Shows a short code as tiles: "7-guitarist-revenge" → [7] - [guitarist] - [revenge] (the
 * text content stays the code itself, so copying the element copies the code).
 */
export function renderCode(el, code) {
  const parts = String(code).split('-');
  const nodes = [];
  parts.forEach((part, i) => {
    if (i > 0) {
      const sep = document.createElement('span');
      sep.className = 'code-sep';
      sep.textContent = '-';
      nodes.push(sep);
    }
    const tile = document.createElement('span');
    tile.className = i === 0 ? 'code-num' : 'code-word';
    tile.textContent = part;
    nodes.push(tile);
  });
  el.replaceChildren(...nodes);
}

/**
 * A long read-only field (the receive link) shows its beginning, also once focused: the
 * address is what people recognise, not the encoded tail of the fragment.
 */
export function showStart(input) {
  if (input.dataset.showStart) return;
  input.dataset.showStart = 'true';
  const reset = () => requestAnimationFrame(() => { input.scrollLeft = 0; });
  input.addEventListener('focus', () => { input.select(); reset(); });
  reset();
}
