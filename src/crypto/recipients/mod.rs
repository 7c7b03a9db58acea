//! Recipients (who can decrypt) and identities (what decrypts): passphrases (`scrypt`),
//! X25519 keys (`age1...` / `AGE-SECRET-KEY-1...`) and hybrid post-quantum ML-KEM-768 +
//! X25519 keys (`age1pq1...` / `AGE-SECRET-KEY-PQ-1...`). PROTOCOL.md §7, C2SP age.

mod keytext;
pub(crate) mod mlkem768x25519;
pub(crate) mod scrypt;
pub(crate) mod x25519;
mod xwing;

#[cfg(target_arch = "wasm32")]
pub use xwing::set_xwing_module;
pub use xwing::XWingModule;

use mlkem768x25519::{HybridIdentity, HybridRecipient};

use super::header::Stanza;
use super::keys::FileKey;
use super::rng::{draw, OsRandom, RandomSource};
use super::Error;
use core::fmt;
use core::str::FromStr;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// The scrypt work factor (log2 N) written by default. The Python age-rt reader accepts only 18.
pub const DEFAULT_SCRYPT_LOG2_N: u8 = 18;

/// Someone a file is encrypted to.
///
/// - `"age1..."` (Bech32, lowercase) parses into an X25519 recipient via [`FromStr`].
/// - `"age1pq1..."` parses into a hybrid post-quantum recipient (`mlkem768x25519`, age 1.3).
///   It can't be mixed with X25519 recipients in one file (that would give up its
///   post-quantum security; age refuses it too): encryption fails with [`Error::Usage`].
/// - [`Recipient::passphrase`] makes an `scrypt` recipient; it must be the only recipient
///   of a file (C2SP age), or encryption fails with [`Error::Usage`].
#[derive(Clone)]
pub struct Recipient(RecipientKind);

#[derive(Clone)]
enum RecipientKind {
    X25519(PublicKey),
    Hybrid(Box<HybridRecipient>),
    Scrypt {
        passphrase: Zeroizing<Vec<u8>>,
        log2_n: u8,
    },
}

impl Recipient {
    /// A passphrase recipient with work factor 2^[`DEFAULT_SCRYPT_LOG2_N`] (about 1 s natively).
    pub fn passphrase(passphrase: &str) -> Self {
        Self::passphrase_with_work_factor(passphrase, DEFAULT_SCRYPT_LOG2_N)
    }

    /// A passphrase recipient with scrypt N = 2^`log2_n` (1..=63; readers cap it, the
    /// `age` CLI and this crate by default at 22, Python age-rt accepts only 18).
    pub fn passphrase_with_work_factor(passphrase: &str, log2_n: u8) -> Self {
        Recipient(RecipientKind::Scrypt {
            passphrase: Zeroizing::new(passphrase.as_bytes().to_vec()),
            log2_n,
        })
    }

    /// True for passphrase (`scrypt`) recipients.
    pub fn is_passphrase(&self) -> bool {
        matches!(self.0, RecipientKind::Scrypt { .. })
    }

    /// A passphrase recipient's passphrase and work factor.
    pub(crate) fn scrypt_params(&self) -> Option<(&[u8], u8)> {
        match &self.0 {
            RecipientKind::Scrypt { passphrase, log2_n } => Some((passphrase, *log2_n)),
            _ => None,
        }
    }

    /// True for hybrid post-quantum (`age1pq1...`) recipients.
    pub fn is_post_quantum(&self) -> bool {
        matches!(self.0, RecipientKind::Hybrid(_))
    }

    /// Draws this recipient's randomness and wraps `file_key` into a stanza.
    pub(crate) fn wrap(
        &self,
        file_key: &FileKey,
        rng: &mut dyn RandomSource,
    ) -> Result<Stanza, Error> {
        match &self.0 {
            RecipientKind::X25519(pk) => x25519::wrap(pk, draw::<32>(rng)?, file_key),
            RecipientKind::Hybrid(pk) => mlkem768x25519::wrap(
                pk,
                draw::<{ mlkem768x25519::ENCAP_RANDOM_LEN }>(rng)?,
                file_key,
            ),
            RecipientKind::Scrypt { passphrase, log2_n } => scrypt::wrap(
                passphrase,
                *log2_n,
                draw::<{ scrypt::SALT_LEN }>(rng)?,
                file_key,
            ),
        }
    }
}

impl FromStr for Recipient {
    type Err = Error;

