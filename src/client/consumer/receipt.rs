//! The consumer's receipt over one transfer's life (`PROTOCOL.md` §12.2), decided once for
//! the wasm and the native drivers: what it commits to (the [`Ledger`] of released bytes),
//! which receipt goes when (`ok` at the clean end or on `confirm()`, `failed` with the
//! stream's error, `cancelled` when the application stops reading), that one goes at most
//! once, and how long the driver waits for it before it reports ([`ReceiptWait`]).
//!
//! A driver enters every released chunk ([`ConsumerReceipt::add`]), tells the machine how the
//! stream ended, and runs each [`LastWord`] it gets back as a [`ReceiptDelivery`], waiting as
//! its [`ReceiptWait`] says.

use crate::client::delivery::ReceiptDelivery;
use crate::client::error::{Error, ErrorCode};
use crate::client::ledger::{self, Ledger};
use crate::client::receipt::{Outcome, ReceiptPlan};
use crate::client::request::Request;
use crate::crypto::Decryptor;
use crate::protocol::hello::FAILURE_NOTICE_WAIT_MS;

/// How a driver treats a receipt on its way before it reports to the application.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ReceiptWait {
    /// Wait for it before reporting the stream's end; its error is the stream's verdict
    /// instead of the end (the `ok` receipt of a producer that states its end:
    /// [`ReceiptDelivery::checks_end`]).
    Verdict,
    /// Wait for it before reporting the stream's end (so a caller that saw the end knows the
    /// producer was told); its result is not the stream's business: the data is the caller's
    /// and a producer left unconfirmed reports that itself.
    BeforeEnd,
    /// Wait at most this many milliseconds before reporting the stream's error (a producer
    /// that waits for the receipt fails at once instead of waiting to resume), then let it
    /// go on in the background.
    AtMost(f64),
    /// Nobody waits: the driver sends it in the background (a cut stream's producer is gone
    /// or failed; a dropped reader has nobody to report to).
    Background,
}

/// A receipt to deliver and how to wait for it.
#[derive(Debug)]
pub(crate) struct LastWord {
    pub delivery: ReceiptDelivery,
    pub wait: ReceiptWait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The stream is being read.
    Open,
    /// Read to its verified clean end.
    Ended,
    /// Ended with an error, or cancelled.
    Failed,
}

/// The consumer's receipt: from the stream's start (`plan`: where it goes, `None` when the
/// producer waits for none) to the receipt's delivery.
pub(crate) struct ConsumerReceipt {
    plan: Option<ReceiptPlan>,
    /// What was released (counted, and hashed when the receipt commits to the bytes).
    ledger: Ledger,
    /// The application confirms (`receipt: 'manual'`, [`ConsumerReceipt::confirm`]).
    manual: bool,
    reading: Reading,
    /// A receipt was sent (or is on its way).
    sent: bool,
    /// The receipt commits to the bytes as they arrived though this consumer decrypts them:
    /// its producer did not encrypt (`plain`, §12.1), so its commitment is its wire bytes and
    /// it has no key to check a plaintext receipt with (an age file sent as data).
    to_wire: bool,
}

/// How a consumer saw the bytes it enters in its receipt: the receipt commits to one kind
/// ([`ConsumerReceipt::commits_to_wire`], §12.2) and ignores the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Released to the application (plaintext when it decrypts).
    Released,
    /// Arrived from the relay, before decryption.
    Arrived,
}

impl ConsumerReceipt {
    /// The receipt of a stream that starts now; `decrypts`: the consumer decrypts it.
    pub fn new(plan: Option<ReceiptPlan>, decrypts: bool, manual: bool) -> Self {
        let to_wire = decrypts && plan.as_ref().is_some_and(|p| p.plain);
        let ledger = Ledger::new(ledger::consumer_hashes(
            plan.is_some(),
            decrypts && !to_wire,
        ));
        ConsumerReceipt {
            plan,
            ledger,
            manual,
            reading: Reading::Open,
            sent: false,
            to_wire,
        }
    }

