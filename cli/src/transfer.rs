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

use httpipe::client::error::Error as NetError;
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
}

/// What `read`/`receive` open.
#[derive(Clone)]
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub struct ReceiveSpec {
    pub target: StreamTarget,
    pub passphrase: Option<String>,
    pub identities: Vec<String>,
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
    use httpipe::client::error::ErrorCode;

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

    impl Sender {
        pub async fn finish(self) -> Result<(), NetError> {
            match self.0 {}
        }
        pub async fn abort(self, _reason: &str) {
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
    use httpipe::native::{Client, Reader, ReceiveOptions, SendOptions, Target, Writer};

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

    pub struct Sender(Writer);
    pub struct Receiver(Reader);

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
        Ok(Sender(client.open_writer(opts).await?))
    }

    pub async fn open_receiver(spec: ReceiveSpec) -> Result<(StreamInfo, Receiver), NetError> {
        let client = Client::new()?;
        let r = client
            .receive(ReceiveOptions {
                rendezvous: true,
                timeout: spec.target.timeout,
                passphrase: spec.passphrase,
                identities: spec.identities,
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
        pub async fn finish(self) -> Result<(), NetError> {
            self.0.finish().await.map(|_report| ())
        }
        pub async fn abort(self, reason: &str) {
            self.0.abort(reason).await;
        }
    }

    impl Sink for Sender {
        async fn write(&mut self, data: &[u8]) -> Result<(), NetError> {
            self.0.write_all(data).await
        }
    }

    impl Source for Receiver {
        type Chunk = bytes::Bytes;
        async fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, NetError> {
            self.0.next_chunk().await
        }
    }
}

pub use imp::{open_receiver, open_sender, Receiver, Sender};
