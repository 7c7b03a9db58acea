//! The producer's last words after a failure (`PROTOCOL.md` §3.10, §4, §12.3): the failure
//! notice to a consumer that may be resuming, the withdrawal for one that waits on the data
//! URL, or the `DELETE` that abandons a segmented upload.

use super::*;
use crate::client::request::LastWords;
use crate::protocol::hello::FAILURE_NOTICE_WAIT_MS;

impl<T: ByteChunk> Producer<T> {
    /// When the transfer failed with `e` for another reason than the break (its source, its
    /// application) while the consumer may be resuming: the call that tells it so (§12.3),
    /// for the adapter to make in the background (any answer will do).
    ///
    /// Also without resume when this producer promised its end (§12.2) and failed for its own
    /// reason ([`Producer::failed_locally`]): a consumer whose body ended cleanly anyway (a
    /// runtime that ends a stopped upload cleanly) meets it with its receipt call.
    pub fn failure_notice(&self, e: &Error) -> Option<Request> {
        // After the relay's success the receipt call already offers the resume, and a
        // consumer that had not come by the end of it is not resuming.
        let told = self.resumes() || (self.states_end() && self.failed_locally(e));
        if !told
            || self.stream_url.is_none()
            || self.delivered
            || e.code == ErrorCode::PeerDisconnected
        {
            return None;
        }
        let hello = ResumeHello::Failed {
            code: e.code.as_str().to_string(),
        };
        // a source that had ended: its end is known, and a consumer whose clean end is that
        // one has every byte (§12.2), whatever stopped the producer after it
        let end = self.end_items();
        self.resume_plan()?
            .call_with_end(hello, end.as_deref(), FAILURE_NOTICE_TIMEOUT_S)
            .ok()
            .map(Request::into_lingering_last_word)
    }

    /// When the transfer failed with `e` because of its source or the caller's abort, after
    /// the rendezvous met a consumer and before the relay reported success: the withdrawal
    /// (§3.10, §11.2 step 6) that tells that consumer, for the adapter to make (any answer
    /// will do; it waits for it at most [`WITHDRAW_WAIT_S`] s). The upload may never have
    /// reached the relay (Node's `fetch` sends no request head before the first body byte),
    /// and then nothing else ends the consumer's wait. Without a rendezvous no consumer was
    /// told of this producer: one waiting on the path waits for any producer, as it would have.
    /// A segmented upload that already opened (its part 0 accepted) is abandoned instead
    /// (§4 "Abandoning", with or without a rendezvous): its consumer is truncated at once
    /// rather than after the relay's gap timeout. After a resume meeting the consumer waits
    /// for the resumed upload on the transfer's data channel: the withdrawal goes there (a
    /// resumed upload that failed before it reached the relay, e.g. a source that changed).
    pub fn withdrawal(&self, e: &Error) -> Option<Request> {
        if !self.failed_locally(e) || self.relay_succeeded {
            return None;
        }
        // a segmented upload holds the path (the relay refuses a withdrawal then): abandon it
        if let Some(abandon) = &self.abandon {
            return Some(abandon.clone());
        }
        if !self.met || self.broke {
            return None;
        }
        // after a resume meeting: the resumed upload's URL, on the transfer's data channel
        let url = self.data_url.clone()?;
        let mut headers = auth_headers(self.cfg.token.as_deref());
        if self.resumes > 0 {
            headers.push(channel_key(&self.cfg.receipt.as_ref()?.transfer));
        }
        let request = Request {
            method: Method::Delete,
            timeout_ms: Some(WITHDRAW_WAIT_S * 1000.0),
            ..Request::get(url, headers)
        };
        Some(request.into_last_word())
    }

    /// The transfer failed with `e` for a reason of the producer's own: its source failed or
    /// its application aborted (§11.2 step 5).
    pub(super) fn failed_locally(&self, e: &Error) -> bool {
        self.source_failed || e.code == ErrorCode::Aborted
    }

    /// When the application aborted while this producer waited for the receipt, after the
    /// relay delivered every byte of its ended source: the call that still states its end
    /// (§12.2), since the consumer has every byte and its receipt call checks the end (any
    /// answer will do).
    pub(super) fn end_notice(&self, e: &Error) -> Option<Request> {
        let rc = self.cfg.receipt.as_ref()?;
        if !self.delivered || e.code != ErrorCode::Aborted {
            return None;
        }
        let c = &self.cfg;
        receipt::channel_request(
            &c.relay,
            &c.path,
            &rc.transfer,
            ConnectMode::AwaitReader,
            FAILURE_NOTICE_TIMEOUT_S,
            c.token.as_deref(),
            Some(self.end_items()?),
        )
        .ok()
        .map(Request::into_lingering_last_word)
    }

    /// Every call due when the transfer failed with `e`, for the adapter to make together:
    /// the failure notice ([`Producer::failure_notice`]) and the withdrawal
    /// ([`Producer::withdrawal`]), or the producer's end ([`Producer::end_notice`]); and how
    /// long the adapter waits for the first answer before it reports `e`. None once the
    /// consumer said it left before its stream started ([`Producer::on_peer_left`]).
    pub fn last_words(&self, e: &Error) -> LastWords {
        if self.peer_left {
            return LastWords {
                calls: Vec::new(),
                wait_ms: 0.0,
            };
        }
        let calls = self
            .failure_notice(e)
            .into_iter()
            .chain(self.withdrawal(e))
            .chain(self.end_notice(e))
            .collect();
        LastWords {
            calls,
            wait_ms: FAILURE_NOTICE_WAIT_MS,
        }
    }

    /// The last words of a producer that goes away midway without a verdict of its own (a
    /// page closed, a task dropped): [`Producer::last_words`] for an `ABORTED` that says `why`
    /// (the consumer's failure notice names it, §12.3).
    pub fn abandon_words(&self, why: &str) -> LastWords {
        self.last_words(&Error::new(ErrorCode::Aborted, why))
    }
}
