//! A minimal HTTP/2-over-TLS client for `bench/relay.mjs` (hyper + rustls), fast enough not
//! to be the bottleneck when measuring a relay's h2 throughput.
//!
//! `h2_bench send https://127.0.0.1:8443/path BYTES CA.pem` uploads BYTES bytes;
//! `h2_bench recv https://127.0.0.1:8443/path 0 CA.pem` downloads and prints the byte count.
//! The server certificate must be valid for `localhost` and signed by (or be) `CA.pem`.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, url, bytes, ca] = args.as_slice() else {
        return Err("usage: h2_bench send|recv URL BYTES CA.pem".into());
    };
    let uri: http::Uri = url.parse()?;
    let port = uri.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.set_nodelay(true)?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(8 << 20)
        .initial_connection_window_size(16 << 20)
        .max_frame_size(256 << 10)
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(conn);
    if mode == "recv" {
        let req = http::Request::get(uri).body(
            http_body_util::Empty::<Bytes>::new()
                .map_err(|e| match e {})
                .boxed(),
        )?;
        let mut body = sender.send_request(req).await?.into_body();
        let mut n: u64 = 0;
        while let Some(frame) = body.frame().await {
            if let Ok(d) = frame?.into_data() {
                n += d.len() as u64;
            }
        }
        println!("{n}");
    } else {
        let total: u64 = bytes.parse()?;
        let chunk = Bytes::from(vec![7u8; 256 << 10]);
        let count = total.div_ceil(chunk.len() as u64);
        let stream = futures_util::stream::iter(
            (0..count).map(move |_| Ok::<_, std::convert::Infallible>(Frame::data(chunk.clone()))),
        );
        let req = http::Request::post(uri).body(StreamBody::new(stream).boxed())?;
        let resp = sender.send_request(req).await?;
        resp.into_body().collect().await?;
    }
    Ok(())
}
