// The receiver panel: wait for the sender (Connect API, PROTOCOL.md §5), read and decrypt
// (SDK receive), verify the first bytes before creating any file, stream them to disk
// (save.js), show progress, cancel, errors. Never reports success on a partial file: the
// file is closed only after the stream ended cleanly (authenticated end, §3.3, §8) and its
// length equals the size in the link.
import { StateMachine, RECEIVER } from './machine.js';
import { safeFileName } from './link.js';
import { describeError, headline } from './errors.js';
import { formatBytes } from './format.js';
import { autoStrategy, needsGesture, fsaSink, swSink, blobSink, downloadBlob, hasFsa } from './save.js';
import { $, show, setText, progressView, copyButton, showError, resumeNotice } from './ui.js';

const TEXT_LIMIT = 16 * 1024 * 1024;
const IMAGE_PREVIEW_LIMIT = 32 * 1024 * 1024;
export const SAVE_PREF_KEY = 'httpipe.save';

/** Abort reason when the person cancels the download in the browser's download list. */
const DOWNLOAD_CANCELLED = 'download cancelled in the browser';

function cutShort(message) {
  return Object.assign(new Error(message), { code: 'TRUNCATED' });
}

export class Receiver {
  /**
   * @param {object} sdk  the httpipe module (docs/js-api.md)
   * @param {ReturnType<import('./link.js').parseFragment>} target  path, key or passphrase flag, metadata
   */
  constructor(sdk, target) {
    this.sdk = sdk;
    this.target = target;
    this.relay = location.origin;
    this.name = safeFileName(target.name);
    this.panel = $('recv-panel');
    this.machine = new StateMachine('idle', RECEIVER, (state, data) => this.render(state, data));
  }

  /** Shows the panel; starts at once with a key, or after the passphrase is entered. */
  open(passphrase) {
    const t = this.target;
    const size = t.size !== undefined ? ` (${formatBytes(t.size)})` : '';
    setText($('recv-summary'), t.kind === 'text' ? `Text${size}` : t.name ? `${t.name}${size}` : `Stream ${t.path}`);
    for (const id of ['recv-error', 'recv-text-box', 'recv-image', 'recv-save', 'recv-retry']) show($(id), false);
    $('recv-progress').value = 0;
    setText($('recv-stats'), '');
    setText($('recv-enc'), t.identity
      ? 'End-to-end encrypted: the key came in the link and never reaches the relay.'
      : 'Encrypted with a passphrase the sender chose (age-rt, scrypt).');
    show($('save-options'), t.kind !== 'text');
    show(this.panel);
    if (t.identity) return this.run({ identities: [t.identity] });
    if (passphrase === '') setText($('recv-enc'), 'No passphrase given: the stream is saved as it arrives, without decryption.');
    if (passphrase !== undefined) return this.run(passphrase ? { passphrase } : {});
    this.panel.dataset.state = 'idle';
    setText($('recv-status'), 'Enter the passphrase the sender gave you.');
    show($('recv-pass-form'));
    $('recv-passphrase').focus();
    return undefined;
  }

  /** The passphrase form was submitted. */
  submitPassphrase(passphrase) {
    if (['idle', 'error', 'cancelled'].includes(this.machine.state)) return this.run({ passphrase });
    return undefined;
  }

  retry() {
    if (!['error', 'cancelled'].includes(this.machine.state)) return;
    if (this.enc && this.enc.passphrase !== undefined) {
      // Let the person correct the passphrase.
      this.machine.go('idle');
      show($('recv-pass-form'));
      $('recv-passphrase').select();
      setText($('recv-status'), 'Enter the passphrase the sender gave you.');
      return;
    }
    this.run(this.enc);
  }

  cancel() {
    if (this.ac && ['waiting', 'ready', 'receiving'].includes(this.machine.state)) this.ac.abort();
  }

  close() {
    this.cancel();
    this.closed = true;
  }

  /** Which sink to use: 'text' and 'image' are shown in the page, others per the preference. */
  plan() {
    const t = this.target;
    if (t.kind === 'text' && (t.size === undefined || t.size <= TEXT_LIMIT)) return 'text';
    if (t.type && t.type.startsWith('image/') && t.size !== undefined && t.size <= IMAGE_PREVIEW_LIMIT) return 'image';
    let pref = 'auto';
    try { pref = localStorage.getItem(SAVE_PREF_KEY) || 'auto'; } catch { /* storage disabled */ }
    if (pref === 'fsa' && !hasFsa()) pref = 'auto';
    if (pref === 'auto') pref = autoStrategy(t.size);
    return pref === 'none' ? 'blob' : pref;
  }

