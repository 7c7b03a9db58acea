//! Delivering a consumer's receipt (`PROTOCOL.md` §12.2) as a machine with its own timer: the
//! receipt call, made again after [`RESUME_RETRY_MS`] while the relay can't be reached or
//! answers `503` (a relay that is restarting, §12.3) — an `ok` receipt only, and only within
//! the call's time ([`Outcome::send_timeout_s`]). Drivers (wasm, native) make the calls and
//! sleep until the time it names.

use super::error::{classify_response, Error, ErrorCode, Failure, StopReason};
use super::receipt::Outcome;
use super::request::Request;
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
    /// The end: `Ok` when the producer took the receipt; `UNCONFIRMED` when it didn't come
    /// for it (gone?), else the relay's refusal or the network failure.
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
}

impl ReceiptDelivery {
    /// The receipt call `req` for `outcome`, first made at `now_ms`.
    pub fn new(req: Request, outcome: Outcome, now_ms: f64) -> Self {
        ReceiptDelivery {
            req,
            outcome,
            until_ms: now_ms + outcome.send_timeout_s() * 1000.0,
            state: State::Due,
        }
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

    /// The call's answer.
    pub fn on_answer(&mut self, status: u16, body: &str, now_ms: f64) {
        self.state = State::Done(match status {
            200 => Ok(()),
            408 => Err(Error::new(
                ErrorCode::Unconfirmed,
                format!("{WHAT}: the sender did not come for it (gone?)"),
            )),
            503 => return self.again(classify_response(503, body, WHAT), now_ms),
            _ => Err(classify_response(status, body, WHAT)),
        });
    }

    /// The call failed below HTTP (a stop ends the delivery; anything else is tried again).
    pub fn on_failure(&mut self, f: Failure, now_ms: f64) {
        let stopped = f.stop != StopReason::None;
        let e = f.into_error(ErrorCode::Network, WHAT);
        if stopped {
            self.state = State::Done(Err(e));
        } else {
            self.again(e, now_ms);
        }
    }

    fn again(&mut self, e: Error, now_ms: f64) {
        let next = now_ms + RESUME_RETRY_MS;
        self.state = if self.outcome.repeats() && next <= self.until_ms {
            State::Sleeping(next)
        } else {
            State::Done(Err(e))
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        d.on_answer(503, "restarting", 1200.0);
        assert!(matches!(d.poll(2200.0), DeliveryStep::Call(_)));
        d.on_answer(200, "", 2300.0);
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
        d.on_answer(408, "", 10.0);
        let DeliveryStep::Done(Err(e)) = d.poll(10.0) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Unconfirmed);
        let mut d = ReceiptDelivery::new(req(), Outcome::Ok, 0.0);
        d.poll(0.0);
        d.on_failure(Failure::stopped(StopReason::User, None), 10.0);
        assert!(matches!(d.poll(2000.0), DeliveryStep::Done(Err(_))));
    }
}
