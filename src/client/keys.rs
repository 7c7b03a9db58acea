//! Which keys make an encryptor or a decryptor (`PROTOCOL.md` §7, §7.1), for the SDK's
//! options and the native client's alike: a passphrase, or recipients (`age1...`,
//! `age1pq1...`) to encrypt; a passphrase and/or identities (`AGE-SECRET-KEY-1...`,
//! `AGE-SECRET-KEY-PQ-1...`) to decrypt. Each entry of `recipients` / `identities` is one key
//! or a key file's text as `age-keygen` writes it: one key per line, empty lines and `#`
//! comments ignored.
//!
//! Errors (`UNSUPPORTED`, [`Error::usage`]): both a passphrase and recipients (age allows one
//! scrypt stanza only), an entry without a key, a malformed key (the message never repeats a
//! secret key), an unknown `format`.

use std::str::FromStr;

use super::error::Error;
use crate::crypto::{DecryptOptions, Decryptor, Encryptor, Format, Identity, Recipient};

/// The payload format of a `format` option: `'age-rt'` (the default) or `'age'`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub fn format_of(format: Option<&str>) -> Result<Format, Error> {
    match format {
        None => Ok(Format::AgeRt),
        Some(f) => Ok(Format::from_str(f)?),
    }
}

/// The key lines of one entry (a key, or a key file's text).
fn key_lines(entry: &str) -> impl Iterator<Item = &str> {
    entry
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Every key of `entries`, parsed; `what` names them in errors.
fn parse_keys<T>(
    entries: &[String],
    what: &str,
    parse: impl Fn(&str) -> Result<T, crate::crypto::Error>,
) -> Result<Vec<T>, Error> {
    let mut keys = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let before = keys.len();
        for line in key_lines(entry) {
            keys.push(parse(line)?);
        }
        if keys.len() == before {
            return Err(Error::usage(format!(
                "{what} entry {} holds no key (only empty lines or # comments)",
                i + 1
            )));
        }
    }
    Ok(keys)
}

/// An empty passphrase is refused (PROTOCOL.md §11.3 step 6): it would be a plain transfer to
/// one client and a key anyone can guess to another.
fn non_empty(passphrase: Option<&str>) -> Result<Option<&str>, Error> {
    match passphrase {
        Some("") => Err(Error::usage(
            "`passphrase` is empty: give a passphrase, or leave the option out for an unencrypted transfer",
        )),
        p => Ok(p),
    }
}

/// The encryptor for a passphrase or recipients in `format`; `None` when neither is given
/// (a plain transfer). Recipients given as an empty list are refused, as an empty passphrase
/// is: a list that came out empty must not turn encryption off.
pub fn encryptor(
    passphrase: Option<&str>,
    recipients: Option<&[String]>,
    format: Format,
) -> Result<Option<Encryptor>, Error> {
    let passphrase = non_empty(passphrase)?;
    if recipients.is_some_and(<[String]>::is_empty) {
        return Err(Error::usage(
            "`recipients` is empty: give at least one recipient (age1...), or leave the option out for an unencrypted transfer",
        ));
    }
    let recipients = recipients.unwrap_or_default();
    match (passphrase, recipients.is_empty()) {
        (Some(_), false) => Err(Error::usage(
            "use either `passphrase` or `recipients`, not both (age allows one scrypt stanza only)",
        )),
        (Some(p), true) => Ok(Some(Encryptor::with_passphrase(format, p)?)),
        (None, false) => {
            let parsed = parse_keys(recipients, "`recipients`", Recipient::from_str)?;
            Ok(Some(Encryptor::new(format, &parsed)?))
        }
        (None, true) => Ok(None),
    }
}

