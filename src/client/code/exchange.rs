//! The exchange of each side as a poll machine (§14.2): which request comes next, the
//! sender's busy-channel loop and its limit, when the code is shown, the verdicts. The
//! drivers (`crate::native::code`, `crate::wasm::code`) loop: [`super::CodeMachine::poll`],
//! perform the [`super::CodeStep`], feed its answer back.
//!
//! Sender ([`CodeSend`]): POST `a` on a channel it picks (busy → another code on another
//! channel, [`super::MAX_TRIES`] at most) → announce the code once the relay holds it → the
//! POST ends when a receiver took `A` → GET `b` → always POST `c` → the keys, or
//! `WRONG_CODE` after that POST.
//! Receiver ([`CodeReceive`]): await a sender on the channel (`408` → `WRONG_CODE`) → GET `a`
//! → POST `b` → GET `c` → the keys and the offer, or `WRONG_CODE`.

use super::call::{misuse, Call, Got, Machine, Steps};
use super::channel::{next_code, Code, Pipe};
use super::keys::CodeKeys;
use super::relay::{CodeRelay, Posted};
use super::spake::{CodeReceiver, CodeSender, Offer};
use super::{busy_pipe, step_late, Late};
use crate::client::error::Error;
use crate::crypto::RandomSource;

/// The randomness of the codes and of SPAKE2 (`crate::crypto::OsRandom` outside tests).
pub type CodeRandom = Box<dyn RandomSource + Send>;

// ---- the sender -------------------------------------------------------------------------

/// The sender's exchange (`CodeSend::new`): holds a free channel, announces its code, runs
/// the exchange, and ends with the data transfer's keys (send to [`CodeKeys::path`], age-rt
/// to [`CodeKeys::recipient`]).
pub type CodeSend = Machine<Sender>;

/// The sender's steps.
pub struct Sender {
    relay: CodeRelay,
    offer: Offer,
    timeout_s: Option<f64>,
    rng: CodeRandom,
    /// Busy channels in a row so far.
    busy: u32,
    state: Sending,
}

enum Sending {
    /// Pick a code and POST its `A` on pipe `a` of its channel.
    Pick,
    /// POST `a`: the channel is ours (or busy); it ends when a receiver took `A`.
    HoldA(CodeSender),
    /// GET `b`: `B ‖ confirm_r`.
    AwaitB(CodeSender),
    /// POST `c` (always); the verdict on `b` waits for it.
    PostC(Result<CodeKeys, Error>),
    Over,
}

impl CodeSend {
    /// The sender's exchange on `relay`, sealing `offer` for the receiver. Step 1 waits for a
    /// receiver at most `timeout_s` seconds (`None`: until the driver stops).
    pub fn new(relay: CodeRelay, offer: Offer, timeout_s: Option<f64>, rng: CodeRandom) -> Self {
        Machine::of(Sender {
            relay,
            offer,
            timeout_s,
            rng,
            busy: 0,
            state: Sending::Pick,
        })
    }
}

impl Sender {
    /// A new code on a channel picked after `busy` busy ones: POST its `A`.
    fn hold(&mut self, call: &mut Call) -> Result<Sending, Error> {
        let code = next_code(self.busy, &mut *self.rng)?;
        let sender = CodeSender::new(code, self.offer.clone(), &mut *self.rng)?;
        let req = self.relay.post(code.channel(), Pipe::A, self.timeout_s)?;
        *call = Call::ask(req, Some(sender.message_a().to_vec()), Some(code));
        Ok(Sending::HoldA(sender))
    }
}

impl Steps for Sender {
    type Done = CodeKeys;

