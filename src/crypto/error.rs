//! Typed errors of the crypto core (PROTOCOL.md §7–§8).

use core::fmt;

/// Everything that can go wrong while encrypting or decrypting.
///
/// Every variant's `Display` is one sentence a person can act on. [`Error::code`] gives a
/// stable machine-readable class (used by the wasm bindings and the CLI exit path).
///
/// Once an [`Encryptor`](super::Encryptor) or [`Decryptor`](super::Decryptor) has returned an
/// error it is poisoned: every later call returns the same error and no further output.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// None of the given identities opens any recipient stanza of the header (a wrong key, or a
    /// stanza damaged in transit: the two can't be told apart).
    NoMatchingIdentity,
    /// The file is passphrase-encrypted (`scrypt` stanza) and no given passphrase opens it (a
    /// wrong passphrase, or a damaged stanza).
    WrongPassphrase,
    /// The header is not well-formed; the string says what is wrong (C2SP age "header failure").
    HeaderMalformed(String),
    /// The header did not end within `limit` bytes (age-rt: 4 KiB, age v1: configurable).
    HeaderTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The header MAC does not match: the header was modified after it was written.
    HeaderMac,
    /// The input is the pre-0.5.3 zebrastream-io legacy format (no header MAC, padded base64).
    UnsupportedLegacyFormat,
    /// ASCII armor is malformed (`-----BEGIN AGE ENCRYPTED FILE-----` framing, line lengths,
    /// base64); the string says what is wrong.
    Armor(String),
    /// Chunk (age v1) or record (age-rt) number `index` (0-based) failed to authenticate:
    /// the ciphertext was modified, reordered or encrypted under another key.
    ChunkAuth {
        /// 0-based chunk/record index.
        index: u64,
    },
    /// The payload is structurally invalid (a record length outside 16..=65552, an empty
    /// final chunk after a full one in strict mode, ...); the string says what.
    PayloadMalformed(String),
    /// The stream ended before its final chunk/record: the transfer was cut short.
    Truncated,
    /// Bytes follow the final chunk/record.
    TrailingData,
    /// An `scrypt` stanza asks for a work factor above the reader's cap
    /// ([`DecryptOptions::max_scrypt_log2_n`](super::DecryptOptions)).
    WorkFactorTooHigh {
        /// log2 N found in the stanza.
        log2_n: u8,
        /// The configured maximum.
        max: u8,
    },
    /// A recipient or identity string of a type this implementation does not support
    /// (e.g. post-quantum hybrid, plugins).
    UnsupportedRecipient(String),
    /// A recipient / identity string could not be parsed; the string says why.
    InvalidKey(String),
    /// The API was used incorrectly (no recipients, scrypt mixed with other recipients,
    /// write after finish, ...).
    Usage(String),
    /// The operating system / browser random number generator failed.
    Random(String),
    /// Chunk / record number `index` of a source sealed again after a break (PROTOCOL.md
    /// §12.3) is not what was sent the first time: the source changed since. Nothing of it was
    /// sent (no other plaintext under a used nonce).
    SourceChanged {
        /// 0-based chunk/record index.
        index: u64,
    },
}

