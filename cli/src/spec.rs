//! What a transfer is made of, from the merged settings (flags, environment, config file):
//! where it goes, how it is encrypted, and what happens after a break.

use std::path::PathBuf;

use httpipe::crypto::Format;

use crate::config::{self, Endpoint, Keys};
use crate::exit::CliError;
use crate::keys;
use crate::transfer::{self, AfterBreak, StreamTarget};

/// Receipts and resume (PROTOCOL.md §12) as the settings say; breaks are told on stderr.
pub(crate) fn after_break(keys: &Keys) -> Result<AfterBreak, CliError> {
    let lines = crate::progress::ResumeLines::stderr();
    let on_resume: transfer::OnResume =
        std::sync::Arc::new(move |reconnecting, resumed| lines.on_resume(reconnecting, resumed));
    Ok(AfterBreak {
        receipt: !keys.no_receipt.unwrap_or(false),
        ciphertext: keys.ciphertext.unwrap_or(false),
        ciphertext_receipt: keys.ciphertext_receipt.unwrap_or(false),
        resume: config::resume_time(keys)?,
        on_resume: Some(on_resume),
    })
}

pub(crate) fn target(keys: &Keys, path: String) -> Result<StreamTarget, CliError> {
    Ok(StreamTarget {
        endpoint: Endpoint::resolve(keys.relay.as_deref(), keys.connect_url.as_deref())?,
        path,
        token: keys.access_token.clone(),
        timeout: config::timeout(keys),
    })
}

pub(crate) fn format(keys: &Keys) -> Result<Format, CliError> {
    match keys.encryption_mode.as_deref() {
        None | Some("age-rt") => Ok(Format::AgeRt),
        Some("age") => Ok(Format::Age),
        Some(other) => Err(CliError::usage(
            format!("invalid encryption mode {other:?}"),
            "use --encryption-mode age-rt (default) or age",
        )),
    }
}

pub(crate) fn recipients(keys: &Keys) -> Result<Vec<String>, CliError> {
    let given = keys.recipients.clone().unwrap_or_default();
    let file = keys.recipients_file.as_ref().map(PathBuf::from);
    let r = keys::load_recipients(&given, file.as_deref())?;
    if !r.is_empty() && keys.passphrase.is_some() {
        return Err(CliError::usage(
            "both a passphrase and recipients were given",
            "age allows one or the other: drop -p/HTTPIPE_PASSPHRASE or -r/-R",
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Exit;

    #[test]
    fn passphrase_and_recipients_conflict() {
        let (_, p) = httpipe::crypto::generate_x25519().expect("keygen");
        let k = Keys {
            passphrase: Some("x".into()),
            recipients: Some(vec![p]),
            ..Keys::default()
        };
        assert_eq!(recipients(&k).expect_err("conflict").exit, Exit::Usage);
        assert!(format(&Keys {
            encryption_mode: Some("rot13".into()),
            ..Keys::default()
        })
        .is_err());
    }
}
