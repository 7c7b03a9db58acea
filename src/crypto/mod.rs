//! Streaming age v1 and age-rt v0.2 encryption (PROTOCOL.md §7–§8, C2SP age v1).
//!
//! Push-style and synchronous, so the same core serves sync code, async code and wasm
//! `TransformStream`s: feed bytes in, get bytes out, memory bounded by about one 64 KiB chunk.
//!
//! - [`Encryptor`]: `update` / `flush` / `finish`, to [`Format::Age`] (interoperates with the
//!   `age` and `rage` CLIs) or [`Format::AgeRt`] (flushable records, ZebraStream's default).
//! - [`Decryptor`]: `update` / `finish`, auto-detects armor and format; releases only
//!   authenticated plaintext; reports truncation, tampering and trailing data as [`Error`]s.
//! - [`Recipient`] (`age1...`, `age1pq1...`, passphrase) and [`Identity`]
//!   (`AGE-SECRET-KEY-1...`, `AGE-SECRET-KEY-PQ-1...`, passphrase); [`generate_x25519`] makes
//!   a key pair like `age-keygen`, [`generate_hybrid`] a post-quantum one like
//!   `age-keygen -pq` (ML-KEM-768 + X25519, age 1.3's `mlkem768x25519`, PROTOCOL.md §7.1).
//! - [`RandomSource`]: injectable randomness ([`OsRandom`] by default, [`FixedRandom`] for
//!   reproducible test vectors).
//!
//! Not supported: tag recipients (`age1tag1`, `age1tagpq1`), plugins, SSH keys;
//! the pre-age-rt zebrastream-io legacy format ([`Error::UnsupportedLegacyFormat`]).

mod aead;
mod armor;
#[cfg(test)]
mod async_cipher_tests;
mod base64;
mod decryptor;
mod encryptor;
mod error;
mod header;
mod keys;
mod recipients;
mod reseal;
mod rng;
mod runtime;
mod sniff;
mod stream;

pub use decryptor::{DecryptOptions, Decryptor};
pub use encryptor::Encryptor;
pub use error::Error;
#[cfg(target_arch = "wasm32")]
pub(crate) use recipients::scrypt::derive_here as scrypt_here;
#[cfg(target_arch = "wasm32")]
pub use recipients::set_xwing_module;
pub use recipients::{
    generate_hybrid, generate_hybrid_secret, generate_x25519, Identity, Recipient, XWingModule,
    DEFAULT_SCRYPT_LOG2_N,
};
pub use reseal::Resealer;
pub use rng::{FixedRandom, OsRandom, RandomSource};
pub use runtime::{crypto_backend, RuntimeCrypto, RuntimeKey, ScryptElsewhere};
#[cfg(target_arch = "wasm32")]
pub use runtime::{set_runtime_crypto, set_scrypt_elsewhere};
pub use sniff::{sniff, Sniff, SNIFF_BYTES};
#[cfg(target_arch = "wasm32")]
pub(crate) use stream::SealJob;
pub use stream::{External, PlainSink, CHUNK_SIZE};

/// Which encrypted format to write (readers detect it from the first header line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// age v1 (`age-encryption.org/v1`): 64 KiB STREAM chunks, readable by `age`/`rage`.
    /// A flush can't emit a partial chunk (PROTOCOL.md §7).
    Age,
    /// age-rt v0.2 (`github.com/parsimonit/age-rt-encryption/v0.2`): every flush emits one
    /// length-prefixed record (PROTOCOL.md §8).
    AgeRt,
}

impl Format {
    /// Its name as options give it (the JS API's `format`, the CLI's `--encryption-mode`):
    /// `"age"` or `"age-rt"`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Age => "age",
            Format::AgeRt => "age-rt",
        }
    }
}

impl core::str::FromStr for Format {
    type Err = Error;

    /// `"age"` or `"age-rt"`.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "agert" => Ok(Format::AgeRt),
            _ if s == Format::Age.name() => Ok(Format::Age),
            _ if s == Format::AgeRt.name() => Ok(Format::AgeRt),
            _ => Err(Error::Usage(format!(
                "unknown format {} (use age or age-rt)",
                crate::text::quoted(s)
            ))),
        }
    }
}
