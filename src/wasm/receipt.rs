//! Delivery receipts in the fetch adapter (`docs/PROTOCOL.md` §12): the core decides
//! ([`crate::client::receipt`]) and keeps the ledgers ([`crate::client::ledger`]: what is
//! counted, hashed and committed to); this module feeds them the JavaScript chunks as they
//! pass, and makes the consumer's Connect call on the transfer's channel when its stream ends.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use futures::StreamExt;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

use super::abort::Abort;
use super::bindings::{now_ms, sleep};
use super::chunks::ByteStream;
use super::error::into_js;
use super::http::exchange;
use super::pagehide::PageHide;
use crate::client::delivery::{DeliveryStep, ReceiptDelivery};
use crate::client::error::Error;
use crate::client::ledger::{self, ReceiptKey};
use crate::client::receipt::{Commitment, Outcome, ReceiptPlan};
use crate::crypto::{Decryptor, Encryptor};

/// What one side counted (and hashed): the core's [`crate::client::ledger::Ledger`].
pub use crate::client::ledger::Ledger;

/// Enters a JavaScript chunk in `ledger` (copied into wasm memory only when it is hashed).
fn add(ledger: &mut Ledger, chunk: &js_sys::Uint8Array) {
    ledger.add_with(chunk.length() as usize, |buf| chunk.copy_to(buf));
}

/// `stream` with every chunk entered in `ledger` as it passes.
pub fn committed(stream: ByteStream, ledger: Rc<RefCell<Ledger>>) -> ByteStream {
    stream
        .map(move |item| {
            if let Ok(chunk) = &item {
                add(&mut ledger.borrow_mut(), chunk);
            }
            item
        })
        .boxed_local()
}

/// `stream`, setting `ended` at its clean end (every byte passed: what was committed to is
/// final, the producer's end of §12.2).
pub fn marking_end(stream: ByteStream, ended: Rc<Cell<bool>>) -> ByteStream {
    stream
        .chain(futures::stream::poll_fn(move |_| {
            ended.set(true);
            std::task::Poll::Ready(None)
        }))
        .boxed_local()
}

/// The producer's commitment and receipt key (§12.2), as the core decides
/// ([`ledger::producer_commitment`]); `enc` is the transfer's shared encryptor.
pub fn producer_commitment(
    plain: &Ledger,
    wire: &Ledger,
    enc: Option<&RefCell<Encryptor>>,
    to_plaintext: bool,
    transfer: &str,
) -> (Commitment, Option<ReceiptKey>) {
    let enc = enc.map(RefCell::borrow);
    ledger::producer_commitment(plain, wire, enc.as_deref(), to_plaintext, transfer)
}

/// The consumer's side of one transfer's receipt.
pub struct Receipt {
    plan: Option<ReceiptPlan>,
    ledger: RefCell<Ledger>,
    dec: Option<Rc<RefCell<Decryptor>>>,
    manual: bool,
    /// The stream was read to its clean end.
    ended: Cell<bool>,
    /// A receipt was sent (or is on its way).
    sent: Cell<bool>,
    /// In a page: the `cancelled` receipt if the page goes away first.
    _page_hide: Option<PageHide>,
}

impl Receipt {
    /// `plan`: where the receipt goes (`None`: the producer doesn't wait for one);
    /// `dec`: the decryptor of an encrypted transfer.
    pub fn new(
        plan: Option<ReceiptPlan>,
        dec: Option<Rc<RefCell<Decryptor>>>,
        manual: bool,
    ) -> Rc<Receipt> {
        let ledger = Ledger::new(ledger::consumer_hashes(plan.is_some(), dec.is_some()));
        let wants = plan.is_some();
        Rc::new_cyclic(|me: &Weak<Receipt>| {
            let me = me.clone();
            Receipt {
                plan,
                ledger: RefCell::new(ledger),
                dec,
                manual,
                ended: Cell::new(false),
                sent: Cell::new(false),
                _page_hide: wants
                    .then(|| {
                        PageHide::watch(move || {
                            me.upgrade()
                                .and_then(|r| r.page_left())
                                .into_iter()
                                .collect()
                        })
                    })
                    .flatten(),
            }
        })
    }

    /// The page is going away before a receipt went: the `cancelled` one, sent once.
    fn page_left(&self) -> Option<crate::client::request::Request> {
        if self.sent.replace(true) {
            return None;
        }
        let (released, _) = self.released(Outcome::Cancelled).ok()?;
        self.plan
            .as_ref()?
            .request(Outcome::Cancelled, &released, None)
            .ok()
    }

