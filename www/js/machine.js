// A small finite-state machine: named states, allowed transitions, one listener.
// Each side of a transfer (sender, receiver) is one; the page renders from its state.

export class StateMachine {
  /**
   * @param {string} initial
   * @param {Record<string, string[]>} transitions  state -> states it may go to
   * @param {(state: string, data: any, prev: string) => void} onChange
   */
  constructor(initial, transitions, onChange) {
    this.state = initial;
    this.transitions = transitions;
    this.onChange = onChange;
  }

  /** True if `to` is allowed from the current state. */
  can(to) {
    return (this.transitions[this.state] || []).includes(to);
  }

  /** Moves to `to`; throws on a transition the table doesn't allow (a bug, not user input). */
  go(to, data) {
    if (!this.can(to)) throw new Error(`invalid transition ${this.state} -> ${to}`);
    const prev = this.state;
    this.state = to;
    this.onChange(to, data, prev);
  }
}

// Terminal states may go back to 'idle' ("send something else") or, for the sender, start
// waiting again on the same link ("send again": another receiver, or a retry).
// A sender goes back to waiting (on the same link) when the receiver typed a wrong passphrase
// and may try again.
export const SENDER = {
  idle: ['waiting', 'error'],
  waiting: ['waiting', 'sending', 'done', 'error', 'cancelled'],
  sending: ['waiting', 'done', 'error', 'cancelled'],
  done: ['idle', 'waiting'],
  error: ['idle', 'waiting'],
  cancelled: ['idle', 'waiting'],
};

export const RECEIVER = {
  idle: ['waiting', 'error'],
  waiting: ['ready', 'receiving', 'error', 'cancelled'],
  ready: ['receiving', 'error', 'cancelled'],   // verified first bytes; waiting for "Save" click
  receiving: ['done', 'error', 'cancelled'],
  done: ['idle'],
  error: ['idle', 'waiting'],
  cancelled: ['idle', 'waiting'],
};
