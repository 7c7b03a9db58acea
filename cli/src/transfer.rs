//! The network: the only module that talks to a relay, through the root crate's native
//! client (`httpipe::native`, feature `native`).
//!
//! With the cli crate's feature `net` off (the default until `httpipe::native` exists),
//! [`open_sender`] and [`open_receiver`] return an `Unsupported` error and everything else
//! in the CLI works. With `net` on, they call (planned API):
//! - `Client::new() -> Result<Client, Error>`
//! - `Client::open_writer(&self, SendOptions) -> Result<Writer, Error>` (rendezvous: returns
//!   once a consumer is there), `Writer::write_all(&mut self, &[u8])`,
//!   `Writer::finish(self) -> Result<SendReport, Error>`, `Writer::abort(self, &str)`
//! - `Client::receive(&self, ReceiveOptions) -> Result<Received, Error>`,
//!   `Received { reader, content_type, filename, size }`,
//!   `reader.next_chunk() -> Result<Option<Bytes>, Error>`

use std::time::Duration;

use httpipe::client::Error as NetError;
pub use httpipe::client::{CodeKeys, Offer as CodeOffer};
use httpipe::crypto::Format;

use crate::config::Endpoint;
use crate::pipe::{Sink, Source};

/// Which stream, where, with which token, and how long to wait for the peer.
#[derive(Clone)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct StreamTarget {
    pub endpoint: Endpoint,
    pub path: String,
    pub token: Option<String>,
    pub timeout: Option<Duration>,
}

/// What `write`/`send` open.
#[derive(Clone)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct SendSpec {
    pub target: StreamTarget,
    pub content_type: Option<String>,
    pub filename: Option<String>,
    pub size: Option<u64>,
    pub passphrase: Option<String>,
    pub recipients: Vec<String>,
    pub format: Format,
    /// ZebraStream's `-d`: `Some(0)` = every write goes out at once; `Some(n)` = at most n
    /// after the first unflushed write; `None` = when 64 KiB are buffered, or at the end.
    pub auto_flush: Option<Duration>,
    pub after_break: AfterBreak,
    /// The producer's replay window in bytes (`None`: the SDK's 32 MiB).
    pub resume_window: Option<usize>,
    /// How long to wait for the receipt (`None`: the SDK's 120 s).
    pub receipt_timeout: Option<Duration>,
}

/// Receipts and resume (PROTOCOL.md §12), the same on both sides.
#[derive(Clone)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct AfterBreak {
    /// Delivery receipts.
    pub receipt: bool,
    /// (consumer) Without keys, hand out an encrypted stream's ciphertext (§11.3).
    pub ciphertext: bool,
    /// (producer) Accept a receipt for the ciphertext from a receiver without keys (§12.2).
    pub ciphertext_receipt: bool,
    /// How long to keep trying to resume (`None`: off).
    pub resume: Option<Duration>,
    /// Called when a break starts being resumed (`true`) and when it was (`false`, with the
    /// resumes so far).
    pub on_resume: Option<OnResume>,
}

/// See [`AfterBreak::on_resume`].
pub type OnResume = std::sync::Arc<dyn Fn(bool, u32) + Send + Sync>;

/// How a producer's transfer ended well.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct Delivery {
    /// Plaintext bytes sent.
    pub bytes: u64,
    /// Bytes the receiver confirmed (its receipt, §12.2); `None`: it sends none.
    pub confirmed: Option<u64>,
    /// The transfer was encrypted.
    pub encrypted: bool,
    /// The receipt was made with the transfer's key (§12.2).
    pub authenticated: bool,
    /// Breaks resumed after (§12.3).
    pub resumes: u32,
}

/// What `read`/`receive` open.
#[derive(Clone)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct ReceiveSpec {
    pub target: StreamTarget,
    pub passphrase: Option<String>,
    pub identities: Vec<String>,
    pub after_break: AfterBreak,
}

/// What the producer said about the stream.
#[derive(Debug, Clone, Default)]
pub struct StreamInfo {
    pub content_type: Option<String>,
    pub filename: Option<String>,
    pub size: Option<u64>,
}

