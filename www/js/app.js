// Entry point: loads the SDK, routes between the start view (send; receive by code or link),
// the sender panel and the receiver panel (a link's #fragment: #code=…, #r=…, #receive), and
// wires the controls.
import { parseFragment, parseTyped, buildLink, randomPassphrase, looksLikeCode, normaliseCode, tokenMode } from './link.js';
import { registerDownloadWorker, hasFsa } from './save.js';
import { readDrop, walkDrop, fromInput } from './folders.js';
import { Sender } from './send.js';
import { Receiver, SAVE_PREF_KEY } from './receive.js';
import { describeError } from './errors.js';
import { $, show, setText, copyButton } from './ui.js';

const MODE_KEY = 'httpipe.mode';
const MODE_WORDS = { code: 'short code', link: 'secret link', passphrase: 'link and passphrase' };

let sdk = null;
let sender = null;
let receiver = null;
let authMode = false;
let autostart = false;        // the next #code= route starts at once (typed on the start view)

async function loadSdk() {
  try {
    const mod = await import('/assets/pkg/index.js');
    if (typeof mod.init === 'function') await mod.init();
    return mod;
  } catch (err) {
    const banner = $('boot-error');
    setText(banner, `The httpipe SDK could not be loaded from /assets/pkg/ (${err.message}). Build it with scripts/build-sdk.sh and restart the relay.`);
    show(banner);
    throw err;
  }
}

/**
 * Whether the relay wants access tokens (PROTOCOL.md §6): its /help page says so ("This relay
 * requires access tokens", relay/src/ops.rs; demo-auth.test.mjs checks both ends). A probe
 * with a Data or Connect request would tell too, but fails visibly (401, or 408 in open mode)
 * in the browser's console on every visit.
 */
async function probeAuth() {
  try {
    const r = await fetch('/help', { cache: 'no-store' });
    return r.ok && /requires access tokens/.test(await r.text());
  } catch {
    return false;
  }
}

function storedMode() {
  try { return localStorage.getItem(MODE_KEY) || 'code'; } catch { return 'code'; }
}

function currentMode() {
  const checked = document.querySelector('input[name=mode]:checked');
  return checked ? checked.value : 'code';
}

function setMode(mode, remember = false) {
  const radio = $(`mode-${mode}`);
  if (!radio || radio.disabled) return;
  radio.checked = true;
  show($('passphrase-row'), mode === 'passphrase');
  if (mode === 'passphrase' && !$('passphrase').value) $('passphrase').value = randomPassphrase();
  setText($('options-summary'), `· ${MODE_WORDS[mode]}`);
  if (remember) { try { localStorage.setItem(MODE_KEY, mode); } catch { /* storage disabled */ } }
}

function setView(view) {
  document.body.dataset.view = view;
  show($('hero'), view === 'start');
  show($('start-view'), view === 'start');
  show($('send-panel'), view === 'send');
  show($('recv-panel'), view === 'receive');
}

/** Whether a transfer runs in this page (waiting for the other side counts). */
function busy() {
  const running = (x, states) => x && !x.closed && states.includes(x.machine.state);
  return running(sender, ['waiting', 'sending']) || running(receiver, ['waiting', 'ready', 'receiving']);
}

function token() {
  return $('token').value.trim() || undefined;
}

/** Auth mode: a code token sends by short code, a write token by link (the choice follows it). */
function followToken() {
  const m = token() && tokenMode(token());
  if (m === 'c' && currentMode() !== 'code') setMode('code');
  if ((m === 'w' || m === 'r') && currentMode() === 'code') setMode('link');
}

function startSending(items) {
  if (!sdk) return;
  const mode = currentMode();
  const passphrase = $('passphrase').value;
  if (mode === 'passphrase' && !passphrase) {
    $('options').open = true;
    $('passphrase').focus();
    return;
  }
  if (authMode && !token()) {
    setText($('drop-msg'), 'This relay needs an access token: enter it above, then choose what to send.');
    show($('drop-msg'));
    $('token').focus();
    return;
  }
  const granted = authMode ? tokenMode(token()) : undefined;
  if ((mode === 'code') !== (granted === 'c') && granted !== undefined) {
    setText($('drop-msg'), mode === 'code'
      ? 'This token sends by link only: short codes need a code token. Choose "Secret link" under Options, or enter a code token.'
      : 'A code token sends by short code only: choose "Short code" under Options, or enter a write token.');
    show($('drop-msg'));
    $('options').open = true;
    return;
  }
  if (sender) sender.close();
  try {
    sender = new Sender(sdk, items, { mode, passphrase, token: token() });
  } catch (err) {
    const d = describeError(err, 'send');
    setText($('boot-error'), `${d.title} (${d.detail})`);
    show($('boot-error'));
    return;
  }
  show($('drop-msg'), false);
  setView('send');
  sender.start();
}

