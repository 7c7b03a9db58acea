// Entry point: loads the SDK, routes between the start view (send / open a link) and the
// receive view (a link's #fragment), and wires the controls.
import { parseFragment, parseTyped, buildLink, randomPassphrase } from './link.js';
import { registerDownloadWorker, hasFsa } from './save.js';
import { Sender } from './send.js';
import { Receiver, SAVE_PREF_KEY } from './receive.js';
import { describeError } from './errors.js';
import { $, show, setText, copyButton } from './ui.js';

let sdk = null;
let sender = null;
let receiver = null;
let typedPassphrase;   // from the "Receive" form, used once by the receive view

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

function startSending(items) {
  if (!sdk) return;
  const usePass = $('use-passphrase').checked;
  const passphrase = $('passphrase').value;
  if (usePass && !passphrase) {
    $('passphrase').focus();
    return;
  }
  if (sender) sender.close();
  try {
    sender = new Sender(sdk, items, usePass ? { passphrase } : {});
  } catch (err) {
    const d = describeError(err, 'send');
    setText($('boot-error'), `${d.title} (${d.detail})`);
    show($('boot-error'));
    return;
  }
  show($('start-view'), false);
  sender.start();
  document.body.dataset.view = 'send';
}

function route() {
  const target = parseFragment(location.hash);
  if (receiver) { receiver.close(); receiver = null; }
  if (target) {
    if (sender) { sender.close(); sender = null; }
    show($('start-view'), false);
    show($('send-panel'), false);
    document.body.dataset.view = 'receive';
    if (!sdk) return;
    receiver = new Receiver(sdk, target);
    const pass = typedPassphrase;
    typedPassphrase = undefined;
    receiver.open(target.passphrase ? pass : undefined);
  } else {
    show($('recv-panel'), false);
    if (!sender || sender.closed) {
      show($('send-panel'), false);
      show($('start-view'));
      document.body.dataset.view = 'start';
    }
  }
}

function wireStartView() {
  const drop = $('drop');
  const input = $('file-input');
  drop.addEventListener('click', () => input.click());
  drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); input.click(); }
  });
  input.addEventListener('change', () => {
    if (input.files.length) startSending({ files: [...input.files] });
    input.value = '';
  });
  for (const type of ['dragenter', 'dragover']) {
    drop.addEventListener(type, (e) => { e.preventDefault(); drop.classList.add('over'); });
  }
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    show($('drop-msg'), false);
    const dt = e.dataTransfer;
    if (!dt) return;
    // Folders arrive as File objects too; tell them apart by their entry (where the browser
    // offers it) and say what to do instead of sending an empty file.
    const items = [...(dt.items || [])].filter((i) => i.kind === 'file');
    const isFolder = items.map((i) => { const en = i.webkitGetAsEntry && i.webkitGetAsEntry(); return !!(en && en.isDirectory); });
    const files = [...dt.files].filter((f, i) => !isFolder[i]);
    if (isFolder.some(Boolean)) {
      setText($('drop-msg'), files.length
        ? 'Folders were left out (zip a folder to send it); sending the files.'
        : "Folders can't be sent as such: zip the folder, or drop the files inside it.");
      show($('drop-msg'));
    }
    if (files.length) startSending({ files });
    else if (!items.length && dt.getData('text/plain')) startSending({ text: dt.getData('text/plain') });
  });
  // Pasting files anywhere on the start view sends them.
  document.addEventListener('paste', (e) => {
    if ($('start-view').hidden || !e.clipboardData) return;
    const files = [...e.clipboardData.files];
    if (files.length) { e.preventDefault(); startSending({ files }); }
  });
  $('send-text').addEventListener('click', () => {
    const text = $('text-input').value;
    if (text) startSending({ text });
    else $('text-input').focus();
  });

  const usePass = $('use-passphrase');
  usePass.addEventListener('change', () => {
    show($('passphrase-row'), usePass.checked);
    if (usePass.checked && !$('passphrase').value) $('passphrase').value = randomPassphrase();
    setText($('enc-hint'), usePass.checked
      ? 'The receiver types this passphrase (age-rt with scrypt; the ZebraStream client reads it too). The link carries no key.'
      : "A fresh key is made for each transfer and travels only in the link's #fragment, which browsers never send to the relay.");
  });
  $('new-passphrase').addEventListener('click', () => { $('passphrase').value = randomPassphrase(); });

  $('open-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const target = parseTyped($('open-input').value);
    if (!target) { $('open-input').setCustomValidity('Not a link or stream path'); $('open-input').reportValidity(); return; }
    $('open-input').setCustomValidity('');
    typedPassphrase = $('open-passphrase').value;
    const fragment = new URL(buildLink(location.origin, target)).hash;
    if (location.hash === fragment) route(); else location.hash = fragment;
  });
  $('open-input').addEventListener('input', () => $('open-input').setCustomValidity(''));
}

function wirePanels() {
  $('copy-link').addEventListener('click', () => copyButton($('copy-link'), $('link').value, $('link')));
  $('send-cancel').addEventListener('click', () => sender && sender.cancel());
  $('send-retry').addEventListener('click', () => sender && sender.retry());
  $('send-new').addEventListener('click', () => {
    if (sender) sender.close();
    sender = null;
    show($('send-panel'), false);
    show($('start-view'));
    show($('drop-msg'), false);
    document.body.dataset.view = 'start';
    $('drop').focus();
  });
  $('recv-cancel').addEventListener('click', () => receiver && receiver.cancel());
  $('recv-retry').addEventListener('click', () => receiver && receiver.retry());
  $('recv-pass-form').addEventListener('submit', (e) => {
    e.preventDefault();
    if (receiver) receiver.submitPassphrase($('recv-passphrase').value);
  });
  const method = $('save-method');
  if (!hasFsa()) method.querySelector('option[value=fsa]').disabled = true;
  try { method.value = localStorage.getItem(SAVE_PREF_KEY) || 'auto'; } catch { /* storage disabled */ }
  method.addEventListener('change', () => {
    try { localStorage.setItem(SAVE_PREF_KEY, method.value); } catch { /* storage disabled */ }
  });
}

async function main() {
  wireStartView();
  wirePanels();
  window.addEventListener('hashchange', route);
  // Leaving the page mid-transfer: fail the download now rather than after the worker's watchdog.
  window.addEventListener('pagehide', () => { if (receiver) receiver.close(); });
  const [mod, sw] = await Promise.all([loadSdk(), registerDownloadWorker()]);
  sdk = mod;
  setText($('save-hint'), [
    hasFsa() ? 'This browser can write straight to a file you choose.' : 'No File System Access API here.',
    sw ? 'Streaming downloads are available.' : 'No streaming downloads here (needs https or localhost): large files may not fit in memory.',
  ].join(' '));
  route();
  document.body.dataset.ready = 'true';
}

main().catch((err) => console.error(err));
