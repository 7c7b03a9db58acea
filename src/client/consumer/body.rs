//! What a consumer's response body means (`PROTOCOL.md` §3.3, §11.3): a cut is `TRUNCATED`,
//! a short body too, and a keyless consumer refuses ciphertext (§11.3 step 5).

use super::resumer::{ResumeStep, Resumer};
use crate::client::error::{Error, ErrorCode, Failure, StopReason};
use crate::client::request::Headers;
use crate::client::stall::StallStep;
use crate::crypto::{sniff, Decryptor, Sniff, SNIFF_BYTES};

/// Watches the consumer's response body: a transport failure is `TRUNCATED` (the relay
/// aborts the consumer's response when the producer's stream breaks, §3.3) unless the
/// operation was stopped; a body shorter than its `Content-Length` is `TRUNCATED` too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCheck {
    what: String,
    length: Option<u64>,
    seen: u64,
    /// The stream's first bytes while it is not known whether they begin ciphertext (a
    /// consumer without keys, §11.3 step 5); `None` once known, or when nobody asks.
    start: Option<Vec<u8>>,
    /// The producer replays bytes, not chunks (it did not encrypt, §12.1 `plain`): a consumer
    /// resumes at the wire bytes it holds even when it decrypts them (§12.3).
    resume_at_bytes: bool,
}

impl BodyCheck {
    /// The check of a body (`what` it is, for messages) of `length` bytes when known;
    /// `sniff`: look at its start for ciphertext (a keyless consumer, §11.3 step 5).
    pub(super) fn new(what: String, length: Option<u64>, sniff: bool) -> Self {
        BodyCheck {
            what,
            length,
            seen: 0,
            start: sniff.then(Vec::new),
            resume_at_bytes: false,
        }
    }

    /// The same, for a producer that replays bytes, not chunks (`plain`, §12.1): a decrypting
    /// consumer resumes at the wire bytes it holds, so the bytes it received are received
    /// once (a receipt that commits to them counts each once).
    pub(super) fn resuming_at_bytes(mut self, yes: bool) -> Self {
        self.resume_at_bytes = yes;
        self
    }

    /// True while [`BodyCheck::check_start`] wants the next chunk's first bytes.
    pub fn checks_start(&self) -> bool {
        self.start.is_some()
    }

    /// Before a chunk is handed out (plain bytes, a consumer without keys): `head` is its
    /// first bytes (at most [`SNIFF_BYTES`]). An age or age-rt start fails `WRONG_KEY`
    /// before the chunk that completes it is handed out (§11.3 step 5).
    pub fn check_start(&mut self, head: &[u8]) -> Result<(), Error> {
        let Some(start) = self.start.as_mut() else {
            return Ok(());
        };
        let room = SNIFF_BYTES.saturating_sub(start.len());
        start.extend_from_slice(&head[..head.len().min(room)]);
        match sniff(start) {
            Sniff::Undecided => Ok(()),
            Sniff::Plain => {
                self.start = None;
                Ok(())
            }
            Sniff::Encrypted(format) => Err(Error::new(
                ErrorCode::WrongKey,
                format!(
                    "{}: the stream is encrypted ({format}) and no passphrase or identities were \
                     given (PROTOCOL.md §11.3); receive with the sender's passphrase or your \
                     identity, or ask for the ciphertext to store it as it is",
                    self.what
                ),
            )),
        }
    }

    /// `n` more bytes arrived.
    pub fn on_bytes(&mut self, n: u64) {
        self.seen += n;
    }

    /// Reading the body failed.
    pub fn on_failure(&self, f: Failure) -> Error {
        if f.coded.is_some() || f.stop != StopReason::None {
            return f.into_error(ErrorCode::Truncated, &self.what);
        }
        let cause = f.cause;
        let said = cause
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        Error::new(
            ErrorCode::Truncated,
            format!(
                "{}: the stream broke off before its end (the producer stopped or the connection was cut){said}",
                self.what
            ),
        )
        .with_shared_source(cause)
    }

    /// The body ended cleanly.
    pub fn on_end(&self) -> Result<(), Error> {
        match self.length {
            Some(n) if self.seen < n => Err(Error::new(
                ErrorCode::Truncated,
                format!("{}: got {} of {n} bytes", self.what, self.seen),
            )),
            _ => Ok(()),
        }
    }
}

/// The consumer's response body over its stream's life, resumes included (§3.3, §12.3,
/// §12.4): the check of the body being read, the wire bytes held, and when the read under
/// way began waiting for a byte. The driver feeds it chunks, ends, breaks and its clock, and
/// performs the resume steps and stall calls it gets back (with the stream's [`Resumer`],
/// which the driver holds: a resume's calls outlive a read).
pub(crate) struct ConsumerBody {
    check: BodyCheck,
    /// Wire bytes held (the resume offset of a consumer that doesn't decrypt, or whose
    /// producer replays bytes).
    received: u64,
    /// The stream's producer replays bytes, not chunks ([`BodyCheck::resuming_at_bytes`]).
    resume_at_bytes: bool,
    /// When the read under way began waiting for a byte (ms on the driver's clock).
    waiting_since: Option<f64>,
}

