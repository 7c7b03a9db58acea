// The sender panel. Three ways for the other side to get in:
//   'code'        a short code (SDK sendWithCode, PROTOCOL.md §14): shown large, with a QR code
//                 of a link carrying just the code; the default;
//   'link'        a receive link with a fresh X25519 key in its #fragment (SDK send, §3/§4);
//   'passphrase'  a receive link without a key, plus a passphrase the sender tells the
//                 receiver (age-rt with scrypt, §8).
// Waits for the receiver (Connect API, §5), streams the encrypted bytes, shows progress,
// cancel, errors; keeps the screen on meanwhile (wake.js).
import { StateMachine, SENDER } from './machine.js';
import { buildLink, codeLink, randomPath } from './link.js';
import { describeItems, counting, expectSegmented } from './source.js';
import { describeError, headline } from './errors.js';
import { formatBytes } from './format.js';
import { renderQr } from './qr.js';
import { holdWakeLock, releaseWakeLock } from './wake.js';
import { $, show, setText, progressView, showError, resumeNotice, renderCode, showStart } from './ui.js';

/** The replay window of a handoff (bytes, PROTOCOL.md §12.3): what a broken connection may
 * lose page to page, with room to spare. */
const RESUME_WINDOW = 160 * 1024 * 1024;

/** How many wrong passphrases the sender waits through before it gives up. */
const WRONG_PASSPHRASE_LIMIT = 10;

const SEGMENTED_NOTE = "This browser can't stream uploads on this connection, so the data goes up in parts. Same result, slightly slower.";

const STALLED = "Paused: the receiver isn't taking data yet. They may be choosing where to save the file.";

/** "report.pdf · 1.20 MiB", "photos · folder of 12 files · 80 MiB", "Text · 54 B". */
export function summaryOf(item) {
  if (item.kind === 'text') return `Text · ${formatBytes(item.size)}`;
  if (item.kind === 'zip') {
    const folder = item.name.startsWith('httpipe-') ? '' : `${item.name} · folder, `;
    return `${folder}${item.count} file${item.count === 1 ? '' : 's'} as a ZIP · ${formatBytes(item.size)}`;
  }
  return `${item.name} · ${formatBytes(item.size)}`;
}

/** One transfer (a code or a link, possibly sent again). The page keeps the current one. */
export class Sender {
  /**
   * @param {object} sdk  the httpipe module (docs/js-api.md)
   * @param {{entries?: {file?: File, path: string}[], files?: File[], text?: string}} items
   * @param {{mode?: 'code'|'link'|'passphrase', passphrase?: string, token?: string}} opts
   */
  constructor(sdk, items, opts = {}) {
    this.sdk = sdk;
    this.panel = $('send-panel');
    this.machine = new StateMachine('idle', SENDER, (state, data) => this.render(state, data));
    this.item = describeItems(items);
    this.mode = opts.mode || 'code';
    this.token = opts.token || undefined;
    this.relay = location.origin;
    this.wrongPassphrases = 0;
    if (this.mode === 'code') return;
    this.path = randomPath();
    if (this.mode === 'passphrase') {
      if (!opts.passphrase) throw Object.assign(new Error('a passphrase is needed'), { code: 'UNSUPPORTED' });
      this.passphrase = opts.passphrase;
      this.enc = { passphrase: opts.passphrase };
      this.identity = undefined;
    } else {
      this.identity = sdk.generateIdentity();
      this.enc = { recipients: [sdk.identityToRecipient(this.identity)] };
    }
    this.link = buildLink(this.relay, {
      path: this.path, identity: this.identity, passphrase: !this.identity,
      name: this.item.name, size: this.item.size, type: this.item.type, kind: this.item.kind,
    });
  }