    /// Parses an `age1...` X25519 or an `age1pq1...` hybrid recipient. Other known age
    /// recipient types (`age1tag1...`, plugins, SSH keys) give
    /// [`Error::UnsupportedRecipient`].
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s.starts_with("age1pq1") {
            return Ok(Recipient(RecipientKind::Hybrid(Box::new(
                mlkem768x25519::parse_recipient(s)?,
            ))));
        }
        if s.starts_with("age1") && s.len() == 62 {
            return Ok(Recipient(RecipientKind::X25519(x25519::parse_recipient(
                s,
            )?)));
        }
        if s.starts_with("age1") || s.starts_with("ssh-") {
            return Err(Error::UnsupportedRecipient(format!(
                "{}... (only X25519 age1..., post-quantum age1pq1... recipients and \
                 passphrases are supported)",
                s.get(..12).unwrap_or(s)
            )));
        }
        Err(Error::InvalidKey(
            "a recipient must look like age1... (62 characters) or age1pq1...".into(),
        ))
    }
}

impl fmt::Display for Recipient {
    /// `age1...` for X25519, `age1pq1...` for hybrid post-quantum recipients;
    /// `scrypt(passphrase)` for passphrases (the secret is not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            RecipientKind::X25519(pk) => f.write_str(&x25519::format_recipient(pk)),
            RecipientKind::Hybrid(pk) => f.write_str(&mlkem768x25519::format_recipient(pk)),
            RecipientKind::Scrypt { log2_n, .. } => {
                write!(f, "scrypt(passphrase, log2 N = {log2_n})")
            }
        }
    }
}

impl fmt::Debug for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recipient({self})")
    }
}

/// Something that can open a file: an X25519 or hybrid post-quantum secret key, or a
/// passphrase.
///
/// Parse `AGE-SECRET-KEY-1...` / `AGE-SECRET-KEY-PQ-1...` with [`FromStr`], a whole identity
/// file with [`Identity::parse_file`], or make a passphrase identity with
/// [`Identity::passphrase`].
#[derive(Clone)]
pub struct Identity(IdentityKind);

#[derive(Clone)]
enum IdentityKind {
    X25519(StaticSecret),
    Hybrid(Box<HybridIdentity>),
    Passphrase(Zeroizing<Vec<u8>>),
}

impl Identity {
    /// A passphrase identity (opens `scrypt` stanzas).
    pub fn passphrase(passphrase: &str) -> Self {
        Identity(IdentityKind::Passphrase(Zeroizing::new(
            passphrase.as_bytes().to_vec(),
        )))
    }

    /// A fresh random X25519 identity.
    pub fn generate_x25519() -> Result<Self, Error> {
        Self::generate_x25519_with_rng(&mut OsRandom)
    }

    /// A new X25519 identity from 32 bytes of `rng`.
    pub fn generate_x25519_with_rng(rng: &mut dyn RandomSource) -> Result<Self, Error> {
        let bytes = Zeroizing::new(draw::<32>(rng)?);
        Ok(Identity(IdentityKind::X25519(StaticSecret::from(*bytes))))
    }

    /// A fresh random hybrid post-quantum identity (`AGE-SECRET-KEY-PQ-1...`, like
    /// `age-keygen -pq`).
    pub fn generate_hybrid() -> Result<Self, Error> {
        Self::generate_hybrid_with_rng(&mut OsRandom)
    }

    /// A new hybrid post-quantum identity from 32 bytes of `rng` (its seed).
    pub fn generate_hybrid_with_rng(rng: &mut dyn RandomSource) -> Result<Self, Error> {
        let seed = Zeroizing::new(draw::<{ mlkem768x25519::SEED_LEN }>(rng)?);
        Ok(Identity(IdentityKind::Hybrid(Box::new(
            HybridIdentity::from_seed(*seed)?,
        ))))
    }

    /// Parses an identity file as written by `age-keygen`: one `AGE-SECRET-KEY-1...` or
    /// `AGE-SECRET-KEY-PQ-1...` per line; empty lines and lines starting with `#` are
    /// ignored. Fails on any other line or when no identity is found.
    pub fn parse_file(text: &str) -> Result<Vec<Self>, Error> {
        let ids = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(Identity::from_str)
            .collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() {
            return Err(Error::InvalidKey(
                "identity file contains no AGE-SECRET-KEY-1 or AGE-SECRET-KEY-PQ-1 line".into(),
            ));
        }
        Ok(ids)
    }

    /// The matching recipient (`age1...` or `age1pq1...`); `None` for passphrases.
    pub fn to_recipient(&self) -> Option<Recipient> {
        match &self.0 {
            IdentityKind::X25519(sk) => Some(Recipient(RecipientKind::X25519(PublicKey::from(sk)))),
            IdentityKind::Hybrid(id) => {
                Some(Recipient(RecipientKind::Hybrid(Box::new(id.recipient()))))
            }
            IdentityKind::Passphrase(_) => None,
        }
    }

