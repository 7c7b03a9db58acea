//! The options of the native client's calls (the mirror of `wasm/options.rs`): where a
//! stream goes ([`Target`]), [`SendOptions`], [`ReceiveOptions`], and their conversion into
//! the core's terms (`crate::client::options` decides what they mean).

use std::time::Duration;

#[allow(unused_imports)] // for the doc links
use super::{Client, Reader, SendReport};
use super::{Error, Format, ProgressFn, UploadMode, DEFAULT_WINDOW};
use crate::client::urls::RelayBase;
use crate::protocol::hello::{RECEIPT_TIMEOUT_S, RESUME_TIME_S};

/// Where a stream goes: the relay's base URL, the stream path, and an access token if the
/// relay needs one (`PROTOCOL.md` §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http://` or `https://` base URL of the relay, e.g. `https://relay.example`.
    pub relay: String,
    /// The stream path, e.g. `/team/reports` (no query, no fragment).
    pub path: String,
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// Where the Connect API is when it is not `{relay}/connect/v0/` (a ZebraStream-style
    /// `--connect-url`, e.g. `https://connect.example/v0/`); `relay` is then ignored and the
    /// data URL comes from the Connect answer (`PROTOCOL.md` §5, §11.2).
    pub connect_url: Option<String>,
}

impl Target {
    /// The stream `path` on the relay at `relay` (no token, no Connect URL).
    pub fn new(relay: impl Into<String>, path: impl Into<String>) -> Self {
        Target {
            relay: relay.into(),
            path: path.into(),
            token: None,
            connect_url: None,
        }
    }

    /// A target reached through a Connect API base URL (`{connect_url}{path}`, §5).
    pub fn with_connect_url(connect_url: impl Into<String>, path: impl Into<String>) -> Self {
        Target {
            connect_url: Some(connect_url.into()),
            ..Target::new(String::new(), path)
        }
    }

    /// The relay as the core sees it.
    pub(crate) fn relay_base(&self) -> Result<RelayBase, Error> {
        match &self.connect_url {
            Some(c) => RelayBase::from_connect_url(c),
            None => RelayBase::parse(&self.relay),
        }
    }
}

/// Options of [`Client::send`] and [`Client::open_writer`].
#[derive(Clone)]
pub struct SendOptions {
    /// Where to send.
    pub target: Target,
    /// Wait for the consumer on the Connect API first (default `true`).
    pub rendezvous: bool,
    /// How long to wait for the consumer (`CONNECT_TIMEOUT`); `None`: as long as it takes.
    pub timeout: Option<Duration>,
    /// Plain transfers only (nothing about the plaintext is sent in clear when encrypting).
    pub content_type: Option<String>,
    /// The file name the consumer gets (`Content-Disposition`; plain transfers only).
    pub filename: Option<String>,
    /// The plaintext size, if known: the consumer's progress total (plain transfers).
    pub size: Option<u64>,
    /// Encrypt with this passphrase (scrypt, age-rt/age), or…
    pub passphrase: Option<String>,
    /// …to these `age1...` recipients.
    pub recipients: Vec<String>,
    /// The encrypted format (default age-rt; `Format::Age` for the age CLI).
    pub format: Format,
    /// Writers: flush written bytes at most this long after they were written.
    pub auto_flush: Option<Duration>,
    /// Streaming (default `Auto`: streaming, with the segmented upload as the fallback).
    pub upload: UploadMode,
    /// Segmented part size in bytes (default 1 MiB, at most 16 MiB).
    pub part_size: Option<usize>,
    /// Called with progress as bytes go out.
    pub on_progress: Option<ProgressFn>,
    /// Wait for the consumer's delivery receipt when it sends them (`PROTOCOL.md` §12;
    /// default `true`): the send then succeeds only on a valid receipt. A consumer that sends
    /// none (curl, ZebraStream, `receipt` off) leaves the relay's verdict, with
    /// [`SendReport::receipt`] `None`.
    pub receipt: bool,
    /// Accept a receipt for the ciphertext of an encrypted send from a consumer without keys
    /// (§12.2; default `false`: such a receipt is `UNCONFIRMED`, since anyone who knows the
    /// path could have sent it). The report's receipt is then not authenticated and counts
    /// ciphertext bytes.
    pub ciphertext_receipt: bool,
    /// How long to wait for the receipt after the relay's success (default 120 s;
    /// `UNCONFIRMED` after it).
    pub receipt_timeout: Duration,
    /// Resume after a break (§12.3) when the consumer resumes too: how long to keep trying to
    /// meet it again (default 60 s); `None`: a break fails the send.
    pub resume: Option<Duration>,
    /// The replay window in bytes (§12.3; default 32 MiB, at most 1 GiB): the last bytes
    /// sent are kept (references to chunks, no copy) to send again after a break.
    pub resume_window: usize,
}

