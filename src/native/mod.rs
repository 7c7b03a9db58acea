//! The native client (feature `native`): send and receive byte streams through an httpipe
//! relay from Rust, with tokio and reqwest (rustls, HTTP/2 by ALPN). It is a thin adapter:
//! every protocol decision — rendezvous, streaming vs segmented upload and the fallback, the
//! status log, what a failure means — is made by the sans-IO core in [`crate::client`]; this
//! module only does the I/O.
//!
//! - [`Client::send`]: an [`AsyncRead`](tokio::io::AsyncRead) to the relay, as one streaming
//!   request body (the relay's status log is read while the upload runs).
//! - [`Client::open_writer`]: a [`Writer`] for log-style producers (write, flush, finish).
//! - [`Client::receive`]: a [`Reader`] of the producer's bytes (only authenticated plaintext
//!   when decrypting; a cut stream is `TRUNCATED`, never a clean end).
//! - [`Client::connect`]: the rendezvous alone (Connect API, `PROTOCOL.md` §5).
//!
//! Encryption (age-rt by default, or age v1) happens here, end to end: give `passphrase` or
//! `recipients` to send, `passphrase` or `identities` to receive. Memory stays bounded
//! whatever the size: a few chunks of at most 256 KiB are in flight (backpressure end to end),
//! plus the producer's replay window when both sides resume (below; 32 MiB by default).
//!
//! Delivery receipts and resume (`PROTOCOL.md` §12) are on by default, as in the SDK: between
//! two httpipe clients the producer succeeds only on the consumer's receipt
//! ([`SendReport::receipt`]), and a cut connection is resumed from the producer's replay
//! window (the last [`SendOptions::resume_window`] bytes it sent, whatever the source: never
//! encrypted again); progress reports `reconnecting` meanwhile. Peers without them (curl,
//! ZebraStream) see the relay's verdict as before.
//!
//! The relay's default TLS certificate is self-signed: [`Client::new`] accepts it only with
//! `HTTPIPE_INSECURE_TLS=1` in the environment, or build the client with
//! [`ClientBuilder::danger_accept_invalid_certs`].
//!
//! ```no_run
//! use httpipe::native::{Client, ReceiveOptions, SendOptions, Target};
//! # async fn run() -> Result<(), httpipe::native::Error> {
//! let client = Client::new()?;
//! let target = Target::new("http://127.0.0.1:8080", "/demo");
//!
//! // Consumer (in another task or process): waits for the producer.
//! let mut rx_opts = ReceiveOptions::new(target.clone());
//! rx_opts.passphrase = Some("correct horse".into());
//! let receiving = tokio::spawn({
//!     let client = client.clone();
//!     async move {
//!         let mut got = client.receive(rx_opts).await?;
//!         let mut all = Vec::new();
//!         while let Some(chunk) = got.reader.next_chunk().await? {
//!             all.extend_from_slice(&chunk);
//!         }
//!         Ok::<_, httpipe::native::Error>(all)
//!     }
//! });
//!
//! // Producer: any AsyncRead (a file, stdin, a byte slice).
//! let mut opts = SendOptions::new(target);
//! opts.passphrase = Some("correct horse".into());
//! let report = client.send(&b"hello through the relay\n"[..], opts).await?;
//! assert_eq!(report.relay_state, "[STATE:TRANSFER_SUCCESSFUL]");
//! # let _ = receiving.await;
//! # Ok(()) }
//! ```
//!
//! A log-style producer:
//!
//! ```no_run
//! use std::time::Duration;
//! use httpipe::native::{Client, SendOptions, Target};
//! # async fn run() -> Result<(), httpipe::native::Error> {
//! let mut opts = SendOptions::new(Target::new("http://127.0.0.1:8080", "/logs"));
//! opts.auto_flush = Some(Duration::from_millis(500));
//! let mut w = Client::new()?.open_writer(opts).await?; // resolves once the consumer is there
//! w.write_all(b"{\"event\":1}\n").await?;
//! w.flush().await?;                                      // on the wire now
//! let report = w.finish().await?;                        // the relay confirmed the transfer
//! # let _ = report; Ok(()) }
//! ```
//!
//! # Errors
//!
//! Every operation fails with one [`Error`] whose [`ErrorCode`] is stable:
//! `UNAUTHORIZED` / `FORBIDDEN` (token missing or invalid / not for this path or mode),
//! `CONNECT_TIMEOUT` (no peer within `timeout`), `PEER_DISCONNECTED` (producer: the consumer
//! left), `TRUNCATED` (consumer: the producer's stream was cut), `WRONG_KEY` (the keys don't
//! open the header, before any plaintext), `DECRYPT_FAILED` (tampered ciphertext),
//! `RELAY_ERROR` (other refusals, with the relay's words, e.g. a busy path), `ABORTED`
//! ([`Writer::abort`]), `UNSUPPORTED` (bad options, keys or source), `NETWORK` (the relay
//! can't be reached or went away).