    /// True when the receipt commits to the bytes as they arrived though this consumer
    /// decrypts them (its producer did not encrypt, §12.1): the driver enters them
    /// ([`Seen::Arrived`]) as well as the plaintext it releases ([`Seen::Released`]).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn commits_to_wire(&self) -> bool {
        self.to_wire
    }

    /// True when the producer waits for this consumer's receipt (§12.1).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn wanted(&self) -> bool {
        self.plan.is_some()
    }

    /// Whether bytes `seen` so are the ones this receipt commits to.
    fn enters(&self, seen: Seen) -> bool {
        (seen == Seen::Arrived) == self.to_wire
    }

    /// `bytes` were `seen` (released, or arrived before decryption): entered when the receipt
    /// commits to bytes seen so.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn add(&mut self, seen: Seen, bytes: &[u8]) {
        if self.enters(seen) {
            self.ledger.add(bytes);
        }
    }

    /// The same for `n` bytes that live elsewhere, copied by `fill` only when the receipt
    /// hashes them (a JavaScript chunk is copied into wasm memory only then).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn add_with(&mut self, seen: Seen, n: usize, fill: impl FnOnce(&mut [u8])) {
        if self.enters(seen) {
            self.ledger.add_with(n, fill);
        }
    }

    /// The stream was read to its verified clean end (`dec`: its decryptor, finished). With
    /// automatic receipts, the `ok` receipt to deliver before the end is reported.
    pub fn on_end(&mut self, dec: Option<&Decryptor>, now_ms: f64) -> Option<LastWord> {
        self.reading = Reading::Ended;
        if self.manual {
            return None;
        }
        let delivery = self.delivery(Outcome::Ok, dec, now_ms)?.ok()?;
        let wait = match delivery.checks_end() {
            true => ReceiptWait::Verdict,
            false => ReceiptWait::BeforeEnd,
        };
        Some(LastWord { delivery, wait })
    }

    /// The stream failed with `code` (`ABORTED`: the application's stop): the `failed` (or
    /// `cancelled`) receipt, waited for at most [`FAILURE_NOTICE_WAIT_MS`] — except after
    /// `TRUNCATED`, whose producer is gone or failed: then in the background.
    pub fn on_error(&mut self, code: ErrorCode, now_ms: f64) -> Option<LastWord> {
        if self.reading != Reading::Open {
            return None;
        }
        self.reading = Reading::Failed;
        let delivery = self.delivery(Outcome::of_error(code), None, now_ms)?.ok()?;
        let wait = match code {
            ErrorCode::Truncated => ReceiptWait::Background,
            _ => ReceiptWait::AtMost(FAILURE_NOTICE_WAIT_MS),
        };
        Some(LastWord { delivery, wait })
    }

    /// The application stopped reading before the end: the `cancelled` receipt (so its
    /// producer fails at once with `PEER_DISCONNECTED` instead of waiting to resume), waited
    /// for at most [`FAILURE_NOTICE_WAIT_MS`] by a driver that can wait.
    pub fn on_cancel(&mut self, now_ms: f64) -> Option<LastWord> {
        if self.reading != Reading::Open {
            return None;
        }
        self.reading = Reading::Failed;
        let delivery = self.delivery(Outcome::Cancelled, None, now_ms)?.ok()?;
        Some(LastWord {
            delivery,
            wait: ReceiptWait::AtMost(FAILURE_NOTICE_WAIT_MS),
        })
    }

    /// The stream was dropped before its end (the application cancelled or let go of it):
    /// the `cancelled` receipt, sent in the background, as nobody is left to wait for it.
    pub fn on_dropped(&mut self, now_ms: f64) -> Option<LastWord> {
        let mut word = self.on_cancel(now_ms)?;
        word.wait = ReceiptWait::Background;
        Some(word)
    }

    /// The application's `confirm()`: the `ok` receipt, whose result is the caller's
    /// (`None`: none is due — the producer waits for none, or one was sent).
    ///
    /// # Errors
    ///
    /// `UNSUPPORTED` before the stream was read to its clean end; what building the receipt
    /// call meets (a bad URL).
    pub fn confirm(
        &mut self,
        dec: Option<&Decryptor>,
        now_ms: f64,
    ) -> Result<Option<ReceiptDelivery>, Error> {
        if self.reading != Reading::Ended {
            return Err(Error::usage(
                "confirm() comes after the stream was read to its end",
            ));
        }
        self.delivery(Outcome::Ok, dec, now_ms).transpose()
    }

    /// The page is going away before a receipt went (with manual receipts: before
    /// `confirm()`, even after the end — it can't come now): the `cancelled` receipt's one
    /// call, made at once (nothing can wait).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn page_left(&mut self) -> Option<Request> {
        if self.sent {
            return None;
        }
        let plan = self.plan.as_ref()?;
        self.sent = true;
        let (released, _) = ledger::consumer_commitment(&self.ledger, None, Outcome::Cancelled, "");
        plan.request(Outcome::Cancelled, &released, None).ok()
    }

    /// The delivery of the receipt for `outcome`, once (`None`: none is due). A negative
    /// receipt needs no digest or MAC (§12.2): the count alone, without the decryptor.
    fn delivery(
        &mut self,
        outcome: Outcome,
        dec: Option<&Decryptor>,
        now_ms: f64,
    ) -> Option<Result<ReceiptDelivery, Error>> {
        let plan = self.plan.as_ref()?;
        if std::mem::replace(&mut self.sent, true) {
            return None;
        }
        // no plaintext commitment or key for a producer that did not encrypt
        let dec = dec.filter(|_| outcome == Outcome::Ok && !self.to_wire);
        let (released, key) =
            ledger::consumer_commitment(&self.ledger, dec, outcome, &plan.transfer);
        Some(plan.delivery(outcome, &released, key.as_deref(), now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::delivery::DeliveryStep;
    use crate::client::urls::RelayBase;

    fn plan(attest: bool) -> Option<ReceiptPlan> {
        Some(ReceiptPlan {
            relay: RelayBase::parse("http://h:1").unwrap(),
            path: "p".into(),
            token: None,
            transfer: "t".repeat(22),
            attest,
            plain: false,
        })
    }

    fn outcome_of(d: &mut ReceiptDelivery) -> String {
        let DeliveryStep::Call(req) = d.poll(0.0) else {
            panic!("no call")
        };
        let hello = req
            .headers
            .iter()
            .find(|(k, _)| *k == crate::protocol::headers::HELLO);
        hello.map(|(_, v)| v.clone()).unwrap_or_default()
    }

    // Regression: a producer that sent an age file as it is (no encryption of its own) got
    // UNCONFIRMED ("says 11 bytes arrived, but 211 were sent") from a consumer that decrypted
    // it: that consumer's receipt committed to the plaintext. It commits to the wire bytes.
    #[test]
    fn a_consumer_that_decrypts_a_plain_producers_stream_commits_to_the_wire_bytes() {
        use crate::client::receipt::{verify, Committer};
        let mut plain_plan = plan(false).unwrap();
        plain_plan.plain = true;
        let mut r = ConsumerReceipt::new(Some(plain_plan.clone()), true, false);
        assert!(r.commits_to_wire());
        r.add(Seen::Arrived, b"age-encryption.org/v1 ...");
        r.add(Seen::Released, b"hello world"); // the plaintext released: not what this receipt commits to
        let (released, key) = ledger::consumer_commitment(&r.ledger, None, Outcome::Ok, "t");
        assert!(key.is_none());
        let mut wire = Committer::new();
        wire.update(b"age-encryption.org/v1 ...");
        assert_eq!(released, wire.commitment());
        // what the producer checks it against: its wire bytes, no key
        let text = crate::client::receipt::receipt_text(
            &plain_plan.transfer,
            Outcome::Ok,
            &released,
            None,
        );
        let report = verify(&text, &plain_plan.transfer, &wire.commitment(), None).unwrap();
        assert_eq!((report.bytes, report.authenticated), (25, false));
        // an encrypting producer (no `plain`): the plaintext, as before; a plain consumer
        // enters what it releases
        let mut r = ConsumerReceipt::new(plan(false), true, false);
        assert!(!r.commits_to_wire());
        r.add(Seen::Arrived, b"ciphertext");
        assert_eq!(r.ledger.bytes(), 0);
        let mut r = ConsumerReceipt::new(Some(plain_plan), false, false);
        assert!(!r.commits_to_wire());
        r.add(Seen::Released, b"hello");
        r.add(Seen::Arrived, b"hello");
        assert_eq!(r.ledger.bytes(), 5);
    }

    #[test]
    fn automatic_receipts_go_at_the_end_and_are_the_verdict_only_when_the_end_is_stated() {
        let mut r = ConsumerReceipt::new(plan(true), false, false);
        r.add(Seen::Released, b"hello");
        let w = r.on_end(None, 0.0).expect("an ok receipt");
        assert_eq!(w.wait, ReceiptWait::Verdict);
        let mut d = w.delivery;
        assert!(outcome_of(&mut d).contains("ok"));
        // sent once: no second receipt, no failure receipt after it
        assert!(r.on_error(ErrorCode::Network, 0.0).is_none());
        assert!(r.confirm(None, 0.0).unwrap().is_none());

        let mut r = ConsumerReceipt::new(plan(false), false, false);
        assert_eq!(r.on_end(None, 0.0).unwrap().wait, ReceiptWait::BeforeEnd);
    }

    #[test]
    fn a_decrypting_consumers_undelivered_receipt_is_unconfirmed_not_truncated() {
        // the producer said `attest`, then went away after its last byte (an interrupted
        // sender): a consumer whose decryption authenticated the end keeps its data
        let released = crate::client::receipt::Committer::new().commitment();
        let plan = plan(true).unwrap();
        let mut d = plan
            .delivery(Outcome::Ok, &released, Some(&[7; 32]), 0.0)
            .unwrap();
        assert!(!d.checks_end());
        d.poll(0.0);
        d.on_answer(408, &crate::client::request::NoHeaders, "", 1.0);
        let DeliveryStep::Done(Err(e)) = d.poll(1.0) else {
            panic!("no verdict")
        };
        assert_eq!(e.code, ErrorCode::Unconfirmed, "{}", e.message);
        // the same for a plain consumer is an end nobody stated
        let mut d = plan.delivery(Outcome::Ok, &released, None, 0.0).unwrap();
        d.poll(0.0);
        d.on_answer(408, &crate::client::request::NoHeaders, "", 1.0);
        let DeliveryStep::Done(Err(e)) = d.poll(1.0) else {
            panic!("no verdict")
        };
        assert_eq!(e.code, ErrorCode::Truncated, "{}", e.message);
    }

    #[test]
    fn manual_receipts_wait_for_confirm_which_comes_after_the_end() {
        let mut r = ConsumerReceipt::new(plan(true), false, true);
        assert_eq!(
            r.confirm(None, 0.0).unwrap_err().code,
            ErrorCode::Unsupported
        );
        assert!(r.on_end(None, 0.0).is_none());
        let d = r.confirm(None, 0.0).unwrap().expect("the ok receipt");
        assert!(d.checks_end());
        assert!(r.confirm(None, 0.0).unwrap().is_none());
    }

    #[test]
    fn an_error_sends_failed_and_waits_a_moment_except_after_a_cut() {
        let mut r = ConsumerReceipt::new(plan(true), true, false);
        let mut w = r.on_error(ErrorCode::DecryptFailed, 0.0).unwrap();
        assert_eq!(w.wait, ReceiptWait::AtMost(FAILURE_NOTICE_WAIT_MS));
        assert!(outcome_of(&mut w.delivery).contains("failed"));
        assert!(r.on_error(ErrorCode::DecryptFailed, 0.0).is_none());
        assert!(r.on_cancel(0.0).is_none());

        let mut r = ConsumerReceipt::new(plan(true), false, false);
        let w = r.on_error(ErrorCode::Truncated, 0.0).unwrap();
        assert_eq!(w.wait, ReceiptWait::Background);

        let mut r = ConsumerReceipt::new(plan(true), false, false);
        let mut w = r.on_error(ErrorCode::Aborted, 0.0).unwrap();
        assert!(outcome_of(&mut w.delivery).contains("cancelled"));
    }

    #[test]
    fn a_cancel_or_a_page_leaving_sends_cancelled_once_and_never_after_the_end() {
        let mut r = ConsumerReceipt::new(plan(false), false, false);
        let mut w = r.on_cancel(0.0).unwrap();
        assert!(outcome_of(&mut w.delivery).contains("cancelled"));
        assert!(r.page_left().is_none());

        let mut r = ConsumerReceipt::new(plan(false), false, false);
        let mut w = r.on_dropped(0.0).unwrap();
        assert_eq!(w.wait, ReceiptWait::Background, "nobody is left to wait");
        assert!(outcome_of(&mut w.delivery).contains("cancelled"));
        assert!(r.on_dropped(0.0).is_none());

        let mut r = ConsumerReceipt::new(plan(false), false, false);
        assert!(r.page_left().is_some());
        assert!(r.page_left().is_none());

        let mut r = ConsumerReceipt::new(plan(false), false, true);
        r.on_end(None, 0.0);
        assert!(r.on_cancel(0.0).is_none());
        assert!(
            r.page_left().is_some(),
            "confirm() can't come after the page left"
        );
        let mut r = ConsumerReceipt::new(plan(false), false, false);
        r.on_end(None, 0.0);
        assert!(r.page_left().is_none(), "the ok receipt went");
    }

    #[test]
    fn without_a_plan_nothing_is_sent() {
        let mut r = ConsumerReceipt::new(None, false, false);
        assert!(!r.wanted());
        assert!(r.on_end(None, 0.0).is_none());
        assert!(r.confirm(None, 0.0).unwrap().is_none());
        let mut r = ConsumerReceipt::new(None, false, false);
        assert!(r.on_error(ErrorCode::Network, 0.0).is_none());
    }
}