    /// The secret key string `AGE-SECRET-KEY-1...` or `AGE-SECRET-KEY-PQ-1...` (wiped on
    /// drop); `None` for passphrases. Handle with care: this is the private key.
    pub fn to_secret_string(&self) -> Option<Zeroizing<String>> {
        match &self.0 {
            IdentityKind::X25519(sk) => Some(Zeroizing::new(x25519::format_identity(sk))),
            IdentityKind::Hybrid(id) => Some(mlkem768x25519::format_identity(id)),
            IdentityKind::Passphrase(_) => None,
        }
    }

    /// True for hybrid post-quantum (`AGE-SECRET-KEY-PQ-1...`) identities.
    pub fn is_post_quantum(&self) -> bool {
        matches!(self.0, IdentityKind::Hybrid(_))
    }

    pub(crate) fn as_x25519(&self) -> Option<&StaticSecret> {
        match &self.0 {
            IdentityKind::X25519(sk) => Some(sk),
            _ => None,
        }
    }

    pub(crate) fn as_hybrid(&self) -> Option<&HybridIdentity> {
        match &self.0 {
            IdentityKind::Hybrid(id) => Some(id),
            _ => None,
        }
    }

    pub(crate) fn as_passphrase(&self) -> Option<&[u8]> {
        match &self.0 {
            IdentityKind::Passphrase(p) => Some(p),
            _ => None,
        }
    }
}

impl FromStr for Identity {
    type Err = Error;

    /// Parses `AGE-SECRET-KEY-1...` (X25519) and `AGE-SECRET-KEY-PQ-1...` (hybrid
    /// post-quantum); other `AGE-` identity types (plugins) give
    /// [`Error::UnsupportedRecipient`].
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s.starts_with("AGE-SECRET-KEY-PQ-1") {
            return Ok(Identity(IdentityKind::Hybrid(Box::new(
                mlkem768x25519::parse_identity(s)?,
            ))));
        }
        if s.starts_with("AGE-SECRET-KEY-1") {
            return Ok(Identity(IdentityKind::X25519(x25519::parse_identity(s)?)));
        }
        if s.starts_with("AGE-") {
            return Err(Error::UnsupportedRecipient(format!(
                "identity {}... (only AGE-SECRET-KEY-1 X25519 and AGE-SECRET-KEY-PQ-1 \
                 post-quantum identities are supported)",
                s.get(..16).unwrap_or(s)
            )));
        }
        Err(Error::InvalidKey(
            "an identity must look like AGE-SECRET-KEY-1... or AGE-SECRET-KEY-PQ-1...".into(),
        ))
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            IdentityKind::X25519(sk) => write!(
                f,
                "Identity(X25519, recipient {})",
                x25519::format_recipient(&PublicKey::from(sk))
            ),
            IdentityKind::Hybrid(id) => {
                let rc = mlkem768x25519::format_recipient(&id.recipient());
                write!(
                    f,
                    "Identity(mlkem768x25519, recipient {}...)",
                    rc.get(..24).unwrap_or(&rc)
                )
            }
            IdentityKind::Passphrase(_) => f.write_str("Identity(passphrase)"),
        }
    }
}

/// Generates an X25519 key pair like `age-keygen`: returns
/// (`AGE-SECRET-KEY-1...` identity string, `age1...` recipient string).
pub fn generate_x25519() -> Result<(Zeroizing<String>, String), Error> {
    key_pair(Identity::generate_x25519()?)
}

/// Generates a hybrid post-quantum key pair like `age-keygen -pq`: returns
/// (`AGE-SECRET-KEY-PQ-1...` identity string, `age1pq1...` recipient string).
pub fn generate_hybrid() -> Result<(Zeroizing<String>, String), Error> {
    key_pair(Identity::generate_hybrid()?)
}

/// A new hybrid post-quantum identity string (`AGE-SECRET-KEY-PQ-1...`) from 32 random bytes:
/// no X-Wing work, so it needs no module on wasm32 (its recipient does:
/// [`Identity::to_recipient`]).
pub fn generate_hybrid_secret() -> Result<Zeroizing<String>, Error> {
    let seed = Zeroizing::new(draw::<{ mlkem768x25519::SEED_LEN }>(&mut OsRandom)?);
    Ok(mlkem768x25519::format_seed(&seed))
}

/// A generated identity's strings: (identity, recipient).
fn key_pair(id: Identity) -> Result<(Zeroizing<String>, String), Error> {
    let sk = id
        .to_secret_string()
        .ok_or_else(|| Error::Usage("unreachable".into()))?;
    let rc = id
        .to_recipient()
        .ok_or_else(|| Error::Usage("unreachable".into()))?;
    Ok((sk, rc.to_string()))
}