mod code;
mod http;
mod receipt;
mod receive;
mod send;
mod source;
mod stall;
mod stop;

use std::io;
use std::sync::Arc;
use std::time::Duration;

pub use crate::client::code::{Code, CodeKeys, Offer};
pub use crate::client::error::{Error, ErrorCode};
pub use crate::client::rate::Progress;
pub use crate::client::receipt::ReceiptReport;
pub use crate::client::resume::{DEFAULT_WINDOW, MAX_WINDOW};
pub use crate::client::transport::{Transport, UploadMode};
pub use crate::client::urls::ConnectMode;
pub use crate::crypto::Format;
pub use receive::Reader;
pub use send::Writer;

use crate::client::rendezvous::Rendezvous;
use crate::client::urls::RelayBase;
use crate::protocol::hello::{RECEIPT_TIMEOUT_S, RESUME_TIME_S};

/// A progress callback: bytes so far (plaintext), the total if known, the rate.
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

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
fn resume_option(resume: Option<Duration>) -> crate::client::options::ResumeOption {
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

/// What a successful send reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    /// Plaintext bytes sent.
    pub bytes: u64,
    /// From the call to the verdict.
    pub duration: Duration,
    /// `Stream`, or `Segmented` (asked for, or the fallback).
    pub transport: Transport,
    /// The relay's final status line, `[STATE:TRANSFER_SUCCESSFUL]` (empty when the
    /// consumer's receipt came while the producer was resuming a break, §12.3).
    pub relay_state: String,
    /// The consumer's verified delivery receipt (§12.2); `None` when it sends none.
    pub receipt: Option<ReceiptReport>,
    /// Breaks the transfer resumed after (§12.3).
    pub resumes: u32,
}

/// A stream that started ([`Client::receive`]).
#[derive(Debug)]
pub struct Received {
    /// The stream's bytes (only authenticated plaintext when decrypting).
    pub reader: Reader,
    /// The producer's `Content-Type` (plain transfers only).
    pub content_type: Option<String>,
    /// From `Content-Disposition`.
    pub filename: Option<String>,
    /// The producer's `Content-Length` or declared size (plain transfers only).
    pub size: Option<u64>,
}

/// Builds a [`Client`].
#[derive(Debug, Clone, Default)]
pub struct ClientBuilder {
    insecure: Option<bool>,
    connect_timeout: Option<Duration>,
}

impl ClientBuilder {
    /// Accept any TLS certificate (the relay's self-signed default one). Default: only with
    /// `HTTPIPE_INSECURE_TLS=1` in the environment.
    pub fn danger_accept_invalid_certs(mut self, accept: bool) -> Self {
        self.insecure = Some(accept);
        self
    }

    /// How long establishing a connection may take (default 30 s; a failure is `NETWORK`).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// # Errors
    ///
    /// `UNSUPPORTED` if the TLS backend can't be set up.
    pub fn build(self) -> Result<Client, Error> {
        // reqwest is built without a rustls provider: ring (the relay's too) is installed as the
        // process default unless the application installed one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let insecure = self.insecure.unwrap_or_else(|| {
            std::env::var("HTTPIPE_INSECURE_TLS").is_ok_and(|v| v.trim() == "1")
        });
        let http = reqwest::Client::builder()
            .user_agent(concat!("httpipe/", env!("CARGO_PKG_VERSION")))
            .danger_accept_invalid_certs(insecure)
            .connect_timeout(self.connect_timeout.unwrap_or(Duration::from_secs(30)))
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorCode::Unsupported,
                    format!("setting up the HTTP client failed: {e}"),
                )
                .with_source(e)
            })?;
        Ok(Client { http })
    }
}

/// The native client: cheap to clone (one connection pool).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
}

impl Client {
    /// A client with the defaults (see [`ClientBuilder`]).
    ///
    /// ```
    /// let client = httpipe::native::Client::new()?;
    /// let insecure = httpipe::native::Client::builder()
    ///     .danger_accept_invalid_certs(true) // the relay's self-signed default certificate
    ///     .build()?;
    /// # let _ = (client, insecure);
    /// # Ok::<(), httpipe::native::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// `UNSUPPORTED` if the TLS backend can't be set up.
    pub fn new() -> Result<Client, Error> {
        ClientBuilder::default().build()
    }

