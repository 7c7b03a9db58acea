// The receiver panel: by a short code (SDK receiveWithCode, PROTOCOL.md §14) or a link (SDK
// receive, with the key from the link or a typed passphrase). Waits for the sender, reads and
// decrypts, verifies the first bytes before creating any file, streams them to disk
// (save.js), shows progress, cancel, errors. Never reports success on a partial file: the
// file is closed only after the stream ended cleanly (authenticated end, §3.3, §8) and its
// length equals the announced size.
import { StateMachine, RECEIVER } from './machine.js';
import { safeFileName, looksLikeCode, normaliseCode } from './link.js';
import { describeError, headline } from './errors.js';
import { formatBytes } from './format.js';
import { autoStrategy, needsGesture, fsaSink, swSink, blobSink, downloadBlob, hasFsa } from './save.js';
import { holdWakeLock, releaseWakeLock } from './wake.js';
import { $, show, setText, progressView, copyButton, showError, resumeNotice } from './ui.js';

const TEXT_LIMIT = 16 * 1024 * 1024;
const IMAGE_PREVIEW_LIMIT = 32 * 1024 * 1024;
export const SAVE_PREF_KEY = 'httpipe.save';

/** Abort reason when the person cancels the download in the browser's download list. */
const DOWNLOAD_CANCELLED = 'download cancelled in the browser';

function cutShort(message) {
  return Object.assign(new Error(message), { code: 'TRUNCATED' });
}

/** The save method chosen in the panel (stored for next time). */
export function savePreference() {
  const el = $('save-method');
  if (el && el.value) return el.value;
  try { return localStorage.getItem(SAVE_PREF_KEY) || 'auto'; } catch { return 'auto'; }
}

export class Receiver {
  /**
   * @param {object} sdk  the httpipe module (docs/js-api.md)
   * @param {{code?: string} | ReturnType<import('./link.js').parseFragment>} target
   *   `{code}`: by short code ('' for an empty form); else a link's path, key or passphrase flag, metadata
   * @param {{token?: string, authMode?: boolean, autostart?: boolean}} [opts]
   */
  constructor(sdk, target, opts = {}) {
    this.sdk = sdk;
    this.target = target;
    this.byCode = target.code !== undefined;
    this.opts = opts;
    this.relay = location.origin;
    this.panel = $('recv-panel');
    this.machine = new StateMachine('idle', RECEIVER, (state, data) => this.render(state, data));
    this.meta = this.byCode ? {} : { name: target.name, size: target.size, type: target.type, kind: target.kind };
  }

  /** Shows the panel; starts at once with a key link (or a code given on the start screen). */
  open() {
    const t = this.target;
    for (const id of ['recv-error', 'recv-text-box', 'recv-image', 'recv-save', 'recv-retry', 'recv-new', 'recv-cancel']) show($(id), false);
    $('recv-progress').value = 0;
    setText($('recv-percent'), '');
    show($('recv-progress'), false);
    setText($('recv-stats'), '');
    setText($('recv-status'), '');
    this.panel.dataset.state = 'idle';
    this.panel.dataset.by = this.byCode ? 'code' : t.identity ? 'key' : 'passphrase';
    this.panel.dataset.result = '';
    $('recv-save').classList.remove('secondary');
    this.showSummary();
    setText($('recv-enc'), this.byCode
      ? 'Decrypted in this page with a key made from the code; the relay never learns it.'
      : t.identity
        ? 'Decrypted in this page with the key from the link; the relay never sees it.'
        : 'Decrypted in this page with the passphrase the sender chose.');
    show($('save-options'), t.kind !== 'text');
    $('recv-token').value = this.opts.token || '';
    show(this.panel);
    if (this.byCode) {
      $('recv-code').value = t.code;
      // an auth-mode relay refuses a receiver without a (code) token: ask for it first
      if (this.opts.authMode && !$('recv-token').value) return this.showForm(t.code ? 'token' : 'code');
      if (this.opts.autostart && t.code) return this.run();
      return this.showForm($('recv-code').value ? 'start' : 'code');
    }
    // an auth-mode relay refuses a receiver without a token: ask for it first
    if (this.opts.authMode && !$('recv-token').value) return this.showForm(t.identity ? 'token' : 'passphrase');
    if (t.identity) return this.run({ identities: [t.identity] });
    return this.showForm('passphrase');
  }

  /** The form: the code, the passphrase, or the token; `focus` says which field to put the cursor in. */
  showForm(focus) {
    this.panel.dataset.state = 'idle';
    setText($('recv-title'), 'Receive');
    show($('recv-form'));
    show($('recv-code-row'), this.byCode);
    show($('recv-pass-row'), !this.byCode && !this.target.identity);
    $('recv-passphrase').required = !this.byCode && !this.target.identity;
    $('recv-code').required = this.byCode;
    show($('recv-token-row'), !!(this.opts.authMode || this.needsToken || $('recv-token').value));
    const tokenToo = this.opts.authMode ? ', and your code token for this relay' : '';
    setText($('recv-status'), this.byCode ? `Enter the code the sender gave you${tokenToo}.`
      : this.target.identity ? 'Enter your access token.' : 'Enter the passphrase the sender gave you.');
    const el = { code: $('recv-code'), passphrase: $('recv-passphrase'), token: $('recv-token'), start: $('recv-start') }[focus];
    if (el) {
      el.focus();
      if (el.select) el.select();
    }
  }