  async run(enc) {
    this.enc = enc;
    show($('recv-pass-form'), false);
    const ac = new AbortController();
    this.ac = ac;
    this.machine.go('waiting');
    const total = this.target.size;
    let sink = null;
    let reader = null;
    let progress = null;
    try {
      // receipt: 'manual': the sender hears "delivered" only after the file is saved (below).
      const res = await this.sdk.receive({
        relay: this.relay, path: this.target.path, signal: ac.signal, receipt: 'manual', ...enc,
        // resumes by itself after a broken connection (§12.3); the panel says so meanwhile
        onProgress: resumeNotice($('recv-status')),
      });
      setText($('recv-status'), 'The sender is here. Starting…');
      reader = res.stream.getReader();
      // The first read proves the key (WRONG_KEY comes before any plaintext), so a wrong
      // passphrase never creates a file.
      const first = await reader.read();
      const how = this.plan();
      this.how = how;
      if (needsGesture(how)) {
        this.machine.go('ready');
        sink = await this.pickFile(ac.signal);
      } else if (how === 'sw') {
        sink = await swSink(this.name, total, () => ac.abort(DOWNLOAD_CANCELLED));
      } else {
        sink = blobSink(how === 'text' ? TEXT_LIMIT : undefined);
      }
      this.machine.go('receiving');
      progress = progressView($('recv-progress'), $('recv-stats'), total);
      this.progress = progress;
      let bytes = 0;
      let chunk = first;
      while (!chunk.done) {
        await sink.write(chunk.value);
        bytes += chunk.value.byteLength;
        progress.update(bytes);
        if (ac.signal.aborted) throw ac.signal.reason;
        chunk = await reader.read();
      }
      if (total !== undefined && bytes !== total) {
        throw cutShort(`Received ${bytes} bytes but the link announced ${total}.`);
      }
      await sink.close();
      progress.finish(bytes);
      // Saved: tell the sender (PROTOCOL.md §12). The file is ours either way, so a sender
      // that is gone by now doesn't make this a failure.
      await res.confirm().catch(() => {});
      this.machine.go('done', { bytes, sink });
    } catch (err) {
      if (progress) progress.stop();
      if (sink) await sink.abort(err);
      if (reader) reader.cancel(err).catch(() => {});
      if (this.closed) return;
      if (ac.signal.aborted) this.machine.go('cancelled', { inBrowser: ac.signal.reason === DOWNLOAD_CANCELLED });
      else this.machine.go('error', { err });
    }
  }

  /** Waits for a click on "Save" and opens the save dialog (needs the click's activation). */
  pickFile(signal) {
    const button = $('recv-save');
    setText(button, `Save ${this.name}…`);
    show(button);
    button.focus();
    return new Promise((resolve, reject) => {
      const onAbort = () => { button.onclick = null; reject(signal.reason); };
      signal.addEventListener('abort', onAbort, { once: true });
      button.onclick = async () => {
        try {
          const sink = await fsaSink(this.name);
          button.onclick = null;
          show(button, false);
          signal.removeEventListener('abort', onAbort);
          resolve(sink);
        } catch (err) {
          if (err && err.name === 'AbortError') {
            setText($('recv-status'), 'No file chosen. Press Save to choose where to put it.');
            return;
          }
          signal.removeEventListener('abort', onAbort);
          reject(err);
        }
      };
    });
  }

  async showResult(sink) {
    if (sink.kind !== 'blob') return;
    const blob = await sink.blob;
    if (!blob) return;
    const save = $('recv-save');
    if (this.how === 'text') {
      const text = await blob.text();
      setText($('recv-text'), text);
      show($('recv-text-box'));
      $('copy-text').onclick = () => copyButton($('copy-text'), text);
      setText(save, 'Save as file');
      save.onclick = () => downloadBlob(blob, this.name === 'httpipe-download' ? 'text.txt' : this.name);
      show(save);
    } else if (this.how === 'image') {
      const img = $('recv-image');
      img.src = URL.createObjectURL(blob.slice(0, blob.size, this.target.type));
      show(img);
      setText(save, `Save ${this.name}`);
      save.onclick = () => downloadBlob(blob, this.name);
      show(save);
    } else {
      downloadBlob(blob, this.name);
    }
  }

  render(state, data) {
    if (this.closed) return;
    this.panel.dataset.state = state;
    const busy = ['waiting', 'ready', 'receiving'].includes(state);
    show($('recv-cancel'), busy);
    show($('recv-retry'), state === 'error' || state === 'cancelled');
    show($('recv-error'), state === 'error');
    if (state !== 'ready' && state !== 'done') show($('recv-save'), false);
    if (state === 'receiving' || state === 'done') show($('save-options'), false);
    switch (state) {
      case 'waiting':
        setText($('recv-status'), 'Waiting for the other side (the sender)…');
        break;
      case 'ready':
        setText($('recv-status'), 'The sender is here and the key checks out. Choose where to save.');
        break;
      case 'receiving':
        setText($('recv-status'), this.how === 'sw'
          ? 'Receiving — decrypting in this page, saving as a browser download'
          : this.how === 'fsa' ? 'Receiving — decrypting in this page, writing to the chosen file'
            : 'Receiving — decrypting in this page');
        break;
      case 'done': {
        const where = { sw: 'Saved as a download', fsa: 'Saved to the chosen file', text: 'Text received', image: 'Image received', blob: 'Saved as a download' }[this.how];
        setText($('recv-status'), `Done: ${formatBytes(data.bytes)} received and verified. ${where}.`);
        this.showResult(data.sink);
        break;
      }
      case 'cancelled':
        setText($('recv-status'), data && data.inBrowser
          ? "Cancelled in the browser's downloads. Nothing was saved; the sender is told you left."
          : 'Cancelled. Nothing was saved; the sender is told you left.');
        break;
      case 'error': {
        const d = describeError(data.err, 'receive');
        setText($('recv-status'), headline(d.code, 'receive'));
        showError($('recv-error'), d);
        break;
      }
      default:
        break;
    }
  }
}