/// Where a consumer resumes from (§12.3): a decrypting one at its decryptor's resume point
/// (dropping what it holds beyond, `take`; else only asking), a plain one at the wire bytes
/// it holds. `None`: it can't say (armored input; a decryptor mid-record when asking).
fn resume_offset(received: u64, dec: Option<&mut Decryptor>, take: bool) -> Option<u64> {
    match dec {
        Some(d) if take => d.resume_point(),
        Some(d) => d.resume_offset(),
        None => Some(received),
    }
}

impl ConsumerBody {
    /// The body the stream starts with.
    pub fn new(check: BodyCheck) -> Self {
        ConsumerBody {
            resume_at_bytes: check.resume_at_bytes,
            check,
            received: 0,
            waiting_since: None,
        }
    }

    /// A chunk of `n` bytes arrived; `head(k)` gives its first `k` bytes, asked for only while
    /// a keyless consumer looks at the stream's start (§11.3 step 5: `WRONG_KEY` before the
    /// chunk that completes an age header is handed out).
    pub fn on_chunk_with(
        &mut self,
        n: usize,
        head: impl FnOnce(usize) -> Vec<u8>,
    ) -> Result<(), Error> {
        self.waiting_since = None;
        if self.check.checks_start() && n > 0 {
            self.check.check_start(&head(n.min(SNIFF_BYTES)))?;
        }
        self.check.on_bytes(n as u64);
        self.received += n as u64;
        Ok(())
    }

    /// [`ConsumerBody::on_chunk_with`] for a chunk in memory.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn on_chunk(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.on_chunk_with(chunk.len(), |k| chunk[..k].to_vec())
    }

    /// The body ended cleanly: `TRUNCATED` when it is shorter than it said.
    pub fn on_end(&mut self) -> Result<(), Error> {
        self.waiting_since = None;
        self.check.on_end()
    }

    /// The body broke with `f`: with a `resumer`, the step that resumes from the offset this
    /// consumer holds (§12.3; `dec`: its decryptor, which drops what it holds beyond it);
    /// else, or when it can't resume, [`ResumeStep::Failed`] with the body's error.
    pub fn on_break(
        &mut self,
        f: Failure,
        resumer: Option<&mut Resumer>,
        dec: Option<&mut Decryptor>,
        now_ms: f64,
    ) -> ResumeStep {
        self.waiting_since = None;
        let Some(resumer) = resumer else {
            return ResumeStep::Failed(self.check.on_failure(f));
        };
        let offset = resume_offset(self.received, dec.filter(|_| !self.resume_at_bytes), true);
        resumer.on_break(f, &self.check, offset, now_ms)
    }

    /// The read under way has nothing at `now_ms`: the stall watch's next step (§12.4) —
    /// sleep until a time (or the next byte), or make the stall call and take nothing from
    /// the body until its answer goes to [`ConsumerBody::on_stall_answer`].
    pub fn poll_stall(
        &mut self,
        resumer: &mut Resumer,
        dec: Option<&mut Decryptor>,
        now_ms: f64,
    ) -> StallStep {
        let since = *self.waiting_since.get_or_insert(now_ms);
        let offset = resume_offset(self.received, dec.filter(|_| !self.resume_at_bytes), false);
        resumer.poll_stall(now_ms, since, offset)
    }

    /// The stall call's answer (`None`: it failed below HTTP): `None` back, read on from the
    /// same body; else the connection stalled: stop reading it, and resume from the step as
    /// after a break (the decryptor drops what it holds beyond the offset asked for).
    pub fn on_stall_answer(
        &mut self,
        resumer: &mut Resumer,
        answer: Option<(u16, &dyn Headers)>,
        dec: Option<&mut Decryptor>,
        now_ms: f64,
    ) -> Option<ResumeStep> {
        let step = resumer.on_stall_answer(answer, now_ms)?;
        self.waiting_since = None;
        resume_offset(self.received, dec.filter(|_| !self.resume_at_bytes), true);
        Some(step)
    }

    /// True while the read under way waits (since a [`ConsumerBody::poll_stall`]).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn waiting(&self) -> bool {
        self.waiting_since.is_some()
    }

    /// A resume ended in [`ResumeStep::Resumed`]: the new body's check and wire offset.
    pub fn on_resumed(&mut self, check: BodyCheck, at: u64) {
        self.check = check;
        self.received = at;
        self.waiting_since = None;
    }

    /// Wire bytes received so far, over every resume.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))] // the native driver's
    pub fn received(&self) -> u64 {
        self.received
    }
}