  /** The form was submitted. */
  submit() {
    if (!['idle', 'error', 'cancelled'].includes(this.machine.state)) return undefined;
    if (this.byCode) {
      const typed = $('recv-code').value;
      if (!looksLikeCode(typed)) {
        $('recv-code').setCustomValidity('A code looks like 7-guitarist-revenge: a number and two words.');
        $('recv-code').reportValidity();
        return undefined;
      }
      this.target = { code: normaliseCode(typed) };
      return this.run();
    }
    return this.run(this.target.identity ? { identities: [this.target.identity] } : { passphrase: $('recv-passphrase').value });
  }

  retry() {
    if (!['error', 'cancelled'].includes(this.machine.state)) return;
    // Let the person correct what they typed: the code (a wrong one is spent on the
    // sender's side too, but a typo may have found no sender at all), the passphrase (the
    // sender offers the stream again after a wrong one), or the token.
    this.machine.go('idle');
    if (this.needsToken) this.showForm('token');
    else if (this.byCode) this.showForm('code');
    else if (!this.target.identity) this.showForm('passphrase');
    else this.run(this.enc);
  }

  cancel() {
    if (this.ac && ['waiting', 'ready', 'receiving'].includes(this.machine.state)) this.ac.abort();
  }

  close() {
    this.cancel();
    this.closed = true;
    releaseWakeLock(this);
  }

  showSummary() {
    const m = this.meta;
    const size = m.size !== undefined ? ` · ${formatBytes(m.size)}` : '';
    let text = '';
    if (m.kind === 'text') text = `Text${size}`;
    else if (m.name) text = `${m.name}${size}`;
    else if (!this.byCode) text = `Stream ${this.target.path}${size}`;
    setText($('recv-summary'), text);
  }

  get name() {
    return safeFileName(this.meta.name);
  }

  /** Which sink to use: 'text' and 'image' are shown in the page, others per the choice. */
  plan() {
    const m = this.meta;
    if (m.kind === 'text' && (m.size === undefined || m.size <= TEXT_LIMIT)) return 'text';
    if (m.type && m.type.startsWith('image/') && m.size !== undefined && m.size <= IMAGE_PREVIEW_LIMIT) return 'image';
    let pref = savePreference();
    if (pref === 'fsa' && !hasFsa()) pref = 'auto';
    if (pref === 'auto') pref = autoStrategy(m.size);
    return pref === 'none' ? 'blob' : pref;
  }

  /** A sink that needs no click ('sw', 'blob', 'text', 'image'). */
  async sinkFor(how, ac) {
    if (how === 'sw') return swSink(this.name, this.meta.size, () => ac.abort(DOWNLOAD_CANCELLED));
    return blobSink(how === 'text' ? TEXT_LIMIT : undefined);
  }

  /** The save method was changed in the panel: it applies to this transfer if it can still. */
  methodChanged() {
    if (this.machine.state !== 'ready' || !this.pending) return;
    const how = this.plan();
    if (!needsGesture(how)) this.pending.use(how);
  }

  async run(enc) {
    this.enc = enc;
    this.needsToken = false;
    show($('recv-form'), false);
    const token = $('recv-token').value.trim() || undefined;
    const ac = new AbortController();
    this.ac = ac;
    this.machine.go('waiting');
    holdWakeLock(this);
    let sink = null;
    let reader = null;
    let progress = null;
    try {
      const common = {
        relay: this.relay, signal: ac.signal, token,
        // receipt: 'manual': the sender hears "delivered" only after the file is saved (below).
        receipt: 'manual',
        // resumes by itself after a broken connection (§12.3); the panel says so meanwhile
        onProgress: resumeNotice($('recv-status')),
      };
      let res;
      if (this.byCode) {
        res = await this.sdk.receiveWithCode(this.target.code, common);
        // The sender's offer (sealed in the code exchange): pasted text comes without a name.
        const textOnly = !res.filename && typeof res.contentType === 'string' && res.contentType.startsWith('text/plain');
        this.meta = { name: res.filename, size: res.size, type: res.contentType, kind: textOnly ? 'text' : 'file' };
        this.showSummary();
        show($('save-options'), this.meta.kind !== 'text');
      } else {
        res = await this.sdk.receive({ ...common, path: this.target.path, ...enc });
      }
      setText($('recv-status'), 'The sender is here. Starting…');
      reader = res.stream.getReader();
      // The first read proves the key (WRONG_KEY comes before any plaintext), so a wrong
      // passphrase never creates a file.
      const first = await reader.read();
      const total = this.meta.size;
      this.how = this.plan();
      if (needsGesture(this.how)) {
        this.machine.go('ready');
        sink = await this.pickFile(ac);
      } else {
        sink = await this.sinkFor(this.how, ac);
      }
      this.machine.go('receiving');
      progress = progressView($('recv-progress'), $('recv-stats'), total, { percent: $('recv-percent') });
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
        throw cutShort(`Received ${bytes} bytes but the sender announced ${total}.`);
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
      if (!this.closed) {
        if (ac.signal.aborted) this.machine.go('cancelled', { inBrowser: ac.signal.reason === DOWNLOAD_CANCELLED });
        else {
          this.needsToken = !!(err && (err.code === 'UNAUTHORIZED' || err.code === 'FORBIDDEN'));
          this.machine.go('error', { err });
        }
      }
    } finally {
      this.pending = null;
      releaseWakeLock(this);
    }
  }

