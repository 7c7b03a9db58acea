//! Delivering a consumer's receipt (`PROTOCOL.md` §12.2) as a machine with its own timer: the
//! receipt call, made again after [`RESUME_RETRY_MS`] while the relay can't be reached or
//! answers `503` (a relay that is restarting, §12.3) — an `ok` receipt only, and only within
//! the call's time ([`Outcome::send_timeout_s`]). When the producer promised its end (§12.2,
//! "The producer's end"), the `ok` receipt's meeting also checks it: the delivery's result is
//! then the stream's verdict ([`ReceiptDelivery::checks_end`]). Drivers (wasm, native) make
//! the calls and sleep until the time it names.

use super::error::{classify_response, unavailable_now, Error, ErrorCode, Failure, StopReason};
use super::receipt::{check_end, Commitment, Outcome, ReceiptPlan};
use super::request::{Headers, Request};
use crate::client::options::number_text;
use crate::protocol::headers::PEER_HELLO;
use crate::protocol::hello::RESUME_RETRY_MS;

const WHAT: &str = "sending the delivery receipt (PROTOCOL.md §12.2)";

/// What the driver does next.
#[derive(Debug)]
pub enum DeliveryStep {
    /// Make this call; answer with [`ReceiptDelivery::on_answer`] or
    /// [`ReceiptDelivery::on_failure`].
    Call(Request),
    /// Poll again at this time (milliseconds on the driver's clock).
    WakeAt(f64),
    /// The end: `Ok` when the producer took the receipt (and, [`ReceiptDelivery::checks_end`],
    /// stated the end the consumer saw); otherwise why not — `TRUNCATED` when the delivery
    /// checks the end, else `UNCONFIRMED` when the producer didn't come for it (gone?), the
    /// relay's refusal or the network failure.
    Done(Result<(), Error>),
}

#[derive(Debug)]
enum State {
    Due,
    Out,
    Sleeping(f64),
    Done(Result<(), Error>),
}

/// One receipt on its way.
#[derive(Debug)]
pub struct ReceiptDelivery {
    req: Request,
    outcome: Outcome,
    until_ms: f64,
    state: State,
    /// The end the producer must state (§12.2): what this `ok` receipt commits to.
    end: Option<Commitment>,
}

impl ReceiptDelivery {
    /// The receipt call `req` for `outcome`, first made at `now_ms`.
    pub fn new(req: Request, outcome: Outcome, now_ms: f64) -> Self {
        ReceiptDelivery {
            req,
            outcome,
            until_ms: now_ms + outcome.send_timeout_s() * 1000.0,
            state: State::Due,
            end: None,
        }
    }

    /// The delivery also checks that the producer states the end `released` (its promise,
    /// §12.2); only an `ok` receipt checks anything.
    pub fn checking_end(mut self, released: Commitment) -> Self {
        if self.outcome == Outcome::Ok {
            self.end = Some(released);
        }
        self
    }

    /// True when the delivery checks the producer's end (§12.2): its result is then the
    /// stream's verdict, reported to the application as the stream's error (before the end
    /// with automatic receipts, from `confirm()` with manual ones); otherwise it only tells
    /// whether the producer got the receipt, and the data is the application's either way.
    pub fn checks_end(&self) -> bool {
        self.end.is_some()
    }

    pub fn poll(&mut self, now_ms: f64) -> DeliveryStep {
        match std::mem::replace(&mut self.state, State::Out) {
            State::Due => DeliveryStep::Call(self.req.clone()),
            State::Sleeping(t) if now_ms >= t => DeliveryStep::Call(self.req.clone()),
            State::Sleeping(t) => {
                self.state = State::Sleeping(t);
                DeliveryStep::WakeAt(t)
            }
            State::Out => DeliveryStep::Done(Err(Error::new(
                ErrorCode::Unsupported,
                "internal error in the receipt delivery: polled while its call is out",
            ))),
            State::Done(r) => {
                self.state = State::Done(r.clone());
                DeliveryStep::Done(r)
            }
        }
    }

