//! Resume after a break (`docs/PROTOCOL.md` §12.3) as plain data and pure functions: the
//! producer's replay window of wire bytes, the meeting's verdict, the calls on the transfer's
//! channel and the resumed data URL, and the resume time. The producer and consumer cores
//! decide with these; the adapters only make the calls and move the bytes.

use crate::client::options::number_text;
use std::collections::VecDeque;

use super::error::{source_changed, unavailable_now, Error, ErrorCode};
use super::parts::ByteChunk;
use super::receipt::channel_request;
use super::request::Request;
use super::urls::{percent_encode_component, ConnectMode, RelayBase};
use crate::protocol::channel;
use crate::protocol::hello::{ResumeHello, RESUME_CALL_MAX_S};
use crate::protocol::query;

/// The replay window's default size in bytes (§12.3, SDK option `resumeWindow`).
pub const DEFAULT_WINDOW: usize = 32 * 1024 * 1024;
/// The largest replay window in bytes (§12.3).
pub const MAX_WINDOW: usize = 1024 * 1024 * 1024;

/// Validates a `resumeWindow` option (bytes): 0 ..= [`MAX_WINDOW`]; `None` → the default.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub fn window_size(requested: Option<f64>) -> Result<usize, Error> {
    match requested {
        None => Ok(DEFAULT_WINDOW),
        Some(n) if n.fract() == 0.0 && n >= 0.0 && n <= MAX_WINDOW as f64 => Ok(n as usize),
        Some(n) => Err(Error::usage(format!(
            "resumeWindow must be a whole number of bytes from 0 to {MAX_WINDOW} (1 GiB), got {}",
            number_text(n)
        ))),
    }
}

/// The last bytes a producer handed to its upload (§12.3): chunks are kept (no copy) until
/// more than `cap` bytes follow them. Offsets are wire bytes from the start of the stream.
///
/// A [`seekable`](Self::seekable) window is for a source the adapter can reopen at any offset
/// (a `Blob`, bytes): it keeps no chunks but the first `head` wire bytes, and
/// [`replay_from`](Self::replay_from) says which wire bytes to take from the source again.
#[derive(Debug)]
pub struct ReplayWindow<T> {
    chunks: VecDeque<T>,
    /// Wire offset of the first kept byte.
    low: u64,
    /// Wire bytes handed to the upload so far.
    high: u64,
    cap: usize,
    /// Seekable: the wire bytes kept as sent (an encrypted stream's header); the rest is
    /// reopened.
    head: Option<u64>,
}

/// What a resumed upload sends before the rest of the source (§12.3), from
/// [`ReplayWindow::replay_from`].
#[derive(Debug, PartialEq)]
pub enum Replay<T> {
    /// These kept chunks.
    Kept(Vec<T>),
    /// `kept`, then wire bytes `from..to` taken again from the reopened source (the plaintext
    /// itself, or re-sealed: `crate::crypto::Encryptor::reseal`).
    Reopen { kept: Vec<T>, from: u64, to: u64 },
}

impl<T: ByteChunk + Clone> ReplayWindow<T> {
    /// A window keeping at least the last `cap` bytes (whole chunks, so up to one chunk more).
    pub fn new(cap: usize) -> Self {
        ReplayWindow {
            chunks: VecDeque::new(),
            low: 0,
            high: 0,
            cap,
            head: None,
        }
    }