    /// What the consumer released so far and, for an `ok` receipt of an encrypted transfer,
    /// the receipt key. A negative receipt needs no digest or mac (§12.2): the count alone,
    /// without touching a decryptor that an interrupted read may hold.
    fn released(&self, outcome: Outcome) -> Result<(Commitment, Option<ReceiptKey>), Error> {
        let busy = || Error::usage("internal error in the SDK: the receipt's ledger is in use");
        let ledger = self.ledger.try_borrow().map_err(|_| busy())?;
        let transfer = self.plan.as_ref().map_or("", |p| p.transfer.as_str());
        if outcome != Outcome::Ok {
            return Ok(ledger::consumer_commitment(
                &ledger, None, outcome, transfer,
            ));
        }
        let dec = match &self.dec {
            Some(d) => Some(d.try_borrow().map_err(|_| busy())?),
            None => None,
        };
        Ok(ledger::consumer_commitment(
            &ledger,
            dec.as_deref(),
            outcome,
            transfer,
        ))
    }

    /// Sends the receipt for `outcome` once; `Ok` when the producer took it (or none is
    /// wanted), and whether that result is the stream's verdict (an `ok` receipt that checks
    /// the producer's end, §12.2: [`ReceiptDelivery::checks_end`]).
    async fn deliver(self: Rc<Self>, outcome: Outcome) -> (Result<(), Error>, bool) {
        let Some(plan) = &self.plan else {
            return (Ok(()), false);
        };
        if self.sent.replace(true) {
            return (Ok(()), false);
        }
        let delivery = self.released(outcome).and_then(|(released, key)| {
            plan.delivery(outcome, &released, key.as_deref(), now_ms())
        });
        match delivery {
            Ok(d) => {
                let checks_end = d.checks_end();
                (run(d).await, checks_end)
            }
            Err(e) => (Err(e), false),
        }
    }

    /// The application's `confirm()` (`receipt: 'manual'`): sends the `ok` receipt once the
    /// stream was read to its end.
    pub fn confirm_fn(self: &Rc<Self>) -> Function {
        let me = self.clone();
        let f = Closure::<dyn FnMut() -> Promise>::new(move || {
            let me = me.clone();
            future_to_promise(async move {
                if !me.ended.get() {
                    return Err(into_js(Error::usage(
                        "confirm() comes after the stream was read to its end",
                    )));
                }
                me.deliver(Outcome::Ok).await.0.map_err(into_js)?;
                Ok(JsValue::UNDEFINED)
            })
        });
        f.into_js_value().unchecked_into()
    }
}

/// Makes the calls of one receipt's delivery as the core says, until its end.
async fn run(mut delivery: ReceiptDelivery) -> Result<(), Error> {
    loop {
        match delivery.poll(now_ms()) {
            DeliveryStep::Call(req) => {
                let mut abort = Abort::new(None)?;
                match exchange(&req, &mut abort, None).await {
                    Ok((status, headers, body)) => {
                        delivery.on_answer(status, &headers, &body, now_ms())
                    }
                    Err(f) => delivery.on_failure(f, now_ms()),
                }
            }
            DeliveryStep::WakeAt(t) => sleep((t - now_ms()).max(0.0)).await,
            DeliveryStep::Done(r) => return r,
        }
    }
}

/// Sends a `cancelled` receipt if the stream is dropped (the application cancelled it)
/// before its end or an error.
struct OnCancel(Rc<Receipt>);

impl Drop for OnCancel {
    fn drop(&mut self) {
        let r = self.0.clone();
        if !r.ended.get() && !r.sent.get() && r.plan.is_some() {
            spawn_local(async move {
                let _ = r.deliver(Outcome::Cancelled).await;
            });
        }
    }
}

/// The consumer's released stream with its receipt: every chunk is committed to; at the
/// clean end the `ok` receipt goes out (automatic mode: before the stream reports its end, so
/// a caller that saw the end knows the sender was told, and that the end is the sender's when
/// it promised to state it — otherwise the stream errors `TRUNCATED`, §12.2); an error sends
/// `failed` with its code; a cancel sends `cancelled`.
pub fn with_receipt(stream: ByteStream, receipt: Rc<Receipt>) -> ByteStream {
    let guard = OnCancel(receipt);
    futures::stream::unfold(Some((stream, guard)), |state| async move {
        let (mut input, guard) = state?;
        match input.next().await {
            Some(Ok(chunk)) => {
                add(&mut guard.0.ledger.borrow_mut(), &chunk);
                Some((Ok(chunk), Some((input, guard))))
            }
            Some(Err(e)) => {
                let r = guard.0.clone();
                let outcome = Outcome::of_error(e.code);
                spawn_local(async move {
                    let _ = r.deliver(outcome).await;
                });
                Some((Err(e), None))
            }
            None => {
                let r = guard.0.clone();
                r.ended.set(true);
                if !r.manual {
                    // Only the producer's end (§12.2) is the stream's business: a receipt that
                    // can't be delivered otherwise leaves the sender unconfirmed, which it
                    // reports, and the data is the caller's.
                    if let (Err(e), true) = r.deliver(Outcome::Ok).await {
                        return Some((Err(e), None));
                    }
                }
                None
            }
        }
    })
    .boxed_local()
}
