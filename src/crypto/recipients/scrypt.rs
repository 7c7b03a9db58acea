//! The `scrypt` (passphrase) recipient stanza (C2SP age §"The scrypt recipient type").
//!
//! `-> scrypt <base64 16-byte salt> <log2 N>`; body = ChaCha20-Poly1305(wrap key, zero nonce,
//! file key) with wrap key = scrypt(passphrase, "age-encryption.org/v1/scrypt" || salt,
//! N = 2^log2N, r = 8, p = 1, 32 bytes).

use super::super::base64;
use super::super::header::Stanza;
use super::super::keys::{aead, FileKey, FILE_KEY_LEN};
use super::super::Error;
use chacha20poly1305::aead::Aead;
use chacha20poly1305::Nonce;
use zeroize::Zeroizing;

pub(crate) const TAG: &str = "scrypt";
const LABEL: &[u8] = b"age-encryption.org/v1/scrypt";
pub(crate) const SALT_LEN: usize = 16;

/// age's scrypt parameters: N = 2^`log2_n`, r = 8, p = 1, 32 bytes.
fn params(log2_n: u8) -> Result<scrypt::Params, Error> {
    scrypt::Params::new(log2_n, 8, 1, 32)
        .map_err(|_| Error::header(format!("invalid scrypt work factor {log2_n}")))
}

/// age's scrypt of `passphrase` with `full_salt` (label || salt), computed here with
/// RustCrypto (also by the SDK's throwaway instance, `crate::wasm::scrypt`).
pub(crate) fn derive_here(
    passphrase: &[u8],
    full_salt: &[u8],
    log2_n: u8,
) -> Result<Zeroizing<[u8; 32]>, Error> {
    let params = params(log2_n)?;
    let mut key = Zeroizing::new([0u8; 32]);
    scrypt::scrypt(passphrase, full_salt, &params, key.as_mut())
        .map_err(|_| Error::header("scrypt failed"))?;
    Ok(key)
}

fn wrap_key(
    passphrase: &[u8],
    salt: &[u8; SALT_LEN],
    log2_n: u8,
) -> Result<Zeroizing<[u8; 32]>, Error> {
    params(log2_n)?;
    let mut full_salt = LABEL.to_vec();
    full_salt.extend_from_slice(salt);
    // the runtime's own scrypt where the SDK registered one (same key; its memory is freed)
    if let Some(key) = super::super::runtime::scrypt(passphrase, &full_salt, log2_n) {
        return Ok(key);
    }
    derive_here(passphrase, &full_salt, log2_n)
}

/// [`Error::Usage`] unless 1 <= `log2_n` <= 63.
pub(crate) fn check_work_factor(log2_n: u8) -> Result<(), Error> {
    if !(1..=63).contains(&log2_n) {
        return Err(Error::Usage(format!(
            "scrypt log2 N must be 1..=63, got {log2_n}"
        )));
    }
    Ok(())
}

/// The stanza [`wrap`] will make, its body zeros: the same length and the same stanza line,
/// known before the scrypt runs.
pub(crate) fn placeholder(log2_n: u8, salt: &[u8; SALT_LEN]) -> Stanza {
    Stanza {
        tag: TAG.into(),
        args: vec![base64::encode(salt), log2_n.to_string()],
        body: vec![0; FILE_KEY_LEN + 16],
    }
}

/// Wraps `file_key` for a passphrase.
pub(crate) fn wrap(
    passphrase: &[u8],
    log2_n: u8,
    salt: [u8; SALT_LEN],
    file_key: &FileKey,
) -> Result<Stanza, Error> {
    check_work_factor(log2_n)?;
    let key = wrap_key(passphrase, &salt, log2_n)?;
    let body = aead(&key)
        .encrypt(Nonce::from_slice(&[0; 12]), file_key.as_ref())
        .map_err(|_| Error::Usage("encryption failed".into()))?;
    Ok(Stanza {
        tag: TAG.into(),
        args: vec![base64::encode(&salt), log2_n.to_string()],
        body,
    })
}

