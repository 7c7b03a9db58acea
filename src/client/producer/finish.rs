//! The producer's verdict after the relay's success (`PROTOCOL.md` §12.2): the receipt wait,
//! the producer's end it states, and the check of the consumer's receipt.

use super::*;
use crate::client::options::number_text;

/// No receipt came (§12.2 verdicts): `UNCONFIRMED`, with the network failure if there was one.
pub(super) fn no_receipt(timeout_s: f64, failure: Option<Failure>) -> Error {
    let msg = "the relay delivered every byte, but the receiver sent no receipt";
    match failure {
        None => Error::new(
            ErrorCode::Unconfirmed,
            format!(
                "{msg} within {} s (PROTOCOL.md §12.2; raise receiptTimeout, or ask the receiving side)",
                number_text(timeout_s)
            ),
        ),
        Some(f) => f.into_error(
            ErrorCode::Unconfirmed,
            &format!("{msg}: waiting for it failed"),
        ),
    }
}

impl<T: ByteChunk> Producer<T> {
    /// The call that waits for the receipt on the transfer's channel (§12.2): it offers the
    /// resume to a consumer whose side broke after the relay's success (§12.3), and states the
    /// producer's end (§12.2).
    pub(super) fn receipt_wait_call(&self) -> Result<Request, Error> {
        let c = &self.cfg;
        let Some(rc) = &c.receipt else {
            return Err(misuse("a receipt wait without a transfer"));
        };
        let offer = self.resumes().then(|| self.offer().text());
        let hello = match (offer, self.end_items()) {
            (Some(o), Some(e)) => Some(format!("{o}; {e}")),
            (o, e) => o.or(e),
        };
        receipt::channel_request(
            &c.relay,
            &c.path,
            &rc.transfer,
            ConnectMode::AwaitReader,
            rc.timeout_s,
            c.token.as_deref(),
            hello,
        )
    }

    /// The source ended, and `sent` is what the producer sent, as a receipt is checked against
    /// (§12.2): from now on its calls on the transfer's channel state its end, when it
    /// promised to ([`Producer::states_end`]). The first call counts.
    pub fn attest(&mut self, sent: Commitment) {
        if self.sent.is_none() {
            self.sent = Some(sent);
        }
    }

    /// True once the rendezvous said the consumer sends receipts and this producer waits for
    /// one: its hello said `attest` then, and it states its end on the channel (§12.2).
    pub fn states_end(&self) -> bool {
        self.expects_receipt()
    }

    /// True when the driver should tell [`Producer::attest`] what was sent once its source
    /// ended: the producer states its end and does not know it yet.
    pub fn needs_end(&self) -> bool {
        self.states_end() && self.sent.is_none()
    }

    /// The items that state the producer's end (§12.2), once it knows it.
    pub(super) fn end_items(&self) -> Option<String> {
        self.sent
            .as_ref()
            .filter(|_| self.states_end())
            .map(receipt::end_items)
    }

    /// The producer's verdict on a receipt (§12.2): [`receipt::verify`], and an encrypted
    /// transfer is delivered only on an authenticated receipt unless the caller accepts one
    /// for the ciphertext (a consumer without keys — anyone who knows the path could be it).
    pub(super) fn verify_receipt(
        &self,
        text: &str,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
    ) -> Result<ReceiptReport, Error> {
        let transfer = self.transfer_id().unwrap_or_default();
        let r = receipt::verify(text, transfer, ours, key)?;
        let ciphertext_ok = self.cfg.receipt.as_ref().is_some_and(|rc| rc.ciphertext);
        if self.cfg.encrypted && !r.authenticated && !ciphertext_ok {
            return Err(Error::new(
                ErrorCode::Unconfirmed,
                format!(
                    "the receiver holds no key: it stored the {} bytes of ciphertext without \
                     decrypting them, and its receipt (PROTOCOL.md §12.2) can't show the \
                     recipient can read them; the delivery is not confirmed",
                    r.bytes
                ),
            ));
        }
        Ok(r)
    }

    /// The answer to a [`Step::Receipt`] call: `ours` is what was sent (plaintext bytes and
    /// their digest, or the cipher's tag digest), `key` the receipt key of an encrypted
    /// transfer (§12.2).
    pub fn on_receipt(
        &mut self,
        status: u16,
        headers: &dyn Headers,
        body: &str,
        ours: &Commitment,
        key: Option<&[u8; 32]>,
    ) {
        let text = headers.get(PEER_HELLO);
        if status == 200 {
            if let Some(ResumeHello::Ask { offset }) = text.as_deref().and_then(ResumeHello::parse)
            {
                return self.on_resume_ask(offset);
            }
        }
        if let State::Resuming {
            report,
            error,
            relay_answered,
            ..
        } = &mut self.state
        {
            *relay_answered |= relay_reached(status);
            let report = report.take();
            let error = error.clone();
            return self.on_resume_answer(status, text, body, ours, key, report, error);
        }
        let State::AwaitReceipt { report, .. } = &mut self.state else {
            return self.fail_final(misuse("a receipt nobody asked for"));
        };
        let mut report = report.clone();
        let Some(timeout) = self.cfg.receipt.as_ref().map(|rc| rc.timeout_s) else {
            return self.fail(misuse("a receipt without a transfer"));
        };
        let outcome = match (status, text) {
            (200, Some(text)) => self.verify_receipt(&text, ours, key).map(|r| {
                report.receipt = Some(r);
                report
            }),
            (200, None) => Err(Error::new(
                ErrorCode::Unconfirmed,
                "the receipt call was answered without a receipt (is the relay an httpipe relay, PROTOCOL.md §5.1?); the delivery is not confirmed",
            )),
            (408, _) => Err(no_receipt(timeout, None)),
            _ => Err(classify_response(status, body, "waiting for the receipt")),
        };
        self.state = State::Finished(Some(outcome));
    }

    /// True once the relay said it delivered every byte: from then on no failure notice is
    /// due ([`Producer::failure_notice`] is `None`), the receipt call offers the resume.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn delivered(&self) -> bool {
        self.delivered
    }

    /// True once the rendezvous said the consumer sends receipts and this producer waits for
    /// one (§12.1): the adapter then commits to what it sends ([`receipt::Committer`]).
    pub fn expects_receipt(&self) -> bool {
        self.peer_sends_receipts && self.cfg.receipt.as_ref().is_some_and(|r| r.wait)
    }

    /// What the consumer's receipt will commit to (§12.2), once [`expects_receipt`] holds:
    /// the plaintext (an encrypted transfer to a consumer that decrypts: the count and the
    /// cipher's tag digest, with a MAC), else the bytes on the wire (their count and hash).
    ///
    /// [`expects_receipt`]: Self::expects_receipt
    pub fn receipt_commits_to_plaintext(&self) -> bool {
        self.cfg.encrypted && self.peer_decrypts
    }

    /// Whether the driver hashes the bytes it puts on the wire (§12.2): a receipt is
    /// expected and commits to them.
    pub fn hashes_wire(&self) -> bool {
        super::super::ledger::producer_hashes_wire(
            self.expects_receipt(),
            self.receipt_commits_to_plaintext(),
        )
    }
}