  /** Shows the panel and starts: a code is asked for, or the link waits for the receiver. */
  start() {
    this.panel.dataset.mode = this.mode;
    setText($('send-summary'), summaryOf(this.item));
    show($('send-error'), false);
    show($('code-box'), this.mode === 'code');
    show($('link-box'), this.mode !== 'code');
    show($('pass-box'), this.mode === 'passphrase');
    if (this.mode === 'code') {
      setText($('send-code'), '');
      $('qr').replaceChildren();
    } else {
      $('link').value = this.link;
      showStart($('link'));
      renderQr($('qr'), this.link);
      setText($('qr-caption'), 'Scan to open the link');
      setText($('send-passphrase'), this.passphrase || '');
      setText($('share-hint'), this.identity
        ? 'The key is in the link after “#”: whoever has the link can read the file; the relay cannot.'
        : `The link holds no key: tell the receiver the passphrase another way (say it, or another app). Stream path: ${this.path}`);
    }
    show(this.panel);
    this.run();
    // keyboard users land on what to share (the drop zone just went away)
    (this.mode === 'code' ? $('send-title') : $('link')).focus();
  }

  /** "Send again" after an error, a cancel or a delivery: a new code, or the same link. */
  retry() {
    if (['error', 'cancelled', 'done'].includes(this.machine.state)) this.run();
  }

  /** The code arrived: show it large, with the QR code of its short link. */
  showCode(code) {
    this.code = code;
    this.codeUrl = codeLink(this.relay, code);
    renderCode($('send-code'), code);
    renderQr($('qr'), this.codeUrl);
    setText($('qr-caption'), 'Scan to receive');
    const host = document.createElement('strong');
    host.textContent = location.host;
    // on a relay in auth mode the receiver needs a code token too (PROTOCOL.md §6)
    const token = this.token ? ' They need a code token for this relay, as you do.' : '';
    $('share-hint').replaceChildren('On the other device, open ', host, ' and enter the code, or scan the QR code. The code works once.', token);
    show($('share'));
    setText($('send-title'), 'Ready to send');
    // screen readers hear the code with the status (the tiles are not a live region)
    const spoken = document.createElement('span');
    spoken.className = 'visually-hidden';
    spoken.textContent = `Your code: ${code.split('-').join(' ')}. `;
    $('send-status').replaceChildren(spoken, 'Waiting for the receiver to enter the code…');
  }

  async run() {
    const ac = new AbortController();
    this.ac = ac;
    holdWakeLock(this);
    for (;;) {
      this.machine.go('waiting', { wrongPassphrase: this.wrongPassphrases > 0 });
      let sawBytes = false;
      const progress = progressView($('send-progress'), $('send-stats'), this.item.size, {
        percent: $('send-percent'),
        onStall: (stalled) => {
          if (this.machine.state !== 'sending' || this.closed) return;
          setText($('send-status'), stalled ? STALLED : 'Sending — encrypted in this page');
          this.panel.dataset.stalled = stalled ? 'true' : '';
        },
      });
      this.progress = progress;
      try {
        // The SDK reads the source only once the receiver is there (Connect API); the first
        // byte read means the transfer runs.
        const source = counting(this.item.open(), (n) => {
          if (!sawBytes) { sawBytes = true; this.machine.go('sending'); }
          progress.update(n);
          if (this.item.size !== undefined && n >= this.item.size) {
            setText($('send-status'), 'All sent. Waiting for the receiver to confirm it saved everything…');
          }
        });
        const common = {
          relay: this.relay, signal: ac.signal, size: this.item.size, token: this.token,
          // resumes by itself after a broken connection (§12.3); the panel says so meanwhile
          onProgress: resumeNotice($('send-status')),
          // Page to page, what a cut loses in flight measured 60-80 MB (browser, kernel and
          // relay buffers; PROTOCOL.md §12.3), over the SDK's default 32 MiB window.
          resumeWindow: RESUME_WINDOW,
        };
        let report;
        if (this.mode === 'code') {
          // The offer (name, size, type) travels sealed to the receiver (§14.2); pasted text
          // goes without a name, so the receiving page shows it instead of saving a file.
          const { code, done } = await this.sdk.sendWithCode(source, {
            ...common, contentType: this.item.type, filename: this.item.kind === 'text' ? undefined : this.item.name,
          });
          if (ac.signal.aborted) throw ac.signal.reason;
          this.showCode(code);
          report = await done;
        } else {
          report = await this.sdk.send(source, { ...common, path: this.path, ...this.enc });
        }
        progress.finish(this.item.size);
        this.machine.go('done', report);
        break;
      } catch (err) {
        progress.stop();
        if (this.closed) break;
        if (ac.signal.aborted) { this.machine.go('cancelled'); break; }
        // A receiver that typed a wrong passphrase (its failed receipt says WRONG_KEY,
        // PROTOCOL.md §12.2) may try again: offer the same stream again on the same link.
        if (this.mode === 'passphrase' && err && err.peerCode === 'WRONG_KEY'
            && ++this.wrongPassphrases < WRONG_PASSPHRASE_LIMIT) {
          continue;
        }
        this.machine.go('error', { err, sawBytes });
        break;
      }
    }
    releaseWakeLock(this);
  }

