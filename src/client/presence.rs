//! Presence (`PROTOCOL.md` §12.5): a producer keeps one call open on its transfer's presence
//! channel from the rendezvous to its verdict ([`PresenceKeeper`]); a consumer whose `GET` has
//! had no response head for a while checks that call is there ([`PresenceCheck`]), and after
//! [`PRESENCE_MISSES`] checks in a row that find nobody it knows the producer vanished before
//! its first byte. Both are machines with their own clock: drivers make the calls they name,
//! beside the upload or the `GET`, and sleep until the time they name.

use super::error::{Error, ErrorCode, Failure};
use super::receipt::channel_request;
use super::request::Request;
use super::urls::{ConnectMode, RelayBase};
use crate::client::options::number_text;
use crate::protocol::hello::{
    presence_key, PRESENCE_CALL_S, PRESENCE_HELLO, PRESENCE_MISSES, RESUME_RETRY_MS, STALL_AFTER_S,
    STALL_CALL_S,
};

/// What a presence loop does next.
#[derive(Debug)]
pub enum PresenceStep {
    /// Make this call; hand its status to `on_answer`, or its failure to `on_failure`.
    Call(Request),
    /// Poll again at this time (milliseconds on the driver's clock).
    WakeAt(f64),
    /// (consumer) The producer vanished: stop the `GET` and fail with this error.
    Vanished(Error),
}

/// Where the transfer's presence channel is: the stream path on a relay, its token, and the
/// transfer id (whose presence key opens the channel, §5.1).
#[derive(Debug, Clone)]
pub struct PresenceChannel {
    pub relay: RelayBase,
    pub path: String,
    pub token: Option<String>,
    pub transfer: String,
}

impl PresenceChannel {
    fn call(&self, mode: ConnectMode, timeout_s: f64) -> Result<Request, Error> {
        channel_request(
            &self.relay,
            &self.path,
            &presence_key(&self.transfer),
            mode,
            timeout_s,
            self.token.as_deref(),
            Some(PRESENCE_HELLO.to_string()),
        )
    }
}

/// Milliseconds before a presence call is made again after a refusal.
const REFUSED_PAUSE_MS: f64 = STALL_AFTER_S * 1000.0;

/// The producer's presence call, kept open until the driver drops the keeper at its verdict.
#[derive(Debug)]
pub struct PresenceKeeper {
    req: Request,
    /// `None`: call now; `Some(t)`: after a failure, call again at `t`.
    again_at: Option<f64>,
}

impl PresenceKeeper {
    /// The keeper of `channel`'s presence.
    ///
    /// # Errors
    ///
    /// What building the call meets (a bad path).
    pub fn new(channel: &PresenceChannel) -> Result<Self, Error> {
        Ok(PresenceKeeper {
            req: channel.call(ConnectMode::AwaitReader, PRESENCE_CALL_S)?,
            again_at: None,
        })
    }

    /// The call to make now, or when to ask again.
    pub fn poll(&mut self, now_ms: f64) -> PresenceStep {
        match self.again_at {
            Some(t) if now_ms < t => PresenceStep::WakeAt(t),
            _ => {
                self.again_at = None;
                PresenceStep::Call(self.req.clone())
            }
        }
    }

    /// The call was answered: after a `200` (a check met it) or a `408` (its time ran out) the
    /// next one at once; after a refusal (a relay that is busy, restarting or refuses the
    /// token) again in [`REFUSED_PAUSE_MS`], never in a loop.
    pub fn on_answer(&mut self, status: u16, now_ms: f64) {
        self.again_at = match status {
            200 | 408 => None,
            _ => Some(now_ms + REFUSED_PAUSE_MS),
        };
    }

    /// The call failed below HTTP: again after [`RESUME_RETRY_MS`] (the relay may be
    /// restarting).
    pub fn on_failure(&mut self, _f: Failure, now_ms: f64) {
        self.again_at = Some(now_ms + RESUME_RETRY_MS);
    }
}

/// The consumer's checks while its `GET` waits for the response head.
#[derive(Debug)]
pub struct PresenceCheck {
    req: Request,
    /// When the next check is due (ms).
    next_ms: f64,
    /// Checks in a row that found nobody.
    misses: u32,
    path: String,
}

/// Milliseconds between a check's answer and the next (and before the first).
const CHECK_EVERY_MS: f64 = STALL_AFTER_S * 1000.0;

impl PresenceCheck {
    /// Checks on `channel` for a `GET` that began waiting at `since_ms`.
    ///
    /// # Errors
    ///
    /// What building the call meets (a bad path).
    pub fn new(channel: &PresenceChannel, since_ms: f64) -> Result<Self, Error> {
        Ok(PresenceCheck {
            req: channel.call(ConnectMode::AwaitWriter, STALL_CALL_S)?,
            next_ms: since_ms + CHECK_EVERY_MS,
            misses: 0,
            path: channel.path.clone(),
        })
    }