    /// A window for a source that can be reopened at any offset: it keeps the first `head`
    /// wire bytes (0 for a plain transfer) and only the offsets of the rest, so every byte
    /// sent can be sent again whatever `resumeWindow` says.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn seekable(head: u64) -> Self {
        ReplayWindow {
            head: Some(head),
            ..Self::new(0)
        }
    }

    /// `chunk` was handed to the upload.
    pub fn push(&mut self, chunk: T) {
        let n = chunk.byte_len() as u64;
        if n == 0 {
            return;
        }
        let start = self.high;
        self.high += n;
        if let Some(head) = self.head {
            if start < head {
                let keep = head - start;
                self.chunks.push_back(if keep < n {
                    chunk.split_at(keep as usize).0
                } else {
                    chunk
                });
            }
            return;
        }
        self.chunks.push_back(chunk);
        // Drop a first chunk while the rest still covers `cap` bytes.
        while let Some(first) = self.chunks.front() {
            let first = first.byte_len() as u64;
            if self.high - self.low - first >= self.cap as u64 {
                self.chunks.pop_front();
                self.low += first;
            } else {
                break;
            }
        }
    }

    /// Whether it keeps the chunks pushed (a stream source's window of `cap > 0` bytes), not
    /// just the last one or a seekable source's head.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn keeps_chunks(&self) -> bool {
        self.head.is_none() && self.cap > 0
    }

    /// The first wire byte it can send again.
    pub fn low(&self) -> u64 {
        self.low
    }

    /// The wire bytes handed to the upload.
    pub fn high(&self) -> u64 {
        self.high
    }

    /// What the producer offers in its resume call.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn offer(&self) -> ResumeHello {
        ResumeHello::Offer {
            from: self.low,
            to: self.high,
        }
    }

    /// What to send again from wire offset `offset` on (kept chunks, the first one split;
    /// for a seekable window the bytes to reopen), or `None` when `offset` is outside
    /// `low..=high`.
    pub fn replay_from(&self, offset: u64) -> Option<Replay<T>> {
        if offset < self.low || offset > self.high {
            return None;
        }
        let mut at = self.low;
        let mut kept = Vec::new();
        for c in &self.chunks {
            let n = c.byte_len() as u64;
            if at + n <= offset {
                at += n;
                continue;
            }
            if at < offset {
                let (_, tail) = c.clone().split_at((offset - at) as usize);
                kept.push(tail);
            } else {
                kept.push(c.clone());
            }
            at += n;
        }
        let from = offset.max(self.head.unwrap_or(u64::MAX));
        Some(if from < self.high {
            Replay::Reopen {
                kept,
                from,
                to: self.high,
            }
        } else {
            Replay::Kept(kept)
        })
    }
}

/// The meeting's verdict (§12.3), the same on both sides: `Ok` when the consumer's `offset` is
/// within what the producer offers, else the error each side reports (`consumer`: the
/// consumer's).
pub fn agree(from: u64, to: u64, offset: u64, consumer: bool) -> Result<(), Error> {
    if (from..=to).contains(&offset) {
        return Ok(());
    }
    let why = if offset > to {
        format!("the receiver says it holds {offset} bytes, but only {to} were sent")
    } else {
        format!(
            "the receiver lost the connection at byte {offset}, but the sender's replay window holds only bytes {from}..{to} (PROTOCOL.md §12.3; a larger resumeWindow would have kept them)"
        )
    };
    Err(if consumer {
        Error::new(ErrorCode::Truncated, format!("cannot resume: {why}"))
    } else {
        Error::new(ErrorCode::PeerDisconnected, format!("cannot resume: {why}"))
    })
}

/// A plain source read again for a resume (§12.3, the package's `reopen(N, HIGH)`), held to
/// the length it gave the first time: more or fewer bytes fail `UNSUPPORTED`
/// ([`source_changed`]), as a shorter or longer source would shift every byte after it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub struct ReopenedLength {
    want: u64,
    got: u64,
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl ReopenedLength {
    /// The source must give `want` bytes.
    pub fn new(want: u64) -> Self {
        ReopenedLength { want, got: 0 }
    }

    /// A chunk of `len` bytes was read: `Err` once the source gave more than before (the
    /// chunk is not sent).
    pub fn on_chunk(&mut self, len: u64) -> Result<(), Error> {
        self.got = self.got.saturating_add(len);
        if self.got > self.want {
            return Err(self.differs("more"));
        }
        Ok(())
    }

    /// The source ended: `Err` when it gave fewer bytes than before.
    pub fn on_end(&self) -> Result<(), Error> {
        if self.got < self.want {
            return Err(self.differs(&self.got.to_string()));
        }
        Ok(())
    }

    fn differs(&self, got: &str) -> Error {
        source_changed(format!(
            "reopened, it gave {got} bytes where it gave {} before",
            self.want
        ))
    }
}