impl SendOptions {
    /// Defaults: rendezvous, no timeout, plain, age-rt when encrypting, `upload: Auto`.
    ///
    /// ```
    /// use httpipe::native::{Format, SendOptions, Target, UploadMode};
    /// let mut o = SendOptions::new(Target::new("https://relay.example", "/team/log"));
    /// assert!(o.rendezvous);
    /// assert_eq!((o.format, o.upload), (Format::AgeRt, UploadMode::Auto));
    /// o.passphrase = Some("correct horse".into()); // encrypt: no metadata in clear
    /// ```
    pub fn new(target: Target) -> Self {
        SendOptions {
            target,
            rendezvous: true,
            timeout: None,
            content_type: None,
            filename: None,
            size: None,
            passphrase: None,
            recipients: Vec::new(),
            format: Format::AgeRt,
            auto_flush: None,
            upload: UploadMode::Auto,
            part_size: None,
            on_progress: None,
            receipt: true,
            ciphertext_receipt: false,
            receipt_timeout: Duration::from_secs_f64(RECEIPT_TIMEOUT_S),
            resume: Some(Duration::from_secs_f64(RESUME_TIME_S)),
            resume_window: DEFAULT_WINDOW,
        }
    }
}

impl std::fmt::Debug for SendOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendOptions")
            .field("target", &self.target)
            .field("rendezvous", &self.rendezvous)
            .field("timeout", &self.timeout)
            .field("content_type", &self.content_type)
            .field("filename", &self.filename)
            .field("size", &self.size)
            .field("passphrase", &self.passphrase.as_ref().map(|_| "…"))
            .field("recipients", &self.recipients)
            .field("format", &self.format)
            .field("auto_flush", &self.auto_flush)
            .field("upload", &self.upload)
            .field("part_size", &self.part_size)
            .field("receipt", &self.receipt)
            .field("ciphertext_receipt", &self.ciphertext_receipt)
            .field("receipt_timeout", &self.receipt_timeout)
            .field("resume", &self.resume)
            .field("resume_window", &self.resume_window)
            .finish_non_exhaustive()
    }
}

/// Options of [`Client::receive`].
#[derive(Clone)]
pub struct ReceiveOptions {
    /// Where to receive from.
    pub target: Target,
    /// Wait for the producer on the Connect API first (default `true`).
    pub rendezvous: bool,
    /// How long to wait for the producer (`CONNECT_TIMEOUT`).
    pub timeout: Option<Duration>,
    /// Decrypt with this passphrase and/or…
    pub passphrase: Option<String>,
    /// …these identities (`AGE-SECRET-KEY-1...`, or a key file's text).
    pub identities: Vec<String>,
    /// The plaintext size, if known (progress total when decrypting).
    pub size: Option<u64>,
    /// Called with progress as bytes arrive.
    pub on_progress: Option<ProgressFn>,
    /// Delivery receipts (`PROTOCOL.md` §12; default [`ReceiptMode::Auto`]).
    pub receipt: ReceiptMode,
    /// Resume after a break (§12.3) when the producer resumes too: how long to keep trying to
    /// meet it again (default 60 s); `None`: a break is `TRUNCATED` at once.
    pub resume: Option<Duration>,
    /// Without keys: hand out an encrypted stream's ciphertext as it is (to store it and
    /// decrypt later). Default `false`: an age / age-rt stream fails `WRONG_KEY` before its
    /// first byte is handed out (§11.3 step 5).
    pub ciphertext: bool,
}

/// When a consumer sends its delivery receipt (`PROTOCOL.md` §12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptMode {
    /// Say no receipt comes (the producer reports the relay's verdict, unconfirmed).
    Off,
    /// When the stream was read to its clean end (before [`Reader::next_chunk`] reports it).
    Auto,
    /// When the application calls [`Reader::confirm`] (e.g. after saving the data).
    Manual,
}

impl From<ReceiptMode> for crate::client::options::ReceiptOption {
    fn from(m: ReceiptMode) -> Self {
        match m {
            ReceiptMode::Off => Self::Off,
            ReceiptMode::Auto => Self::Auto,
            ReceiptMode::Manual => Self::Manual,
        }
    }
}

/// The `resume` option of [`SendOptions`] / [`ReceiveOptions`] in the core's terms (`None`:
/// off).
pub(crate) fn resume_option(resume: Option<Duration>) -> crate::client::options::ResumeOption {
    use crate::client::options::ResumeOption;
    match resume {
        Some(d) => ResumeOption::Seconds(d.as_secs_f64()),
        None => ResumeOption::Flag(false),
    }
}

impl ReceiveOptions {
    /// Defaults: rendezvous, no timeout, plain.
    pub fn new(target: Target) -> Self {
        ReceiveOptions {
            target,
            rendezvous: true,
            timeout: None,
            passphrase: None,
            identities: Vec::new(),
            size: None,
            on_progress: None,
            receipt: ReceiptMode::Auto,
            resume: Some(Duration::from_secs_f64(RESUME_TIME_S)),
            ciphertext: false,
        }
    }
}

impl std::fmt::Debug for ReceiveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiveOptions")
            .field("target", &self.target)
            .field("rendezvous", &self.rendezvous)
            .field("timeout", &self.timeout)
            .field("passphrase", &self.passphrase.as_ref().map(|_| "…"))
            .field("identities", &self.identities.len())
            .field("size", &self.size)
            .field("receipt", &self.receipt)
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}