    /// The call's answer: its status, headers (the producer's hello) and body.
    pub fn on_answer(&mut self, status: u16, headers: &dyn Headers, body: &str, now_ms: f64) {
        let r = match status {
            200 => match &self.end {
                Some(ours) => check_end(headers.get(PEER_HELLO).as_deref(), ours),
                None => Ok(()),
            },
            408 => Err(Error::new(
                ErrorCode::Unconfirmed,
                format!(
                    "{WHAT}: the sender did not come for it within {} s (gone?)",
                    number_text(self.outcome.send_timeout_s())
                ),
            )),
            s if unavailable_now(s) => return self.again(classify_response(s, body, WHAT), now_ms),
            _ => Err(classify_response(status, body, WHAT)),
        };
        self.finish(r);
    }

    /// The call failed below HTTP (a stop ends the delivery; anything else is tried again).
    pub fn on_failure(&mut self, f: Failure, now_ms: f64) {
        let stopped = f.stop != StopReason::None;
        let e = f.into_error(ErrorCode::Network, WHAT);
        if stopped {
            self.finish(Err(e));
        } else {
            self.again(e, now_ms);
        }
    }

    fn again(&mut self, e: Error, now_ms: f64) {
        let next = now_ms + RESUME_RETRY_MS;
        if self.outcome.repeats() && next <= self.until_ms {
            self.state = State::Sleeping(next);
        } else {
            self.finish(Err(e));
        }
    }

    /// Ends the delivery with `r`: when it checks the end, a receipt that could not be
    /// delivered is an end that no producer stated (`TRUNCATED`, with why).
    fn finish(&mut self, r: Result<(), Error>) {
        let r = match r {
            Err(e) if self.end.is_some() && e.code != ErrorCode::Truncated => {
                let mut t = Error::new(
                    ErrorCode::Truncated,
                    format!(
                        "the stream ended cleanly, but the sender did not confirm that end, so \
                         it may have been cut (PROTOCOL.md §12.2): {}",
                        e.message
                    ),
                );
                if let Some(c) = e.cause() {
                    t = t.with_shared_source(Some(c.clone()));
                }
                Err(t)
            }
            r => r,
        };
        self.state = State::Done(r);
    }
}