/// The data URL of a resumed transfer: `{data URL}?channel=ID` (a Data API channel, §5.1),
/// `ID` derived from the transfer id, which goes in the [`channel::key_header`] only.
pub fn channel_data_url(data_url: &str, transfer: &str) -> String {
    let sep = if data_url.contains('?') { '&' } else { '?' };
    format!(
        "{data_url}{sep}{}={}",
        query::CHANNEL,
        percent_encode_component(&channel::channel_id(transfer))
    )
}

/// How long a side keeps trying to meet the other after a break (§12.3), on the adapter's
/// clock (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResumeClock {
    deadline_ms: f64,
    /// The resume time in seconds (for messages).
    pub seconds: f64,
}

impl ResumeClock {
    /// Starts the resume time of `seconds` at `now_ms`.
    pub fn start(now_ms: f64, seconds: f64) -> Self {
        ResumeClock {
            deadline_ms: now_ms + seconds * 1000.0,
            seconds,
        }
    }

    /// The next call's `timeout` in whole seconds (at most [`RESUME_CALL_MAX_S`] and what is
    /// left, counting [`CALL_LATENESS_MS`] in), or `None` once less than a second is left.
    pub fn call_timeout(&self, now_ms: f64) -> Option<f64> {
        let left = ((self.deadline_ms - now_ms + CALL_LATENESS_MS) / 1000.0).floor();
        (left >= 1.0).then(|| left.min(RESUME_CALL_MAX_S))
    }

    /// The resume time ran out (§12.3): the break's `error`, saying for how long it tried
    /// and what it waited for: `peer_gone` ("the receiver did not come back") once a call
    /// reached the relay ([`relay_reached`]), else the relay itself.
    pub fn gave_up(&self, mut error: Error, relay_answered: bool, peer_gone: &str) -> Error {
        let waited = match relay_answered {
            true => peer_gone,
            false => "the relay could not be reached",
        };
        error.message = format!(
            "{} (and {waited} within {} s to resume, PROTOCOL.md §12.3)",
            error.message,
            number_text(self.seconds)
        );
        error
    }
}

/// A resume call answered with HTTP `status` reached the relay, unless a gateway answered
/// for it that it is unavailable (502–504).
pub fn relay_reached(status: u16) -> bool {
    !unavailable_now(status)
}

/// How late a call may start and still have the whole second it was due: the driver's
/// latency between the break (the clock's start) and its first call, or between one call's
/// answer and the next. Without it, a resume time of 1 s made no call at all (a producer's
/// first call comes a few ms after the break: 0.99 s left), and each call but the first came
/// a second short.
const CALL_LATENESS_MS: f64 = 250.0;

/// Where one transfer's resume calls go.
#[derive(Debug, Clone)]
pub struct ResumePlan {
    pub relay: RelayBase,
    pub path: String,
    pub token: Option<String>,
    /// The transfer id: the channel (§12.3).
    pub transfer: String,
}

impl ResumePlan {
    /// The resume call on the transfer's channel: the producer (`AwaitReader`) offers, the
    /// consumer (`AwaitWriter`) asks.
    pub fn call(&self, hello: ResumeHello, timeout_s: f64) -> Result<Request, Error> {
        self.call_with_end(hello, None, timeout_s)
    }

    /// The Data API channel a resumed transfer flows on (§12.3): the relay's own data URL of
    /// the path, never a Connect answer's (in a cluster that may name a node that died since,
    /// §13.4), with the transfer's channel.
    pub fn data_url(&self) -> Result<String, Error> {
        Ok(channel_data_url(
            &self.relay.data_url(&self.path)?,
            &self.transfer,
        ))
    }