function route() {
  const hash = location.hash;
  if (receiver) { receiver.close(); receiver = null; }
  let target = parseFragment(hash);
  if (!target && hash === '#receive') target = { code: '' };
  if (target) {
    if (sender) { sender.close(); sender = null; }
    setView('receive');
    if (!sdk) return;
    receiver = new Receiver(sdk, target, { token: token(), authMode, autostart });
    autostart = false;
    receiver.open();
  } else if (!sender || sender.closed) {
    setView('start');
  }
}

/** Goes to `hash` (routing again when it is the current one). */
function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

function backToStart() {
  if (sender) sender.close();
  sender = null;
  if (location.hash) history.pushState(null, '', location.pathname);
  if (receiver) { receiver.close(); receiver = null; }
  show($('drop-msg'), false);
  setView('start');
  $('drop').focus();
}

async function sendDrop(drop) {
  const { entries, folders } = await walkDrop(drop);
  const files = entries.filter((e) => e.file);
  if (files.length) startSending({ entries });
  else if (folders) {
    setText($('drop-msg'), 'That folder is empty: there is nothing to send.');
    show($('drop-msg'));
  } else if (drop.text) startSending({ text: drop.text });
}

function wireStartView() {
  const drop = $('drop');
  const input = $('file-input');
  const folderInput = $('folder-input');
  drop.addEventListener('click', () => input.click());
  drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); input.click(); }
  });
  input.addEventListener('change', () => {
    if (input.files.length) startSending({ entries: fromInput(input.files) });
    input.value = '';
  });
  $('pick-folder').addEventListener('click', () => folderInput.click());
  folderInput.addEventListener('change', () => {
    if (folderInput.files.length) startSending({ entries: fromInput(folderInput.files) });
    else { setText($('drop-msg'), 'That folder is empty: there is nothing to send.'); show($('drop-msg')); }
    folderInput.value = '';
  });

  // Files, folders or text dropped anywhere on the start view.
  const onStart = () => document.body.dataset.view === 'start';
  // (elsewhere a drop is refused: the browser would open the file in place of this page;
  // text dragged into a field goes into the field)
  const intoField = (e) => e.target && (e.target.tagName === 'INPUT' || e.target.tagName === 'TEXTAREA')
    && !(e.dataTransfer && [...e.dataTransfer.types].includes('Files'));
  for (const type of ['dragenter', 'dragover']) {
    document.addEventListener(type, (e) => {
      if (onStart() && intoField(e)) return;
      e.preventDefault();
      if (!onStart()) { if (e.dataTransfer) e.dataTransfer.dropEffect = 'none'; return; }
      drop.classList.add('over');
    });
  }
  document.addEventListener('dragleave', (e) => { if (!e.relatedTarget) drop.classList.remove('over'); });
  document.addEventListener('drop', (e) => {
    if (onStart() && intoField(e)) return;
    e.preventDefault();
    drop.classList.remove('over');
    if (!onStart()) return;
    show($('drop-msg'), false);
    if (!e.dataTransfer) return;
    // read now: the DataTransfer is emptied once this event returns
    sendDrop(readDrop(e.dataTransfer)).catch((err) => {
      setText($('drop-msg'), `Could not read what was dropped (${err && err.message ? err.message : err}).`);
      show($('drop-msg'));
    });
  });

  // Pasting onto the page: files are sent, text too, unless it is a code or a receive link
  // (then it goes into the receive field) or it is pasted into a field.
  document.addEventListener('paste', (e) => {
    if (!onStart() || !e.clipboardData) return;
    const files = [...e.clipboardData.files];
    if (files.length) { e.preventDefault(); startSending({ files }); return; }
    const t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    const text = e.clipboardData.getData('text/plain');
    if (!text) return;
    e.preventDefault();
    const trimmed = text.trim();
    if (looksLikeCode(trimmed) || (trimmed.startsWith(`${location.origin}/#`) && parseTyped(trimmed))) {
      $('open-input').value = trimmed;
      $('open-input').focus();
      return;
    }
    startSending({ text });
  });

  const writeText = $('write-text');
  writeText.addEventListener('click', () => {
    const open = $('text-box').hidden;
    show($('text-box'), open);
    writeText.setAttribute('aria-expanded', String(open));
    if (open) $('text-input').focus();
  });
  $('send-text').addEventListener('click', () => {
    const text = $('text-input').value;
    if (text) startSending({ text });
    else $('text-input').focus();
  });

  for (const radio of document.querySelectorAll('input[name=mode]')) {
    radio.addEventListener('change', () => setMode(radio.value, true));
  }
  $('new-passphrase').addEventListener('click', () => { $('passphrase').value = randomPassphrase(); });

  $('open-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const field = $('open-input');
    const target = parseTyped(field.value);
    if (!target) {
      field.setCustomValidity('Enter a code like 7-guitarist-revenge, or a receive link');
      field.reportValidity();
      return;
    }
    field.setCustomValidity('');
    if (target.code) {
      autostart = true;
      go(`#code=${normaliseCode(target.code)}`);
      return;
    }
    go(new URL(buildLink(location.origin, target)).hash);
  });
  $('open-input').addEventListener('input', () => $('open-input').setCustomValidity(''));
}