    fn next(&mut self, call: &mut Call, got: Got) -> Result<Option<CodeKeys>, Error> {
        self.state = match (std::mem::replace(&mut self.state, Sending::Over), got) {
            (Sending::Pick, None) => self.hold(call)?,
            (Sending::HoldA(sender), Some(a)) => match a?.posted()? {
                Posted::Held => {
                    *call = Call::ask(
                        self.relay.get(sender.code().channel(), Pipe::B)?,
                        None,
                        None,
                    );
                    Sending::AwaitB(sender)
                }
                Posted::Busy => {
                    self.busy += 1;
                    self.hold(call)?
                }
            },
            (Sending::AwaitB(sender), Some(b)) => {
                let channel = sender.code().channel();
                let b = b.map_err(|e| step_late(e, Late::Receiver))?;
                let reply = sender.on_b(&b.got()?);
                *call = Call::ask(
                    self.relay.post(channel, Pipe::C, None)?,
                    Some(reply.c),
                    None,
                );
                Sending::PostC(reply.result)
            }
            (Sending::PostC(verdict), Some(c)) => {
                let keys = verdict?;
                return match c.map_err(|e| step_late(e, Late::Receiver))?.posted()? {
                    Posted::Held => Ok(Some(keys)),
                    Posted::Busy => Err(busy_pipe(Pipe::C)),
                };
            }
            _ => return Err(misuse("no answer to go on with")),
        };
        Ok(None)
    }
}

// ---- the receiver -----------------------------------------------------------------------

/// The receiver's exchange on a code's channel (`CodeReceive::new`): ends with the data
/// transfer's keys (receive from [`CodeKeys::path`] with [`CodeKeys::identity`]) and the
/// sender's [`Offer`].
pub type CodeReceive = Machine<Receiver>;

/// The receiver's steps.
pub struct Receiver {
    relay: CodeRelay,
    code: Code,
    rng: CodeRandom,
    state: Receiving,
}

enum Receiving {
    Start,
    /// Is a sender waiting on the channel?
    AwaitSender,
    /// GET `a`: `A`.
    AwaitA,
    /// POST `b`: `B ‖ confirm_r`; it ends when the sender took it.
    PostB(CodeReceiver),
    /// GET `c`: `confirm_s ‖ seal(offer)`.
    AwaitC(CodeReceiver),
    Over,
}

impl CodeReceive {
    /// The receiver's exchange on `relay` for `code` (parsed first: a malformed code fails
    /// before any request, [`Code::parse`]).
    pub fn new(relay: CodeRelay, code: Code, rng: CodeRandom) -> Self {
        Machine::of(Receiver {
            relay,
            code,
            rng,
            state: Receiving::Start,
        })
    }
}

impl Steps for Receiver {
    type Done = (CodeKeys, Offer);

    fn next(&mut self, call: &mut Call, got: Got) -> Result<Option<(CodeKeys, Offer)>, Error> {
        let channel = self.code.channel();
        self.state = match (std::mem::replace(&mut self.state, Receiving::Over), got) {
            (Receiving::Start, None) => {
                *call = Call::ask(self.relay.await_sender(channel)?, None, None);
                Receiving::AwaitSender
            }
            (Receiving::AwaitSender, Some(w)) => {
                w?.sender_waits()?;
                *call = Call::ask(self.relay.get(channel, Pipe::A)?, None, None);
                Receiving::AwaitA
            }
            (Receiving::AwaitA, Some(a)) => {
                let a = a?.got()?;
                let mut receiver = CodeReceiver::new(&self.code, &mut *self.rng)?;
                let b = receiver.on_a(&a)?;
                *call = Call::ask(self.relay.post(channel, Pipe::B, None)?, Some(b), None);
                Receiving::PostB(receiver)
            }
            (Receiving::PostB(receiver), Some(b)) => {
                match b.map_err(|e| step_late(e, Late::Sender))?.posted()? {
                    Posted::Held => {
                        *call = Call::ask(self.relay.get(channel, Pipe::C)?, None, None);
                        Receiving::AwaitC(receiver)
                    }
                    Posted::Busy => return Err(busy_pipe(Pipe::B)),
                }
            }
            (Receiving::AwaitC(receiver), Some(c)) => {
                let c = c.map_err(|e| step_late(e, Late::Sender))?;
                return receiver.on_c(&c.got()?).map(Some);
            }
            _ => return Err(misuse("no answer to go on with")),
        };
        Ok(None)
    }
}

#[cfg(test)]
#[path = "exchange_tests.rs"]
mod tests;
