// The sender panel: link + QR, wait for the receiver (Connect API, PROTOCOL.md §5), stream the
// encrypted bytes (SDK send, §3/§4), show progress, cancel, errors.
import { StateMachine, SENDER } from './machine.js';
import { buildLink, randomPath } from './link.js';
import { describeItems, counting, expectSegmented } from './source.js';
import { describeError, headline } from './errors.js';
import { formatBytes } from './format.js';
import { renderQr } from './qr.js';
import { $, show, setText, progressView, showError, resumeNotice } from './ui.js';

/** The replay window of a handoff (bytes, PROTOCOL.md §12.3): what a broken connection may
 * lose page to page, with room to spare. */
const RESUME_WINDOW = 160 * 1024 * 1024;

const SEGMENTED_NOTE = "This browser can't stream uploads on this connection, so the data goes up in parts. Same result, slightly slower.";

/** One transfer (a link, possibly sent again after a failure). The page keeps the current one. */
export class Sender {
  /**
   * @param {object} sdk  the httpipe module (docs/js-api.md)
   * @param {{files?: File[], text?: string}} items
   * @param {{passphrase?: string}} enc  passphrase mode if set, else a fresh X25519 key
   */
  constructor(sdk, items, enc) {
    this.sdk = sdk;
    this.panel = $('send-panel');
    this.machine = new StateMachine('idle', SENDER, (state, data) => this.render(state, data));
    this.item = describeItems(items);
    this.path = randomPath();
    this.relay = location.origin;
    if (enc.passphrase) {
      this.enc = { passphrase: enc.passphrase };
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

  /** Shows the panel (link, QR) and starts waiting for the receiver. */
  start() {
    $('link').value = this.link;
    renderQr($('qr'), this.link);
    const what = this.item.kind === 'text' ? `Text (${formatBytes(this.item.size)})` : `${this.item.name} (${formatBytes(this.item.size)})`;
    setText($('send-summary'), what);
    setText($('share-hint'), this.identity
      ? 'The key is in the link after “#”: whoever has the link can read the data; the relay cannot.'
      : `Passphrase mode: the link holds no key. Tell the receiver the passphrase another way. Stream path: ${this.path}`);
    show($('send-error'), false);
    show(this.panel);
    $('link').focus(); // keyboard users land on the link (the drop zone just went away)
    this.run();
  }

  /** "Send again" after an error, a cancel or a delivery: same link, same key. */
  retry() {
    if (['error', 'cancelled', 'done'].includes(this.machine.state)) this.run();
  }

  async run() {
    const ac = new AbortController();
    this.ac = ac;
    this.machine.go('waiting');
    const progress = progressView($('send-progress'), $('send-stats'), this.item.size);
    this.progress = progress;
    let sawBytes = false;
    try {
      // send() meets the receiver on the Connect API itself (so the two pages exchange the
      // hellos that make the delivery receipt possible, PROTOCOL.md §12) and reads the source
      // only once the receiver is there.
      const source = counting(this.item.open(), (n) => {
        if (!sawBytes) { sawBytes = true; this.machine.go('sending'); }
        progress.update(n);
        if (this.item.size !== undefined && n >= this.item.size) {
          setText($('send-status'), 'All sent. Waiting for the receiver to confirm it saved everything…');
        }
      });
      const report = await this.sdk.send(source, {
        relay: this.relay, path: this.path, signal: ac.signal,
        size: this.item.size, ...this.enc,
        // resumes by itself after a broken connection (§12.3); the panel says so meanwhile
        onProgress: resumeNotice($('send-status')),
        // Page to page, what a cut loses in flight measured 60-80 MB (browser, kernel and relay
        // buffers; PROTOCOL.md §12.3), over the SDK's default 64 MiB window.
        resumeWindow: RESUME_WINDOW,
      });
      progress.finish(this.item.size);
      this.machine.go('done', report);
    } catch (err) {
      progress.stop();
      if (this.closed) return;
      if (ac.signal.aborted) this.machine.go('cancelled');
      else this.machine.go('error', { err, sawBytes });
    }
  }

  cancel() {
    if (this.ac && ['waiting', 'sending'].includes(this.machine.state)) this.ac.abort();
  }

  /** Stops everything and detaches from the panel ("send something else"). */
  close() {
    this.cancel();
    this.closed = true;
  }

  render(state, data) {
    if (this.closed) return;
    this.panel.dataset.state = state;
    const busy = state === 'waiting' || state === 'sending';
    show($('send-cancel'), busy);
    show($('send-retry'), !busy && state !== 'idle');
    show($('send-new'), !busy);
    show($('send-error'), state === 'error');
    const note = $('send-note');
    switch (state) {
      case 'waiting':
        delete this.panel.dataset.transport;
        setText($('send-status'), 'Waiting for the other side to open the link…');
        setText($('send-stats'), '');
        show(note, false);
        break;
      case 'sending':
        setText($('send-status'), 'Sending — encrypted in this page');
        if (expectSegmented()) { setText(note, SEGMENTED_NOTE); show(note); }
        break;
      case 'done': {
        // "Delivered" only on the receiver's receipt; a receiver that sends none (curl, the
        // ZebraStream clients) leaves the relay's word only.
        setText($('send-status'), data && data.receipt
          ? 'Delivered. The receiver saved every byte.'
          : "Sent. The receiver hasn't confirmed it got everything.");
        const segmented = data && data.transport === 'segmented';
        this.panel.dataset.transport = (data && data.transport) || '';
        setText(note, SEGMENTED_NOTE);
        show(note, segmented);
        break;
      }
      case 'cancelled':
        setText($('send-status'), 'Cancelled. The receiver is told the transfer was cut short.');
        break;
      case 'error': {
        const d = describeError(data.err, 'send');
        setText($('send-status'), headline(d.code, 'send'));
        showError($('send-error'), d);
        break;
      }
      default:
        break;
    }
  }
}