  /**
   * Waits for a click on "Save" and opens the save dialog (needs the click's activation), or
   * for the save method to change to one that needs no click ({@link methodChanged}).
   */
  pickFile(ac) {
    const { signal } = ac;
    const button = $('recv-save');
    setText(button, `Save ${this.name}…`);
    show(button);
    button.focus();
    return new Promise((resolve, reject) => {
      const settle = (fn, value) => {
        button.onclick = null;
        show(button, false);
        signal.removeEventListener('abort', onAbort);
        this.pending = null;
        fn(value);
      };
      const onAbort = () => settle(reject, signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending = {
        use: (how) => {
          this.how = how;
          this.sinkFor(how, ac).then((s) => settle(resolve, s), (e) => settle(reject, e));
        },
      };
      button.onclick = async () => {
        try {
          const sink = await fsaSink(this.name);
          settle(resolve, sink);
        } catch (err) {
          if (err && err.name === 'AbortError') {
            setText($('recv-status'), 'No file chosen. Press Save to choose where to put it.');
            return;
          }
          settle(reject, err);
        }
      };
    });
  }

  async showResult(sink) {
    if (sink.kind !== 'blob') return;
    const blob = await sink.blob;
    if (!blob) return;
    const save = $('recv-save');
    save.classList.add('secondary'); // the text or picture is the result; saving it is an extra
    if (this.how === 'text') {
      this.panel.dataset.result = 'text';
      const text = await blob.text();
      setText($('recv-text'), text);
      show($('recv-text-box'));
      $('copy-text').onclick = () => copyButton($('copy-text'), text);
      setText(save, 'Save as file');
      save.onclick = () => downloadBlob(blob, this.name === 'httpipe-download' ? 'text.txt' : this.name);
      show(save);
    } else if (this.how === 'image') {
      const img = $('recv-image');
      img.src = URL.createObjectURL(blob.slice(0, blob.size, this.meta.type));
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
    const over = ['done', 'error', 'cancelled'].includes(state);
    show($('recv-cancel'), busy);
    show($('recv-retry'), state === 'error' || state === 'cancelled');
    setText($('recv-retry'), this.byCode ? 'Enter the code again' : 'Try again');
    show($('recv-new'), over);
    show($('recv-error'), state === 'error');
    show($('recv-progress'), state === 'receiving' || state === 'done' || (state !== 'idle' && $('recv-progress').value > 0));
    if (state !== 'ready' && state !== 'done') show($('recv-save'), false);
    if (state === 'receiving' || over) show($('save-options'), false);
    if (state !== 'idle') show($('recv-form'), false);
    switch (state) {
      case 'waiting':
        setText($('recv-title'), 'Receiving');
        setText($('recv-status'), this.byCode ? 'Checking the code with the sender…' : 'Waiting for the other side (the sender)…');
        break;
      case 'ready':
        setText($('recv-title'), 'Choose where to save');
        setText($('recv-status'), 'The sender is here and the key checks out. Choose where to save: the sender waits until you do.');
        break;
      case 'receiving':
        setText($('recv-title'), 'Receiving');
        setText($('recv-status'), this.how === 'sw' ? 'Receiving — saving as a download'
          : this.how === 'fsa' ? 'Receiving — writing to the chosen file' : 'Receiving');
        break;
      case 'done': {
        const where = { sw: 'Saved as a download', fsa: 'Saved to the chosen file', text: 'Text received', image: 'Image received', blob: 'Saved as a download' }[this.how];
        setText($('recv-title'), 'Received');
        setText($('recv-status'), `Done: ${formatBytes(data.bytes)} received and verified. ${where}.`);
        this.showResult(data.sink);
        $('recv-new').focus();
        break;
      }
      case 'cancelled':
        setText($('recv-title'), 'Cancelled');
        setText($('recv-status'), data && data.inBrowser
          ? "Cancelled in the browser's downloads. Nothing was saved; the sender is told you left."
          : 'Cancelled. Nothing was saved; the sender is told you left.');
        break;
      case 'error': {
        const d = describeError(data.err, 'receive');
        setText($('recv-title'), 'Not received');
        setText($('recv-status'), headline(d.code, 'receive'));
        showError($('recv-error'), d);
        break;
      }
      default:
        break;
    }
  }
}