#[cfg(not(feature = "net"))]
mod imp {
    use super::*;
    use httpipe::client::ErrorCode;

    fn unsupported() -> NetError {
        NetError::new(
            ErrorCode::Unsupported,
            "this httpipe was built without its network client (cli feature `net`)",
        )
    }

    /// A connected producer stream (never made in this build).
    pub struct Sender(std::convert::Infallible);
    /// A connected consumer stream (never made in this build).
    pub struct Receiver(std::convert::Infallible);

    pub async fn open_sender(_spec: SendSpec) -> Result<Sender, NetError> {
        Err(unsupported())
    }

    pub async fn open_receiver(_spec: ReceiveSpec) -> Result<(StreamInfo, Receiver), NetError> {
        Err(unsupported())
    }

    pub async fn code_send(
        _relay: &StreamTarget,
        _offer: CodeOffer,
        _on_code: impl FnOnce(&str),
    ) -> Result<CodeKeys, NetError> {
        Err(unsupported())
    }

    pub async fn code_receive(
        _relay: &StreamTarget,
        _code: &str,
    ) -> Result<(CodeKeys, CodeOffer), NetError> {
        Err(unsupported())
    }

    impl Sender {
        pub async fn finish(self) -> Result<Delivery, NetError> {
            match self.0 {}
        }
        pub async fn abort(self, _reason: &str) {
            match self.0 {}
        }
    }

    impl Receiver {
        pub async fn settle(self, _complete: bool) -> Result<bool, NetError> {
            match self.0 {}
        }
    }

    impl Sink for Sender {
        async fn write(&mut self, _data: &[u8]) -> Result<(), NetError> {
            match self.0 {}
        }
    }

    impl Source for Receiver {
        type Chunk = Vec<u8>;
        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, NetError> {
            match self.0 {}
        }
    }
}

#[cfg(feature = "net")]
mod imp {
    use super::*;
    use httpipe::native::{
        Client, ProgressFn, Reader, ReceiptMode, ReceiveOptions, SendOptions, Target, Writer,
    };

    /// The progress callback that tells `on_resume` when a break starts and ends (§12.3).
    fn resume_watch(on_resume: Option<OnResume>) -> Option<ProgressFn> {
        let on_resume = on_resume?;
        let reconnecting = std::sync::atomic::AtomicBool::new(false);
        Some(std::sync::Arc::new(move |p: httpipe::native::Progress| {
            use std::sync::atomic::Ordering;
            if reconnecting.swap(p.reconnecting, Ordering::Relaxed) != p.reconnecting {
                on_resume(p.reconnecting, p.resumed);
            }
        }))
    }

    /// The SDK's `Target`: the relay base when the Connect URL is `<relay>/connect/v0/`,
    /// otherwise the Connect URL itself (the data URL then comes from its answer).
    fn target(t: &StreamTarget) -> Target {
        let mut target = match &t.endpoint.relay {
            Some(relay) => Target::new(relay.clone(), t.path.clone()),
            None => Target::with_connect_url(t.endpoint.connect_base.clone(), t.path.clone()),
        };
        target.token = t.token.clone();
        target
    }

    /// The writer, and whether it encrypts.
    pub struct Sender(Writer, bool);
    pub struct Receiver(Reader);

    /// The sender's half of a handoff by short code (PROTOCOL.md §14): `on_code` gets the code
    /// once the channel is ours; returns the data transfer's keys once a receiver answered.
    pub async fn code_send(
        relay: &StreamTarget,
        offer: CodeOffer,
        on_code: impl FnOnce(&str),
    ) -> Result<CodeKeys, NetError> {
        Client::new()?
            .code_send(&target(relay), offer, relay.timeout, |c| {
                on_code(&c.to_string())
            })
            .await
    }

    /// The receiver's half: the data transfer's keys and the sender's offer.
    pub async fn code_receive(
        relay: &StreamTarget,
        code: &str,
    ) -> Result<(CodeKeys, CodeOffer), NetError> {
        Client::new()?.code_receive(&target(relay), code).await
    }