    /// [`ResumePlan::call`] whose hello goes on with `end`, the producer's end items once its
    /// source ended (§12.2: `httpipe-end=1; bytes=N; digest=D`).
    pub fn call_with_end(
        &self,
        hello: ResumeHello,
        end: Option<&str>,
        timeout_s: f64,
    ) -> Result<Request, Error> {
        let text = match end {
            Some(end) => format!("{}; {end}", hello.text()),
            None => hello.text(),
        };
        let mode = match hello {
            ResumeHello::Offer { .. } | ResumeHello::Failed { .. } => ConnectMode::AwaitReader,
            ResumeHello::Ask { .. } => ConnectMode::AwaitWriter,
        };
        channel_request(
            &self.relay,
            &self.path,
            &self.transfer,
            mode,
            timeout_s,
            self.token.as_deref(),
            Some(text),
        )
        // the relay answers a call in time (`408` at its timeout): a late one hung (§12.3)
        .map(Request::hung_on_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(chunks: &[Vec<u8>]) -> Vec<u8> {
        chunks.concat()
    }

    #[test]
    fn a_reopened_source_gives_the_length_it_gave_before() {
        let mut exact = ReopenedLength::new(10);
        assert!(exact.on_chunk(4).is_ok() && exact.on_chunk(6).is_ok());
        assert!(exact.on_end().is_ok());

        let mut longer = ReopenedLength::new(10);
        assert!(longer.on_chunk(8).is_ok());
        let e = longer.on_chunk(3).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unsupported);
        assert!(
            e.message
                .contains("it gave more bytes where it gave 10 before"),
            "{e}"
        );

        let mut shorter = ReopenedLength::new(10);
        assert!(shorter.on_chunk(7).is_ok());
        let e = shorter.on_end().unwrap_err();
        assert!(
            e.message
                .contains("it gave 7 bytes where it gave 10 before"),
            "{e}"
        );
        assert!(
            e.message.contains("the source changed since it was sent"),
            "{e}"
        );
    }

    #[test]
    fn the_window_keeps_the_last_bytes_and_replays_from_any_offset() {
        let mut w = ReplayWindow::<Vec<u8>>::new(10);
        let data: Vec<u8> = (0..40u8).collect();
        for c in data.chunks(4) {
            w.push(c.to_vec());
        }
        w.push(Vec::new());
        assert_eq!(w.high(), 40);
        assert_eq!(w.low(), 28, "whole chunks, at least 10 bytes kept");
        assert_eq!(w.offer(), ResumeHello::Offer { from: 28, to: 40 });
        for off in 28..=40u64 {
            let Some(Replay::Kept(kept)) = w.replay_from(off) else {
                panic!("{off}: kept chunks")
            };
            assert_eq!(bytes(&kept), data[off as usize..].to_vec(), "{off}");
        }
        assert!(w.replay_from(27).is_none());
        assert!(w.replay_from(41).is_none());
        let mut none = ReplayWindow::<Vec<u8>>::new(0);
        none.push(vec![1, 2]);
        assert_eq!((none.low(), none.high()), (2, 2));
        assert_eq!(none.replay_from(2), Some(Replay::Kept(vec![])));
    }

    #[test]
    fn a_seekable_window_keeps_only_the_head_and_reopens_the_rest() {
        // plain: nothing kept, every offset sent so far can be reopened
        let mut plain = ReplayWindow::<Vec<u8>>::seekable(0);
        for _ in 0..10 {
            plain.push(vec![7; 1000]);
        }
        assert_eq!(
            plain.offer(),
            ResumeHello::Offer {
                from: 0,
                to: 10_000
            }
        );
        assert!(plain.chunks.is_empty());
        let reopen = |kept: Vec<Vec<u8>>, from, to| Some(Replay::Reopen { kept, from, to });
        assert_eq!(plain.replay_from(0), reopen(vec![], 0, 10_000));
        assert_eq!(plain.replay_from(4321), reopen(vec![], 4321, 10_000));
        assert_eq!(plain.replay_from(10_000), Some(Replay::Kept(vec![])));
        assert!(plain.replay_from(10_001).is_none());
        // encrypted: the header (5 bytes here) is kept as sent, even inside a bigger chunk
        let mut sealed = ReplayWindow::<Vec<u8>>::seekable(5);
        sealed.push(vec![1, 2, 3]);
        assert_eq!(sealed.replay_from(1), Some(Replay::Kept(vec![vec![2, 3]])));
        sealed.push(vec![4, 5, 6, 7]);
        sealed.push(vec![8; 100]);
        assert_eq!(sealed.high(), 107);
        assert_eq!(
            sealed.replay_from(0),
            reopen(vec![vec![1, 2, 3], vec![4, 5]], 5, 107)
        );
        assert_eq!(sealed.replay_from(4), reopen(vec![vec![5]], 5, 107));
        assert_eq!(sealed.replay_from(5), reopen(vec![], 5, 107));
        assert_eq!(sealed.replay_from(50), reopen(vec![], 50, 107));
        assert_eq!(sealed.replay_from(107), Some(Replay::Kept(vec![])));
    }

    #[test]
    fn verdicts_are_the_same_on_both_sides() {
        assert!(agree(0, 10, 0, true).is_ok());
        assert!(agree(4, 10, 10, false).is_ok());
        let old = agree(4, 10, 3, true).unwrap_err();
        assert_eq!(old.code, ErrorCode::Truncated);
        assert!(
            old.message.contains("byte 3") && old.message.contains("4..10"),
            "{old}"
        );
        let p = agree(4, 10, 3, false).unwrap_err();
        assert_eq!(p.code, ErrorCode::PeerDisconnected);
        assert!(agree(0, 10, 11, false)
            .unwrap_err()
            .message
            .contains("only 10 were sent"));
    }

    #[test]
    fn calls_urls_and_clock() {
        let plan = ResumePlan {
            relay: RelayBase::parse("http://h:1").unwrap(),
            path: "/p".into(),
            token: None,
            transfer: "TID".into(),
        };
        let r = plan.call(ResumeHello::Ask { offset: 5 }, 30.0).unwrap();
        // the relay answers in time (408): a call that didn't hung, and is made again (§11)
        assert_eq!(r.on_timeout, crate::client::request::OnTimeout::Hung);
        assert_eq!(r.timeout_ms, Some(32_000.0));
        assert_eq!(
            r.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=30",
                crate::protocol::channel::channel_id("TID")
            )
        );
        assert!(r.headers.contains(&(
            crate::protocol::headers::HELLO,
            "httpipe-resume=1; offset=5".into()
        )));
        let r = plan
            .call(ResumeHello::Offer { from: 1, to: 2 }, 7.0)
            .unwrap();
        assert!(r.url.contains("mode=await-reader") && r.url.ends_with("timeout=7"));
        let id = channel::channel_id("T");
        assert_eq!(
            channel_data_url("http://h/p", "T"),
            format!("http://h/p?channel={id}")
        );
        assert_eq!(
            channel_data_url("http://h/p?accesstoken=a", "T"),
            format!("http://h/p?accesstoken=a&channel={id}")
        );
        let c = ResumeClock::start(1000.0, 60.0);
        assert_eq!(c.call_timeout(1000.0), Some(30.0));
        assert_eq!(c.call_timeout(46_000.0), Some(15.0));
        assert_eq!(c.call_timeout(31_020.0), Some(30.0), "a call 20 ms late");
        assert_eq!(c.call_timeout(60_500.0), None);
        // regression: `--resume 1` made no call (its first came 10 ms after the break)
        let c = ResumeClock::start(1000.0, 1.0);
        assert_eq!(c.call_timeout(1010.0), Some(1.0));
        assert_eq!(c.call_timeout(1300.0), None);
        assert_eq!(window_size(None).unwrap(), DEFAULT_WINDOW);
        assert_eq!(window_size(Some(0.0)).unwrap(), 0);
        for bad in [-1.0, f64::NAN, (MAX_WINDOW as f64) + 1.0] {
            assert!(window_size(Some(bad)).is_err());
        }
    }
}
