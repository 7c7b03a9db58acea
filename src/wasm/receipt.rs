//! Delivery receipts in the fetch adapter (`docs/PROTOCOL.md` §12): the core decides
//! ([`crate::client::receipt`]) and keeps the ledgers ([`crate::client::ledger`]: what is
//! counted, hashed and committed to); this module feeds them the JavaScript chunks as they
//! pass, and makes the consumer's Connect call on the transfer's channel when its stream ends.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use futures::StreamExt;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local, JsFuture};

use super::bindings::{now_ms, sleep};
use super::chunks::ByteStream;
use super::error::into_js;
use super::http::exchange;
use super::pagehide::PageHide;
use super::stop::Abort;
use crate::client::consumer::{ConsumerReceipt, LastWord, ReceiptWait, Seen};
use crate::client::delivery::{DeliveryStep, ReceiptDelivery};
use crate::client::error::Error;
use crate::client::ledger::{self, ReceiptKey};
use crate::client::receipt::{Commitment, ReceiptPlan};
use crate::crypto::{Decryptor, Encryptor};

/// What one side counted (and hashed): the core's [`crate::client::ledger::Ledger`].
pub use crate::client::ledger::Ledger;

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

/// The consumer's side of one transfer's receipt: the core's [`ConsumerReceipt`] (which
/// receipt goes when, and how long to wait for it) and the decryptor whose receipt key an
/// `ok` receipt of an encrypted transfer carries.
pub struct Receipt {
    core: RefCell<ConsumerReceipt>,
    dec: Option<Rc<RefCell<Decryptor>>>,
    /// In a page: the `cancelled` receipt if the page goes away first.
    _page_hide: Option<PageHide>,
}

fn busy() -> Error {
    Error::usage("internal error in the SDK: the receipt's state is in use")
}

impl Receipt {
    /// `plan`: where the receipt goes (`None`: the producer doesn't wait for one);
    /// `dec`: the decryptor of an encrypted transfer.
    pub fn new(
        plan: Option<ReceiptPlan>,
        dec: Option<Rc<RefCell<Decryptor>>>,
        manual: bool,
    ) -> Rc<Receipt> {
        let wants = plan.is_some();
        let core = ConsumerReceipt::new(plan, dec.is_some(), manual);
        Rc::new_cyclic(|me: &Weak<Receipt>| {
            let me = me.clone();
            Receipt {
                core: RefCell::new(core),
                dec,
                _page_hide: wants
                    .then(|| {
                        PageHide::watch(Box::new(move || {
                            me.upgrade()
                                .and_then(|r| r.core.try_borrow_mut().ok()?.page_left())
                                .into_iter()
                                .collect()
                        }))
                    })
                    .flatten(),
            }
        })
    }

    /// Enters a JavaScript chunk `seen` so (copied into wasm memory only when the core hashes
    /// it: [`ConsumerReceipt::add_with`]).
    pub fn enter(&self, chunk: &js_sys::Uint8Array, seen: Seen) {
        if let Ok(mut core) = self.core.try_borrow_mut() {
            core.add_with(seen, chunk.length() as usize, |buf| chunk.copy_to(buf));
        }
    }

    /// Whether the receipt commits to the bytes as they arrive though they are decrypted (the
    /// core's [`ConsumerReceipt::commits_to_wire`]).
    pub fn commits_to_wire(&self) -> bool {
        self.core
            .try_borrow()
            .is_ok_and(|core| core.commits_to_wire())
    }

    /// The stream ended cleanly: the core's `ok` receipt with automatic receipts, sent and
    /// waited for as it says; an error instead of the end when it is the verdict.
    async fn on_end(&self) -> Option<Error> {
        let word = {
            let dec = match &self.dec {
                Some(d) => match d.try_borrow() {
                    Ok(d) => Some(d),
                    Err(_) => return Some(busy()),
                },
                None => None,
            };
            let mut core = self.core.try_borrow_mut().ok()?;
            core.on_end(dec.as_deref(), now_ms())
        };
        send_last_word(word?).await
    }

    /// The application's `confirm()` (`receipt: 'manual'`): sends the `ok` receipt once the
    /// stream was read to its end.
    async fn confirm(&self) -> Result<(), Error> {
        let delivery = {
            let dec = match &self.dec {
                Some(d) => Some(d.try_borrow().map_err(|_| busy())?),
                None => None,
            };
            let mut core = self.core.try_borrow_mut().map_err(|_| busy())?;
            core.confirm(dec.as_deref(), now_ms())?
        };
        match delivery {
            Some(d) => run(d).await,
            None => Ok(()),
        }
    }

    /// The application's `confirm` function.
    pub fn confirm_fn(self: &Rc<Self>) -> Function {
        let me = self.clone();
        let f = Closure::<dyn FnMut() -> Promise>::new(move || {
            let me = me.clone();
            future_to_promise(async move {
                me.confirm().await.map_err(into_js)?;
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

/// Sends `word` and waits for it as the core's [`ReceiptWait`] says: its error when it is the
/// stream's verdict (an error instead of the end), else `None`. A delivery nobody waits for
/// (any more) goes on in the background.
async fn send_last_word(word: LastWord) -> Option<Error> {
    let LastWord { delivery, wait } = word;
    match wait {
        ReceiptWait::Verdict => run(delivery).await.err(),
        ReceiptWait::BeforeEnd => {
            let _ = run(delivery).await;
            None
        }
        ReceiptWait::AtMost(ms) => {
            let call = JsFuture::from(future_to_promise(async move {
                let _ = run(delivery).await;
                Ok(JsValue::UNDEFINED)
            }));
            let _ = futures::future::select(call, Box::pin(sleep(ms))).await;
            None
        }
        ReceiptWait::Background => {
            spawn_local(async move {
                let _ = run(delivery).await;
            });
            None
        }
    }
}

/// Sends a `cancelled` receipt if the stream is dropped (the application cancelled it)
/// before its end or an error.
struct OnCancel(Rc<Receipt>);

impl Drop for OnCancel {
    fn drop(&mut self) {
        let word = match self.0.core.try_borrow_mut() {
            Ok(mut core) => core.on_dropped(now_ms()),
            Err(_) => None,
        };
        if let Some(w) = word {
            spawn_local(async move {
                send_last_word(w).await;
            });
        }
    }
}

/// The consumer's released stream with its receipt: every chunk is committed to; at the
/// clean end and on an error the core's receipt goes out (automatic `ok` receipts before the
/// stream reports its end, so a caller that saw the end knows the sender was told, and that
/// the end is the sender's when it promised to state it — otherwise the stream errors
/// `TRUNCATED`, §12.2; `failed` with the error's code, waited for a moment); a cancel sends
/// `cancelled`.
pub fn with_receipt(stream: ByteStream, receipt: Rc<Receipt>) -> ByteStream {
    let guard = OnCancel(receipt);
    futures::stream::unfold(Some((stream, guard)), |state| async move {
        let (mut input, guard) = state?;
        match input.next().await {
            Some(Ok(chunk)) => {
                guard.0.enter(&chunk, Seen::Released);
                Some((Ok(chunk), Some((input, guard))))
            }
            Some(Err(e)) => {
                let word = match guard.0.core.try_borrow_mut() {
                    Ok(mut core) => core.on_error(e.code, now_ms()),
                    Err(_) => None,
                };
                if let Some(w) = word {
                    send_last_word(w).await;
                }
                Some((Err(e), None))
            }
            None => guard.0.on_end().await.map(|e| (Err(e), None)),
        }
    })
    .boxed_local()
}