impl ReceiptPlan {
    /// The receipt for `outcome` on its way from `now_ms` ([`ReceiptPlan::request`]): an `ok`
    /// one checks the producer's end when it promised one (§12.2,
    /// [`ReceiptDelivery::checks_end`]) — unless the consumer decrypts (`key`: the receipt's
    /// key from the file key), whose end its decryption authenticated already.
    pub fn delivery(
        &self,
        outcome: Outcome,
        released: &Commitment,
        key: Option<&[u8; 32]>,
        now_ms: f64,
    ) -> Result<ReceiptDelivery, Error> {
        let d = ReceiptDelivery::new(self.request(outcome, released, key)?, outcome, now_ms);
        Ok(match self.attest && key.is_none() {
            true => d.checking_end(released.clone()),
            false => d,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::receipt::{end_items, Committer};
    use crate::client::request::NoHeaders;

    fn req() -> Request {
        Request::get("http://h:1/connect/v0/p?mode=await-reader", Vec::new())
    }

    fn down() -> Failure {
        Failure::network(std::io::Error::other("connection refused"))
    }

    #[test]
    fn an_ok_receipt_is_sent_again_while_the_relay_is_away_within_its_time() {
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        let DeliveryStep::Call(_) = d.poll(0.0) else {
            panic!()
        };
        d.on_failure(down(), 100.0);
        assert!(matches!(d.poll(100.0), DeliveryStep::WakeAt(t) if t == 1100.0));
        assert!(matches!(d.poll(1100.0), DeliveryStep::Call(_)));
        d.on_answer(503, &NoHeaders, "restarting", 1200.0);
        assert!(matches!(d.poll(2200.0), DeliveryStep::Call(_)));
        d.on_answer(200, &NoHeaders, "", 2300.0);
        assert!(matches!(d.poll(2300.0), DeliveryStep::Done(Ok(()))));
        // past the call's time: the last error
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        d.poll(0.0);
        d.on_failure(down(), Outcome::Ok.send_timeout_s() * 1000.0 - 500.0);
        let DeliveryStep::Done(Err(e)) = d.poll(1e9) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Network);
    }

    #[test]
    fn a_negative_receipt_a_408_and_a_stop_are_final() {
        let mut d = ReceiptDelivery::new(req(), Outcome::Cancelled, 0.0);
        d.poll(0.0);
        d.on_failure(down(), 10.0);
        assert!(matches!(d.poll(2000.0), DeliveryStep::Done(Err(_))));
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        d.poll(0.0);
        d.on_answer(408, &NoHeaders, "", 10.0);
        let DeliveryStep::Done(Err(e)) = d.poll(10.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Unconfirmed);
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        d.poll(0.0);
        d.on_failure(Failure::stopped(StopReason::User, None), 10.0);
        assert!(matches!(d.poll(2000.0), DeliveryStep::Done(Err(_))));
    }

    fn sent(bytes: &[u8]) -> Commitment {
        let mut c = Committer::new();
        c.update(bytes);
        c.commitment()
    }

    /// §12.2 "The producer's end": the `ok` receipt's meeting decides the stream's verdict.
    #[test]
    fn an_ok_receipt_checks_the_producers_end() {
        let ours = sent(b"hello");
        let answer = |hello: Option<String>, status: u16| {
            let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0).checking_end(ours.clone());
            assert!(d.checks_end());
            d.poll(0.0);
            let h: Vec<(&str, &str)> = hello
                .as_deref()
                .map(|h| vec![(PEER_HELLO, h)])
                .unwrap_or_default();
            d.on_answer(status, &h, "", 10.0);
            let DeliveryStep::Done(r) = d.poll(10.0) else {
                panic!("the delivery ends with the answer")
            };
            r
        };
        // the producer states the end the consumer saw
        assert!(answer(Some(end_items(&ours)), 200).is_ok());
        // ... after its resume offer (a receipt that met a resume or stall call)
        let offer = format!("httpipe-resume=1; from=0; to=5; {}", end_items(&ours));
        assert!(answer(Some(offer), 200).is_ok());
        // ... in the failure notice of a producer aborted after its last byte went out: every
        // byte arrived (it said the data was incomplete before)
        let stopped = format!("httpipe-resume=1; failed=ABORTED; {}", end_items(&ours));
        assert!(answer(Some(stopped), 200).is_ok());
        let short = format!(
            "httpipe-resume=1; failed=ABORTED; {}",
            end_items(&sent(b"hello!"))
        );
        let e = answer(Some(short), 200).unwrap_err();
        assert!(
            e.message.contains("sent 6 bytes and 5 arrived"),
            "{}",
            e.message
        );
        // another end, a failure notice, no end, no producer: never a clean end
        for (hello, status, says) in [
            (
                Some(end_items(&sent(b"hello world"))),
                200,
                "sent 11 bytes and 5 arrived",
            ),
            (
                Some(end_items(&sent(b"hellO"))),
                200,
                "not the ones the sender sent",
            ),
            (
                Some("httpipe-resume=1; failed=ABORTED".into()),
                200,
                "failed with ABORTED",
            ),
            (
                Some("httpipe-resume=1; from=0; to=5".into()),
                200,
                "did not state its end",
            ),
            (None, 200, "did not state its end"),
            (None, 408, "did not come for it within 30 s"),
            (None, 403, "did not confirm that end"),
        ] {
            let e = answer(hello.clone(), status).unwrap_err();
            assert_eq!(e.code, ErrorCode::Truncated, "{hello:?} {status}");
            assert!(e.message.contains(says), "{hello:?}: {}", e.message);
        }
    }

    #[test]
    fn an_end_that_cant_be_checked_is_truncated_and_a_negative_receipt_checks_nothing() {
        // the relay out of reach past the call's time
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0).checking_end(sent(b"x"));
        d.poll(0.0);
        d.on_failure(down(), Outcome::Ok.send_timeout_s() * 1000.0 - 500.0);
        let DeliveryStep::Done(Err(e)) = d.poll(1e9) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(e.cause().is_some(), "the network failure stays its cause");
        // a cancelled receipt: no check, its answer as before
        let mut d = ReceiptDelivery::new(req(), Outcome::Cancelled, 0.0).checking_end(sent(b"x"));
        assert!(!d.checks_end());
        d.poll(0.0);
        d.on_answer(200, &NoHeaders, "", 1.0);
        assert!(matches!(d.poll(1.0), DeliveryStep::Done(Ok(()))));
        // a producer that promised nothing: an ok receipt's answer says nothing about the end
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        assert!(!d.checks_end());
        d.poll(0.0);
        d.on_answer(408, &NoHeaders, "", 1.0);
        let DeliveryStep::Done(Err(e)) = d.poll(1.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Unconfirmed);
    }
}