function wirePanels() {
  $('copy-link').addEventListener('click', () => copyButton($('copy-link'), $('link').value, $('link')));
  $('copy-code').addEventListener('click', () => sender && sender.code && copyButton($('copy-code'), sender.code));
  $('copy-code-link').addEventListener('click', () => sender && sender.codeUrl && copyButton($('copy-code-link'), sender.codeUrl));
  $('send-cancel').addEventListener('click', () => sender && sender.cancel());
  $('send-retry').addEventListener('click', () => sender && sender.retry());
  $('send-new').addEventListener('click', backToStart);
  $('recv-cancel').addEventListener('click', () => receiver && receiver.cancel());
  $('recv-retry').addEventListener('click', () => receiver && receiver.retry());
  $('recv-new').addEventListener('click', () => go('#receive'));
  $('recv-form').addEventListener('submit', (e) => {
    e.preventDefault();
    if (receiver) receiver.submit();
  });
  $('recv-code').addEventListener('input', () => $('recv-code').setCustomValidity(''));
  $('home-link').addEventListener('click', (e) => {
    // a reload would kill a running transfer: go back without one, and ask first if one runs
    e.preventDefault();
    if (busy() && !window.confirm('A transfer is running. Stop it and go back to the start?')) return;
    backToStart();
  });
  // closing or reloading the tab mid-transfer: the browser asks first
  window.addEventListener('beforeunload', (e) => {
    if (!busy()) return;
    e.preventDefault();
    e.returnValue = '';
  });
  const method = $('save-method');
  if (!hasFsa()) method.querySelector('option[value=fsa]').disabled = true;
  try { method.value = localStorage.getItem(SAVE_PREF_KEY) || 'auto'; } catch { /* storage disabled */ }
  if (!method.value) method.value = 'auto';
  method.addEventListener('change', () => {
    try { localStorage.setItem(SAVE_PREF_KEY, method.value); } catch { /* storage disabled */ }
    if (receiver) receiver.methodChanged();
  });
}

/** Auth mode: the token field comes out of the options; codes need a code token (#code-token). */
function enterAuthMode() {
  authMode = true;
  document.body.dataset.auth = 'true';
  $('token-slot-top').append($('token-row'));
  $('token-row').classList.add('token-needed');
  show($('token-when'), false);
  setText($('token-hint'), "This relay needs an access token from its operator: a code token sends and receives by short code; a write token sends by link, and that link's receiver needs a read token.");
  show($('code-token'));
  $('token').addEventListener('input', followToken);
  followToken();
}

async function main() {
  wireStartView();
  wirePanels();
  setMode(storedMode());
  window.addEventListener('hashchange', route);
  // Leaving the page mid-transfer: fail the download now rather than after the worker's watchdog.
  window.addEventListener('pagehide', () => { if (receiver) receiver.close(); });
  const [mod, sw, auth] = await Promise.all([loadSdk(), registerDownloadWorker(), probeAuth()]);
  sdk = mod;
  if (auth) enterAuthMode();
  setText($('save-hint'), [
    sw ? 'Downloads stream to disk as they arrive.' : 'No streaming downloads here (they need https or localhost): large files may not fit in memory.',
    hasFsa() ? 'This browser can also write straight to a file you choose.' : '',
  ].join(' ').trim());
  route();
  document.body.dataset.ready = 'true';
}

main().catch((err) => console.error(err));