  cancel() {
    if (this.ac && ['waiting', 'sending'].includes(this.machine.state)) this.ac.abort();
  }

  /** Stops everything and detaches from the panel ("send another"). */
  close() {
    this.cancel();
    this.closed = true;
    releaseWakeLock(this);
  }

  render(state, data) {
    if (this.closed) return;
    this.panel.dataset.state = state;
    this.panel.dataset.stalled = '';
    const busy = state === 'waiting' || state === 'sending';
    show($('send-cancel'), busy);
    show($('send-retry'), !busy && state !== 'idle');
    setText($('send-retry'), this.mode === 'code' ? 'Send again with a new code' : 'Send again');
    show($('send-new'), !busy);
    // after a delivery the next thing is another file; after a failure, this one again
    $('send-new').classList.toggle('secondary', state !== 'done');
    $('send-retry').classList.toggle('secondary', state === 'done');
    show($('send-error'), state === 'error');
    // The code, link, QR code and passphrase are for a transfer that runs: a finished or
    // failed one hides them ("Send again" shows them again). A code is spent once the
    // receiver entered it: it goes when the data flows.
    show($('share'), this.mode === 'code' ? state === 'waiting' && this.code !== undefined : busy);
    if (state === 'waiting' || state === 'sending') show($('send-progress'), state === 'sending');
    const note = $('send-note');
    switch (state) {
      case 'waiting':
        delete this.panel.dataset.transport;
        setText($('send-stats'), '');
        show(note, false);
        if (this.mode === 'code') {
          // a new code for every run: the last one is spent
          this.code = undefined;
          show($('share'), false);
          setText($('send-title'), 'Getting a code…');
          setText($('send-status'), 'Asking the relay for a free code…');
        } else {
          setText($('send-title'), 'Ready to send');
          setText($('send-status'), data && data.wrongPassphrase
            ? 'The receiver typed a wrong passphrase. Waiting for them to try again…'
            : 'Waiting for the other side to open the link…');
        }
        break;
      case 'sending':
        setText($('send-title'), 'Sending');
        setText($('send-status'), 'Sending — encrypted in this page');
        if (expectSegmented()) { setText(note, SEGMENTED_NOTE); show(note); }
        break;
      case 'done': {
        // "Delivered" only on the receiver's authenticated receipt (PROTOCOL.md §12.2: made
        // with the transfer's key, so the receiver decrypted every byte); a receiver that sends
        // none (curl, the ZebraStream clients) leaves the relay's word only.
        const confirmed = !!(data && data.receipt && data.receipt.authenticated);
        setText($('send-title'), confirmed ? 'Sent' : 'Sent, not confirmed');
        setText($('send-status'), confirmed
          ? 'Delivered. The receiver saved every byte.'
          : "Sent. The receiver hasn't confirmed it got everything.");
        const segmented = data && data.transport === 'segmented';
        this.panel.dataset.transport = (data && data.transport) || '';
        setText(note, SEGMENTED_NOTE);
        show(note, segmented);
        $('send-new').focus();
        break;
      }
      case 'cancelled':
        setText($('send-title'), 'Cancelled');
        setText($('send-status'), 'Cancelled. The receiver is told the transfer was cut short.');
        break;
      case 'error': {
        const d = describeError(data.err, 'send');
        setText($('send-title'), 'Not sent');
        // a receiver that could not decrypt: a wrong passphrase, or (a link read without its
        // #key by someone who knows only the path) no key at all
        const undecrypted = data.err && data.err.peerCode === 'WRONG_KEY';
        setText($('send-status'), !undecrypted ? headline(d.code, 'send')
          : this.mode === 'passphrase' ? 'Too many wrong passphrases.' : 'The receiver could not decrypt.');
        showError($('send-error'), d);
        break;
      }
      default:
        break;
    }
  }
}