    pub async fn open_sender(spec: SendSpec) -> Result<Sender, NetError> {
        let client = Client::new()?;
        let mut opts = SendOptions::new(target(&spec.target));
        opts.rendezvous = true;
        opts.timeout = spec.target.timeout;
        opts.content_type = spec.content_type;
        opts.filename = spec.filename;
        opts.size = spec.size;
        opts.passphrase = spec.passphrase;
        opts.recipients = spec.recipients;
        opts.format = spec.format;
        opts.auto_flush = spec.auto_flush.map(|d| d.max(Duration::from_millis(1))); // -d 0: at once
        opts.receipt = spec.after_break.receipt;
        opts.ciphertext_receipt = spec.after_break.ciphertext_receipt;
        opts.resume = spec.after_break.resume;
        if let Some(w) = spec.resume_window {
            opts.resume_window = w;
        }
        if let Some(t) = spec.receipt_timeout {
            opts.receipt_timeout = t;
        }
        opts.on_progress = resume_watch(spec.after_break.on_resume);
        let encrypted = opts.passphrase.is_some() || !opts.recipients.is_empty();
        Ok(Sender(client.open_writer(opts).await?, encrypted))
    }

    pub async fn open_receiver(spec: ReceiveSpec) -> Result<(StreamInfo, Receiver), NetError> {
        let client = Client::new()?;
        let r = client
            .receive(ReceiveOptions {
                rendezvous: true,
                timeout: spec.target.timeout,
                passphrase: spec.passphrase,
                identities: spec.identities,
                // Confirmed once the output is complete (flushed, renamed, the command done).
                receipt: if spec.after_break.receipt {
                    ReceiptMode::Manual
                } else {
                    ReceiptMode::Off
                },
                resume: spec.after_break.resume,
                ciphertext: spec.after_break.ciphertext,
                on_progress: resume_watch(spec.after_break.on_resume),
                ..ReceiveOptions::new(target(&spec.target))
            })
            .await?;
        let info = StreamInfo {
            content_type: r.content_type,
            filename: r.filename,
            size: r.size,
        };
        Ok((info, Receiver(r.reader)))
    }

    impl Sender {
        pub async fn finish(self) -> Result<Delivery, NetError> {
            let r = self.0.finish().await?;
            Ok(Delivery {
                bytes: r.bytes,
                confirmed: r.receipt.as_ref().map(|c| c.bytes),
                encrypted: self.1,
                authenticated: r.receipt.is_some_and(|c| c.authenticated),
                resumes: r.resumes,
            })
        }
        pub async fn abort(self, reason: &str) {
            self.0.abort(reason).await;
        }
    }

    impl Receiver {
        /// The consumer's last word (§12.2): with `complete` (the output holds every byte),
        /// the `ok` receipt — `Ok(true)` when the producer took it, `Ok(false)` when it wants
        /// none; otherwise the `cancelled` one, so the producer fails at once.
        pub async fn settle(mut self, complete: bool) -> Result<bool, NetError> {
            if complete && self.0.is_finished() {
                let wanted = self.0.sends_receipt();
                self.0.confirm().await?;
                return Ok(wanted);
            }
            self.0.cancel().await;
            Ok(false)
        }
    }

    impl Sink for Sender {
        async fn write(&mut self, data: &[u8]) -> Result<(), NetError> {
            self.0.write_all(data).await
        }

        async fn write_owned(&mut self, data: Vec<u8>) -> Result<(), NetError> {
            self.0.write_bytes(bytes::Bytes::from(data)).await
        }

        async fn failed(&mut self) -> NetError {
            self.0.closed().await
        }
    }

    impl Source for Receiver {
        type Chunk = bytes::Bytes;
        async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, NetError> {
            self.0.next_chunk().await
        }

        /// A consumer command has the whole stream: the receipt goes now, so a command that
        /// works long after its input ended doesn't leave the producer unconfirmed.
        async fn handed_over(&mut self) {
            match self.0.confirm().await {
                Ok(()) => crate::interrupt::enter(crate::interrupt::Stage::Confirmed),
                Err(e) => tracing::warn!("the receipt did not reach the sender: {e}"),
            }
        }
    }
}

pub use imp::{code_receive, code_send, open_receiver, open_sender, Receiver, Sender};
