//! TLS for the second port (`docs/PROTOCOL.md` §3.8): PEM files or a self-signed localhost
//! certificate made at start-up; ALPN `h2` then `http/1.1`.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use sha2::{Digest, Sha256};

/// A ready TLS server configuration and the SHA-256 fingerprint of its leaf certificate
/// (`AB:CD:...`, uppercase hex).
pub struct Tls {
    pub config: Arc<ServerConfig>,
    pub fingerprint: String,
    pub self_signed: bool,
}

/// Loads `cert` + `key` (PEM) or, if `None`, makes a self-signed certificate for `localhost`,
/// `127.0.0.1` and `::1`.
pub fn load(files: Option<(&Path, &Path)>) -> io::Result<Tls> {
    let (chain, key, self_signed) = match files {
        Some((cert, key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .map_err(|e| bad(format!("{}: {e}", cert.display())))?
                .collect::<Result<_, _>>()
                .map_err(|e| bad(format!("{}: {e}", cert.display())))?;
            if chain.is_empty() {
                return Err(bad(format!("{}: no certificate", cert.display())));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| bad(format!("{}: {e}", key.display())))?;
            (chain, key, false)
        }
        None => {
            let names = vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
                "::1".to_string(),
            ];
            let ck = rcgen::generate_simple_self_signed(names).map_err(|e| bad(e.to_string()))?;
            let key =
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
            (vec![ck.cert.der().clone()], key, true)
        }
    };
    let fingerprint = fingerprint(&chain[0]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| bad(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        config: Arc::new(config),
        fingerprint,
        self_signed,
    })
}

/// SHA-256 of a DER certificate as `AB:CD:...`.
pub fn fingerprint(cert: &[u8]) -> String {
    Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}
