//! Presence (`PROTOCOL.md` §12.5): a producer keeps one call open on its transfer's presence
//! channel from the rendezvous to its verdict ([`PresenceKeeper`]); a consumer whose `GET` has
//! had no response head for a while checks that call is there ([`PresenceCheck`]), and after
//! [`PRESENCE_MISSES`] checks in a row that find nobody it knows the producer vanished before
//! its first byte. Both are machines with their own clock: drivers make the calls they name,
//! beside the upload or the `GET`, and sleep until the time they name. A consumer that gives
//! up before its stream started says so on the same channel ([`PresenceChannel::left_notice`]),
//! and the keeper's call that meets it ends the producer's transfer ([`PresenceStep::PeerLeft`]).

use super::error::{Error, ErrorCode, Failure};
use super::receipt::{channel_request, negative_verdict, receipt_text, Committer, Outcome};
use super::request::{Headers, Request};
use super::urls::{ConnectMode, RelayBase};
use crate::client::options::number_text;
use crate::protocol::headers::PEER_HELLO;
use crate::protocol::hello::{
    presence_key, NEGATIVE_RECEIPT_TIMEOUT_S, PRESENCE_CALL_S, PRESENCE_HELLO, PRESENCE_MISSES,
    RESUME_RETRY_MS, STALL_AFTER_S, STALL_CALL_S,
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
    /// (producer) The consumer gave up before its stream started (its negative receipt met
    /// the call): hand this to [`Producer::on_peer_left`], stop the transfer's requests and
    /// make no more calls.
    ///
    /// [`Producer::on_peer_left`]: super::producer::Producer::on_peer_left
    PeerLeft(Error),
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
    fn call(&self, mode: ConnectMode, timeout_s: f64, hello: String) -> Result<Request, Error> {
        channel_request(
            &self.relay,
            &self.path,
            &presence_key(&self.transfer),
            mode,
            timeout_s,
            self.token.as_deref(),
            Some(hello),
        )
        .map(Request::hung_on_timeout)
    }

    /// The consumer gave up (`outcome`: `cancelled`, or `failed` with its code) after its
    /// rendezvous and before its stream started: its negative receipt, nothing released, as
    /// the one call that tells the producer waiting on this channel (§12.5), a last word.
    ///
    /// # Errors
    ///
    /// What building the call meets (a bad path).
    pub fn left_notice(&self, outcome: Outcome) -> Result<Request, Error> {
        let nothing = Committer::default().commitment();
        let hello = receipt_text(&self.transfer, outcome, &nothing, None);
        let req = self.call(ConnectMode::AwaitWriter, NEGATIVE_RECEIPT_TIMEOUT_S, hello)?;
        Ok(req.into_lingering_last_word())
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
    /// The consumer said it gave up (its negative receipt met a call).
    left: Option<Error>,
}

/// The hello of a presence call (§12.5).
fn hello() -> String {
    PRESENCE_HELLO.to_string()
}

impl PresenceKeeper {
    /// The keeper of `channel`'s presence.
    ///
    /// # Errors
    ///
    /// What building the call meets (a bad path).
    pub fn new(channel: &PresenceChannel) -> Result<Self, Error> {
        Ok(PresenceKeeper {
            req: channel.call(ConnectMode::AwaitReader, PRESENCE_CALL_S, hello())?,
            again_at: None,
            left: None,
        })
    }

    /// The call to make now, or when to ask again.
    pub fn poll(&mut self, now_ms: f64) -> PresenceStep {
        if let Some(e) = self.left.take() {
            // the end of the keeper's calls: a poll after this one calls again
            return PresenceStep::PeerLeft(e);
        }
        match self.again_at {
            Some(t) if now_ms < t => PresenceStep::WakeAt(t),
            _ => {
                self.again_at = None;
                PresenceStep::Call(self.req.clone())
            }
        }
    }

    /// The call was answered (`headers`: the answer's, whose peer hello says who met it): a
    /// `200` that met the consumer's negative receipt is the end ([`PresenceStep::PeerLeft`]);
    /// after another `200` (a check met it) or a `408` (its time ran out) the next call at
    /// once; after a refusal (a relay that is busy, restarting or refuses the token) again in
    /// [`REFUSED_PAUSE_MS`], never in a loop.
    pub fn on_answer(&mut self, status: u16, headers: &dyn Headers, now_ms: f64) {
        if status == 200 {
            let peer = headers.get(PEER_HELLO).unwrap_or_default();
            self.left = negative_verdict(&peer, "before the stream started (PROTOCOL.md §12.5)");
        }
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
            req: channel.call(ConnectMode::AwaitWriter, STALL_CALL_S, hello())?,
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
    use crate::client::request::NoHeaders;
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
        // late: it hung, a network failure (§11), as `down()` below
        assert_eq!(req.on_timeout, crate::client::request::OnTimeout::Hung);
        let id = crate::protocol::channel::channel_id("TID-presence");
        assert_eq!(
            req.url,
            format!("http://h:1/connect/v0/p?mode=await-reader&channel={id}&timeout=25")
        );
        assert!(req.headers.contains(&(HELLO, PRESENCE_HELLO.into())));
        k.on_answer(408, &NoHeaders, 5.0);
        assert!(matches!(k.poll(10.0), PresenceStep::Call(_)));
        k.on_answer(200, &NoHeaders, 15.0);
        assert!(matches!(k.poll(16.0), PresenceStep::Call(_)));
        // a busy relay is never called in a loop
        k.on_answer(503, &NoHeaders, 16.0);
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

    /// §12.5, a consumer that gives up first: its word goes once to the presence channel as a
    /// negative receipt, lingering after it (§5.1), and the keeper's call that meets it ends
    /// the producer's transfer.
    #[test]
    fn a_consumer_that_left_before_its_stream_tells_the_keeper() {
        let notice = channel().left_notice(Outcome::Cancelled).unwrap();
        let id = crate::protocol::channel::channel_id("TID-presence");
        assert_eq!(
            notice.url,
            format!("http://h:1/connect/v0/p?mode=await-writer&channel={id}&timeout=15&linger=60")
        );
        assert!(notice.last_word);
        let hello = notice.headers.iter().find(|(k, _)| *k == HELLO).unwrap();
        assert!(hello
            .1
            .starts_with("httpipe-receipt=1; status=cancelled; bytes=0"));

        let mut k = PresenceKeeper::new(&channel()).unwrap();
        assert!(matches!(k.poll(0.0), PresenceStep::Call(_)));
        // a consumer's check meets the call: nothing changes
        let check: &[(&str, &str)] = &[(PEER_HELLO, PRESENCE_HELLO)];
        k.on_answer(200, &check, 1.0);
        assert!(matches!(k.poll(1.0), PresenceStep::Call(_)));
        // a refusal carrying a receipt is no meeting
        let cancelled: &[(&str, &str)] = &[(PEER_HELLO, hello.1.as_str())];
        k.on_answer(403, &cancelled, 2.0);
        assert!(matches!(k.poll(3.0), PresenceStep::WakeAt(_)));
        k.on_answer(200, &cancelled, 4.0);
        let PresenceStep::PeerLeft(e) = k.poll(4.0) else {
            panic!("the consumer's word ends the transfer")
        };
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(
            e.message.contains("cancelled before the stream started"),
            "{}",
            e.message
        );

        // a `failed` one carries the receiver's code as the peer code
        let failed = channel()
            .left_notice(Outcome::Failed(ErrorCode::Forbidden))
            .unwrap();
        let hello = failed.headers.iter().find(|(k, _)| *k == HELLO).unwrap();
        let answer: &[(&str, &str)] = &[(PEER_HELLO, hello.1.as_str())];
        k.on_answer(200, &answer, 5.0);
        let PresenceStep::PeerLeft(e) = k.poll(5.0) else {
            panic!("a failed consumer ends it too")
        };
        assert_eq!(e.peer(), Some(ErrorCode::Forbidden));
        assert!(
            e.message
                .contains("failed with FORBIDDEN before the stream"),
            "{}",
            e.message
        );
    }
}