    /// The check to make now, when to look again, or the verdict that the producer vanished.
    pub fn poll(&mut self, now_ms: f64) -> PresenceStep {
        if self.misses >= PRESENCE_MISSES {
            return PresenceStep::Vanished(Error::new(
                ErrorCode::Truncated,
                format!(
                    "receiving {}: the sender went away before sending anything (it met this \
                     receiver, then kept no presence for {PRESENCE_MISSES} checks \
                     {} s apart, PROTOCOL.md §12.5)",
                    self.path,
                    number_text(STALL_AFTER_S)
                ),
            ));
        }
        if now_ms < self.next_ms {
            return PresenceStep::WakeAt(self.next_ms);
        }
        // until the answer: no second check
        self.next_ms = f64::INFINITY;
        PresenceStep::Call(self.req.clone())
    }

    /// The check's status: `200` the producer's call was there; `408` nobody (a miss); any
    /// other counts as neither.
    pub fn on_answer(&mut self, status: u16, now_ms: f64) {
        match status {
            200 => self.misses = 0,
            408 => self.misses += 1,
            _ => {}
        }
        self.next_ms = now_ms + CHECK_EVERY_MS;
    }

    /// The check failed below HTTP: counts as neither; again later.
    pub fn on_failure(&mut self, _f: Failure, now_ms: f64) {
        self.next_ms = now_ms + CHECK_EVERY_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::headers::HELLO;

    fn channel() -> PresenceChannel {
        PresenceChannel {
            relay: RelayBase::parse("http://h:1").unwrap(),
            path: "/p".into(),
            token: None,
            transfer: "TID".into(),
        }
    }

    fn down() -> Failure {
        Failure::network(std::io::Error::other("connection refused"))
    }

    #[test]
    fn the_keeper_calls_again_at_once_after_a_failure_a_second_later_and_after_a_refusal_10_s() {
        let mut k = PresenceKeeper::new(&channel()).unwrap();
        let PresenceStep::Call(req) = k.poll(0.0) else {
            panic!()
        };
        let id = crate::protocol::channel::channel_id("TID-presence");
        assert_eq!(
            req.url,
            format!("http://h:1/connect/v0/p?mode=await-reader&channel={id}&timeout=25")
        );
        assert!(req.headers.contains(&(HELLO, PRESENCE_HELLO.into())));
        k.on_answer(408, 5.0);
        assert!(matches!(k.poll(10.0), PresenceStep::Call(_)));
        k.on_answer(200, 15.0);
        assert!(matches!(k.poll(16.0), PresenceStep::Call(_)));
        // a busy relay is never called in a loop
        k.on_answer(503, 16.0);
        assert!(matches!(k.poll(20.0), PresenceStep::WakeAt(t) if t == 10_016.0));
        assert!(matches!(k.poll(10_016.0), PresenceStep::Call(_)));
        k.on_failure(down(), 20.0);
        assert!(matches!(k.poll(500.0), PresenceStep::WakeAt(t) if t == 1020.0));
        assert!(matches!(k.poll(1020.0), PresenceStep::Call(_)));
    }

    /// §12.5 on a fake clock: the first check after 10 s of waiting; a 200 resets the count;
    /// two 408s in a row are the verdict; failures and other statuses count as neither.
    #[test]
    fn the_check_finds_a_producer_present_or_vanished() {
        let mut c = PresenceCheck::new(&channel(), 1_000.0).unwrap();
        assert!(matches!(c.poll(1_000.0), PresenceStep::WakeAt(t) if t == 11_000.0));
        let PresenceStep::Call(req) = c.poll(11_000.0) else {
            panic!("the first check")
        };
        assert!(req.url.contains("mode=await-writer") && req.url.ends_with("&timeout=2"));
        assert!(matches!(c.poll(11_500.0), PresenceStep::WakeAt(t) if t.is_infinite()));
        c.on_answer(408, 13_000.0);
        assert!(matches!(c.poll(13_000.0), PresenceStep::WakeAt(t) if t == 23_000.0));
        assert!(matches!(c.poll(23_000.0), PresenceStep::Call(_)));
        c.on_answer(200, 23_100.0); // present: the count starts over
        assert!(matches!(c.poll(33_100.0), PresenceStep::Call(_)));
        c.on_answer(408, 35_000.0);
        assert!(matches!(c.poll(45_000.0), PresenceStep::Call(_)));
        c.on_failure(down(), 45_500.0);
        assert!(matches!(c.poll(55_500.0), PresenceStep::Call(_)));
        c.on_answer(503, 55_600.0);
        assert!(matches!(c.poll(65_600.0), PresenceStep::Call(_)));
        c.on_answer(408, 67_600.0);
        let PresenceStep::Vanished(e) = c.poll(67_600.0) else {
            panic!("two misses in a row")
        };
        assert_eq!(e.code, ErrorCode::Truncated);
        assert!(e.message.contains("went away before sending anything"));
    }
}