/// The wrap keys of `passphrases` for a stanza, derived as soon as its line arrived (before
/// the rest of the header): [`unwrap`] then uses them instead of deriving again.
pub(crate) struct Early {
    salt: [u8; SALT_LEN],
    log2_n: u8,
    keys: Vec<Zeroizing<[u8; 32]>>,
}

/// If `line` (without its newline) is a well-formed scrypt stanza line within `max_log2_n`,
/// derives the wrap key of each passphrase now. `None` otherwise: [`unwrap`] then judges the
/// whole stanza as usual (errors and their order unchanged).
pub(crate) fn early(line: &[u8], passphrases: &[&[u8]], max_log2_n: u8) -> Option<Early> {
    let line = std::str::from_utf8(line).ok()?.strip_prefix("-> ")?;
    let mut parts = line.split(' ');
    if parts.next()? != TAG {
        return None;
    }
    let args: Vec<String> = parts.map(str::to_string).collect();
    let (salt, log2_n) = parse_args(&args).ok()?;
    if log2_n > max_log2_n || passphrases.is_empty() {
        return None;
    }
    let keys = passphrases
        .iter()
        .map(|p| wrap_key(p, &salt, log2_n))
        .collect::<Result<_, _>>()
        .ok()?;
    Some(Early { salt, log2_n, keys })
}

/// Parses the stanza strictly (header failure on any deviation) and returns (salt, log2 N).
fn parse(stanza: &Stanza) -> Result<([u8; SALT_LEN], u8), Error> {
    let (salt, log2_n) = parse_args(&stanza.args)?;
    if stanza.body.len() != FILE_KEY_LEN + 16 {
        return Err(Error::header("scrypt stanza body is not 32 bytes"));
    }
    Ok((salt, log2_n))
}

/// The stanza's arguments, strictly: (salt, log2 N).
fn parse_args(args: &[String]) -> Result<([u8; SALT_LEN], u8), Error> {
    let [salt, wf] = args else {
        return Err(Error::header(
            "scrypt stanza needs exactly 2 arguments (salt, log2 N)",
        ));
    };
    let salt = base64::decode_exact::<SALT_LEN>(salt)
        .ok_or_else(|| Error::header("scrypt salt is not canonical base64 of 16 bytes"))?;
    let valid = !wf.is_empty()
        && wf.len() <= 2
        && wf.bytes().all(|b| b.is_ascii_digit())
        && !wf.starts_with('0');
    let log2_n: u8 = valid
        .then(|| wf.parse().ok())
        .flatten()
        .filter(|n| (1..=63).contains(n))
        .ok_or_else(|| {
            Error::header(format!(
                "scrypt work factor {} is not a decimal in 1..=63",
                crate::text::quoted(wf)
            ))
        })?;
    Ok((salt, log2_n))
}

/// Tries each passphrase. `Ok(None)` when none opens the stanza.
pub(crate) fn unwrap(
    stanza: &Stanza,
    passphrases: &[&[u8]],
    max_log2_n: u8,
    early: Option<&Early>,
) -> Result<Option<FileKey>, Error> {
    let (salt, log2_n) = parse(stanza)?;
    if log2_n > max_log2_n {
        return Err(Error::WorkFactorTooHigh {
            log2_n,
            max: max_log2_n,
        });
    }
    let early = early.filter(|e| e.salt == salt && e.log2_n == log2_n);
    for (i, p) in passphrases.iter().enumerate() {
        let key = match early.and_then(|e| e.keys.get(i)) {
            Some(k) => k.clone(),
            None => wrap_key(p, &salt, log2_n)?,
        };
        if let Ok(pt) = aead(&key).decrypt(Nonce::from_slice(&[0; 12]), stanza.body.as_slice()) {
            let pt = Zeroizing::new(pt);
            let mut fk = FileKey::default();
            fk.copy_from_slice(&pt);
            return Ok(Some(fk));
        }
    }
    Ok(None)
}