    /// A builder for a client with other settings (TLS, timeouts).
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Waits on the Connect API (`PROTOCOL.md` §5) until the peer is present; returns the data
    /// URL. `mode`: `AwaitReader` as a producer, `AwaitWriter` as a consumer.
    ///
    /// # Errors
    ///
    /// `CONNECT_TIMEOUT`, `UNAUTHORIZED`, `FORBIDDEN`, `RELAY_ERROR`, `NETWORK`, `UNSUPPORTED`
    /// (bad relay URL or path).
    pub async fn connect(
        &self,
        target: &Target,
        mode: ConnectMode,
        timeout: Option<Duration>,
    ) -> Result<String, Error> {
        let base = target.relay_base()?;
        let r = Rendezvous::new(
            &base,
            &target.path,
            mode,
            timeout.map(|d| d.as_secs_f64()),
            target.token.as_deref(),
        )?;
        let stop = stop::Stop::new();
        match http::text_request(&self.http, r.request(), None, &stop, http::TimeoutAs::Stop).await
        {
            Ok(a) => r.on_response(a.status, &a.body),
            Err(f) => Err(r.on_failure(f)),
        }
    }

    /// Sends `source` to its end as one stream; resolves once the relay confirmed
    /// `[STATE:TRANSFER_SUCCESSFUL]` (every byte handed to the consumer) and, when the
    /// consumer sends receipts, once its receipt says it released every byte
    /// ([`SendReport::receipt`], `PROTOCOL.md` §12). A read error of `source` cuts the stream
    /// (the consumer sees `TRUNCATED`); so does dropping the returned future.
    ///
    /// # Errors
    ///
    /// `PEER_DISCONNECTED`, `UNCONFIRMED`, `CONNECT_TIMEOUT`, `UNAUTHORIZED`, `FORBIDDEN`, `RELAY_ERROR`
    /// (e.g. another producer on the path), `NETWORK`, `UNSUPPORTED` (bad options or keys, or
    /// `source` failed).
    pub async fn send<R: tokio::io::AsyncRead + Send + Unpin + 'static>(
        &self,
        source: R,
        opts: SendOptions,
    ) -> Result<SendReport, Error> {
        send::send(&self.http, source, opts).await
    }

    /// Receives a stream; resolves when the producer's stream starts (its metadata is known),
    /// the bytes come through [`Received::reader`].
    ///
    /// # Errors
    ///
    /// `CONNECT_TIMEOUT`, `UNAUTHORIZED`, `FORBIDDEN`, `RELAY_ERROR`, `NETWORK`, `UNSUPPORTED`
    /// (bad options or keys); reading then fails with `TRUNCATED`, `WRONG_KEY`,
    /// `DECRYPT_FAILED` (see [`Reader`]).
    pub async fn receive(&self, opts: ReceiveOptions) -> Result<Received, Error> {
        receive::receive(&self.http, opts).await
    }

    /// Opens a [`Writer`]. With `opts.rendezvous` (the default) it resolves once a consumer is
    /// present (so a producer can start its work only when the peer arrived); without, at
    /// once (the upload then waits for the consumer at the relay).
    ///
    /// # Errors
    ///
    /// `CONNECT_TIMEOUT`, `UNAUTHORIZED`, `FORBIDDEN`, `RELAY_ERROR`, `NETWORK`, `UNSUPPORTED`
    /// (bad options or keys); later failures come from the writer's calls.
    pub async fn open_writer(&self, opts: SendOptions) -> Result<Writer, Error> {
        send::open_writer(&self.http, opts).await
    }
}

/// The [`Error`] carried by an `io::Error` of [`Reader`] or [`Writer`] (their `AsyncRead` /
/// `AsyncWrite` faces).
///
/// ```
/// use httpipe::native::{error_of, Error, ErrorCode};
/// let e = std::io::Error::other(Error::new(ErrorCode::Truncated, "cut"));
/// assert_eq!(error_of(&e).map(|e| e.code), Some(ErrorCode::Truncated));
/// assert!(error_of(&std::io::Error::other("plain")).is_none());
/// ```
pub fn error_of(e: &io::Error) -> Option<&Error> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<Error>())
}

/// An `io::Error` carrying `e` (kind by code; never `Interrupted`, which readers retry).
pub(crate) fn io_error(e: Error) -> io::Error {
    let kind = match e.code {
        ErrorCode::Truncated => io::ErrorKind::UnexpectedEof,
        ErrorCode::PeerDisconnected | ErrorCode::Unconfirmed => io::ErrorKind::BrokenPipe,
        ErrorCode::WrongKey | ErrorCode::DecryptFailed | ErrorCode::WrongCode => {
            io::ErrorKind::InvalidData
        }
        ErrorCode::Unauthorized | ErrorCode::Forbidden => io::ErrorKind::PermissionDenied,
        ErrorCode::ConnectTimeout => io::ErrorKind::TimedOut,
        ErrorCode::Network => io::ErrorKind::ConnectionAborted,
        ErrorCode::RelayBusy => io::ErrorKind::ResourceBusy,
        ErrorCode::Unsupported => io::ErrorKind::InvalidInput,
        ErrorCode::RelayError | ErrorCode::Aborted => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}