/// The decryptor for a passphrase and/or identities; `None` when neither is given (a plain
/// transfer). It accepts an empty final chunk (as `age` does).
pub fn decryptor(
    passphrase: Option<&str>,
    identities: &[String],
) -> Result<Option<Decryptor>, Error> {
    let passphrase = non_empty(passphrase)?;
    let mut ids = parse_keys(identities, "`identities`", Identity::from_str)?;
    if let Some(p) = passphrase {
        ids.insert(0, Identity::passphrase(p));
    }
    if ids.is_empty() {
        return Ok(None);
    }
    let options = DecryptOptions {
        lenient_empty_final_chunk: true,
        ..DecryptOptions::default()
    };
    Ok(Some(Decryptor::new(&ids, options)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ErrorCode;

    fn key_file(ids: &[&Identity]) -> String {
        let mut text = String::from("# created: 2026-12-04\n");
        for id in ids {
            let secret = id.to_secret_string().expect("a key");
            let public = id.to_recipient().expect("a recipient").to_string();
            text.push_str(&format!("# public key: {public}\n{}\n\n", secret.as_str()));
        }
        text
    }

    /// Regression (#26): `passphrase: ''` encrypted with the empty passphrase in the SDK while
    /// `HTTPIPE_PASSPHRASE=` meant "no passphrase" to the CLI.
    #[test]
    fn an_empty_passphrase_is_refused_on_both_sides() {
        for e in [
            encryptor(Some(""), None, Format::AgeRt).err(),
            decryptor(Some(""), &[]).err(),
        ] {
            let e = e.expect("refused");
            assert_eq!(e.code, ErrorCode::Unsupported);
            assert!(e.message.contains("`passphrase` is empty"), "{e}");
        }
        assert!(encryptor(Some("p"), None, Format::AgeRt).is_ok());
    }

    #[test]
    fn key_file_text_and_single_keys_make_the_same_keys() {
        let a = Identity::generate_x25519().expect("key");
        let b = Identity::generate_x25519().expect("key");
        let ra = a.to_recipient().expect("r").to_string();
        let rb = b.to_recipient().expect("r").to_string();
        // recipients: one per entry, or a file of two, encrypt to both
        let file = format!("# team\n{ra}\n\n  {rb}  \n");
        for recipients in [vec![ra.clone(), rb.clone()], vec![file]] {
            let mut enc = encryptor(None, Some(&recipients), Format::AgeRt)
                .expect("ok")
                .expect("an encryptor");
            let mut wire = Vec::new();
            enc.update(b"hello", &mut wire).expect("seal");
            enc.finish(&mut wire).expect("finish");
            // identities: a key file holding the second key opens it
            let text = key_file(&[&b]);
            let mut dec = decryptor(None, &[text]).expect("ok").expect("a decryptor");
            let mut out = Vec::new();
            dec.update(&wire, &mut out).expect("open");
            dec.finish(&mut out).expect("end");
            assert_eq!(out, b"hello");
        }
    }

    #[test]
    fn bad_key_options_are_usage_errors_that_keep_secrets() {
        assert!(encryptor(None, None, Format::AgeRt).expect("ok").is_none());
        // a list that came out empty is not "no encryption"
        let none_given = encryptor(None, Some(&[]), Format::AgeRt).err();
        assert!(none_given.is_some_and(|e| e.message.contains("`recipients` is empty")));
        assert!(decryptor(None, &[]).expect("ok").is_none());
        let both = encryptor(Some("pw"), Some(&["age1x".into()]), Format::AgeRt).err();
        assert_eq!(both.map(|e| e.code), Some(ErrorCode::Unsupported));
        let empty = decryptor(None, &["# just a comment\n\n".into()]).err();
        assert!(empty.is_some_and(|e| e.message.contains("entry 1 holds no key")));
        let secret = "AGE-SECRET-KEY-1NOTAKEYATALLNOTAKEYATALL";
        let bad = decryptor(None, &[secret.into()]).err().expect("an error");
        assert_eq!(bad.code, ErrorCode::Unsupported);
        assert!(!bad.message.contains(secret), "{}", bad.message);
        assert!(format_of(Some("age-v2")).is_err());
        assert_eq!(format_of(None).expect("default"), Format::AgeRt);
    }
}
