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
    let (chain, key, _) = match files {
        Some((cert, key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .and_then(|items| items.collect::<Result<_, _>>())
                .map_err(|e| pem_error("certificate", cert, e))?;
            if chain.is_empty() {
                return Err(bad(format!(
                    "TLS certificate {}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)",
                    cert.display()
                )));
            }
            let key_der =
                PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error("private key", key, e))?;
            (chain, key_der, Some((cert, key)))
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
            (vec![ck.cert.der().clone()], key, None)
        }
    };
    let self_signed = files.is_none();
    let fingerprint = fingerprint(&chain[0]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| match (e, files) {
            (rustls::Error::InconsistentKeys(_), Some((cert, key))) => bad(format!(
                "TLS private key {} does not belong to the certificate {}",
                key.display(),
                cert.display()
            )),
            (e, Some((cert, key))) => bad(format!(
                "TLS certificate {} with key {}: {e}",
                cert.display(),
                key.display()
            )),
            (e, None) => bad(format!("TLS self-signed certificate: {e}")),
        })?;
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

/// A clear message for a PEM file that can't be used, naming the file (the library's own
/// messages print byte arrays and don't say which file).
fn pem_error(what: &str, file: &Path, e: rustls::pki_types::pem::Error) -> io::Error {
    use rustls::pki_types::pem::Error as E;
    let f = file.display();
    match e {
        E::Io(e) => io::Error::new(e.kind(), format!("TLS {what} {f}: can't read it: {e}")),
        E::NoItemsFound if what == "private key" => bad(format!(
            "TLS private key {f}: no private key in it (expected PEM: -----BEGIN PRIVATE KEY-----, \
             RSA PRIVATE KEY or EC PRIVATE KEY)"
        )),
        E::NoItemsFound => bad(format!("TLS {what} {f}: nothing usable in it")),
        E::MissingSectionEnd { end_marker } => bad(format!(
            "TLS {what} {f}: not valid PEM (missing the line {:?})",
            String::from_utf8_lossy(&end_marker)
        )),
        E::IllegalSectionStart { line } => bad(format!(
            "TLS {what} {f}: not valid PEM (bad line {:?})",
            String::from_utf8_lossy(&line)
        )),
        E::Base64Decode(e) => bad(format!("TLS {what} {f}: not valid PEM (base64: {e})")),
        e => bad(format!("TLS {what} {f}: not valid PEM ({e})")),
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> std::path::PathBuf {
        let mut rnd = [0u8; 6];
        let _ = getrandom::fill(&mut rnd);
        let p = std::env::temp_dir().join(format!("httpipe-tls-{}-{name}", hex::encode(rnd)));
        let _ = std::fs::write(&p, text);
        p
    }

    /// Issue #10 item 12: TLS errors name the file and say what is wrong (no byte arrays).
    #[test]
    fn errors_name_the_file() {
        let a = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = temp("cert.pem", &a.cert.pem());
        let other_key = temp("key.pem", &b.signing_key.serialize_pem());
        let garbage = temp("garbage.pem", "not pem at all\n");
        let missing = std::env::temp_dir().join("httpipe-tls-missing.pem");
        let err = |c: &Path, k: &Path| match load(Some((c, k))) {
            Ok(_) => panic!("{} + {} loaded", c.display(), k.display()),
            Err(e) => e.to_string(),
        };
        let e = err(&cert, &other_key);
        assert!(
            e.contains("does not belong") && e.contains(&other_key.display().to_string()),
            "{e}"
        );
        let e = err(&garbage, &other_key);
        assert!(e.contains(&garbage.display().to_string()), "{e}");
        assert!(!e.contains('['), "no byte arrays: {e}");
        let e = err(&missing, &other_key);
        assert!(e.contains(&missing.display().to_string()), "{e}");
        for p in [cert, other_key, garbage] {
            let _ = std::fs::remove_file(p);
        }
    }
}