impl Error {
    /// A stable short class name: `no_match`, `wrong_passphrase`, `header`, `header_too_large`,
    /// `hmac`, `legacy`, `armor`, `chunk_auth`, `payload`, `truncated`, `trailing_data`,
    /// `work_factor`, `unsupported_recipient`, `invalid_key`, `usage`, `random`,
    /// `source_changed`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NoMatchingIdentity => "no_match",
            Error::WrongPassphrase => "wrong_passphrase",
            Error::HeaderMalformed(_) => "header",
            Error::HeaderTooLarge { .. } => "header_too_large",
            Error::HeaderMac => "hmac",
            Error::UnsupportedLegacyFormat => "legacy",
            Error::Armor(_) => "armor",
            Error::ChunkAuth { .. } => "chunk_auth",
            Error::PayloadMalformed(_) => "payload",
            Error::Truncated => "truncated",
            Error::TrailingData => "trailing_data",
            Error::WorkFactorTooHigh { .. } => "work_factor",
            Error::UnsupportedRecipient(_) => "unsupported_recipient",
            Error::InvalidKey(_) => "invalid_key",
            Error::Usage(_) => "usage",
            Error::Random(_) => "random",
            Error::SourceChanged { .. } => "source_changed",
        }
    }

    pub(crate) fn header(msg: impl Into<String>) -> Self {
        Error::HeaderMalformed(msg.into())
    }

    pub(crate) fn armor(msg: impl Into<String>) -> Self {
        Error::Armor(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoMatchingIdentity => {
                // A stanza damaged in transit opens with no key either: the two look the same.
                f.write_str("no identity matches any recipient of this file: a wrong key, or a damaged header")
            }
            Error::WrongPassphrase => f.write_str("wrong passphrase, or a damaged header"),
            Error::HeaderMalformed(m) => write!(f, "malformed age header: {m}"),
            Error::HeaderTooLarge { limit } => {
                write!(
                    f,
                    "age header is larger than {limit} bytes (not an age file?)"
                )
            }
            Error::HeaderMac => f.write_str(
                "header MAC mismatch: the header was tampered with (or the file key is wrong)",
            ),
            Error::UnsupportedLegacyFormat => f.write_str(
                "unsupported legacy format (zebrastream-io 0.4.0-0.5.2, pre-age-rt); \
                 re-encrypt it with zebrastream-io >= 0.5.3",
            ),
            Error::Armor(m) => write!(f, "malformed ASCII armor: {m}"),
            Error::ChunkAuth { index } => write!(
                f,
                "payload chunk {index} failed to authenticate (data tampered or corrupted)"
            ),
            Error::PayloadMalformed(m) => write!(f, "malformed payload: {m}"),
            Error::Truncated => f.write_str(
                "stream truncated: it ended before its final chunk (incomplete transfer)",
            ),
            Error::TrailingData => f.write_str("unexpected data after the final chunk"),
            Error::WorkFactorTooHigh { log2_n, max } => write!(
                f,
                "scrypt work factor 2^{log2_n} exceeds the maximum 2^{max} \
                 (raise max_scrypt_log2_n if you trust this file)"
            ),
            Error::UnsupportedRecipient(m) => write!(f, "unsupported recipient type: {m}"),
            Error::InvalidKey(m) => write!(f, "invalid key: {m}"),
            Error::Usage(m) => write!(f, "{m}"),
            Error::Random(m) => write!(f, "random number generator failed: {m}"),
            Error::SourceChanged { index } => write!(
                f,
                "chunk {index}, sealed again, is not the chunk sent before"
            ),
        }
    }
}

/// As derived, but a string quoted as JSON: `{:?}` of a string brings Rust's escaping and
/// core's Unicode tables into the wasm module (issue #27).
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Error::*;
        let (name, text) = match self {
            HeaderMalformed(s) => ("HeaderMalformed", s),
            Armor(s) => ("Armor", s),
            PayloadMalformed(s) => ("PayloadMalformed", s),
            UnsupportedRecipient(s) => ("UnsupportedRecipient", s),
            InvalidKey(s) => ("InvalidKey", s),
            Usage(s) => ("Usage", s),
            Random(s) => ("Random", s),
            NoMatchingIdentity => return f.write_str("NoMatchingIdentity"),
            WrongPassphrase => return f.write_str("WrongPassphrase"),
            HeaderMac => return f.write_str("HeaderMac"),
            UnsupportedLegacyFormat => return f.write_str("UnsupportedLegacyFormat"),
            Truncated => return f.write_str("Truncated"),
            TrailingData => return f.write_str("TrailingData"),
            HeaderTooLarge { limit } => return write!(f, "HeaderTooLarge {{ limit: {limit} }}"),
            ChunkAuth { index } => return write!(f, "ChunkAuth {{ index: {index} }}"),
            SourceChanged { index } => return write!(f, "SourceChanged {{ index: {index} }}"),
            WorkFactorTooHigh { log2_n, max } => {
                return write!(f, "WorkFactorTooHigh {{ log2_n: {log2_n}, max: {max} }}")
            }
        };
        write!(f, "{name}({})", crate::text::quoted(text))
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn debug_reads_as_derived_with_strings_quoted_as_json() {
        let d = |e: Error| format!("{e:?}");
        assert_eq!(
            d(Error::Armor("no \"END\"".into())),
            r#"Armor("no \"END\"")"#
        );
        assert_eq!(d(Error::Truncated), "Truncated");
        assert_eq!(
            d(Error::HeaderTooLarge { limit: 4096 }),
            "HeaderTooLarge { limit: 4096 }"
        );
        let wf = Error::WorkFactorTooHigh {
            log2_n: 30,
            max: 22,
        };
        assert_eq!(d(wf), "WorkFactorTooHigh { log2_n: 30, max: 22 }");
    }
}
