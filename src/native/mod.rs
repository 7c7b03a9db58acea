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
//! - [`settle_last_words`]: before a program exits after dropping a transfer midway (Ctrl-C),
//!   a moment for the words that tell its peer (a failure notice, a withdrawal, a `cancelled`
//!   receipt, a consumer's word that it left), which otherwise die with the process.
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

mod body;
mod chunks;
mod code;
mod connect;
mod crypto;
mod error;
mod http;
mod options;
mod presence;
mod reader;
mod receipt;
mod receive;
mod send;
mod stall;
mod stop;
mod writer;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use crate::client::code::{Code, CodeKeys, Offer};
pub use crate::client::error::{Error, ErrorCode};
pub use crate::client::rate::Progress;
pub use crate::client::receipt::ReceiptReport;
pub use crate::client::resume::{DEFAULT_WINDOW, MAX_WINDOW};
pub use crate::client::transport::{Transport, UploadMode};
pub use crate::client::urls::ConnectMode;
pub use crate::crypto::Format;
pub use error::error_of;
pub(crate) use error::io_error;
pub use http::settle_last_words;
pub(crate) use options::resume_option;
pub use options::{ReceiptMode, ReceiveOptions, SendOptions, Target};
pub use reader::Reader;
pub use writer::Writer;

/// Locks `m`, even after a thread panicked while holding it (the state is plain data).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the blocking pool (scrypt takes about a second).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Error::new(
            ErrorCode::Unsupported,
            format!("a worker thread failed: {e}"),
        )
    })
}

/// A progress callback: bytes so far (plaintext), the total if known, the rate.
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

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
        connect::connect(&self.http, target, mode, timeout).await
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
        writer::open_writer(&self.http, opts).await
    }
}
