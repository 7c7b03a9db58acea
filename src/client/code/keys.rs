//! What HKDF-SHA256 derives from the SPAKE2 key K (§14.3): the confirmations, the offer's
//! key, the data path and the transfer's age identity.

use std::fmt;

use chacha20poly1305::aead::KeyInit;
use chacha20poly1305::{ChaCha20Poly1305, Key};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::client::error::Error;
use crate::crypto::{FixedRandom, Format, Identity};

const INFO_CONFIRM_RECEIVER: &str = "httpipe-code-v1 confirm receiver";
const INFO_CONFIRM_SENDER: &str = "httpipe-code-v1 confirm sender";
const INFO_OFFER: &str = "httpipe-code-v1 offer";
const INFO_PATH: &str = "httpipe-code-v1 path";
const INFO_IDENTITY: &str = "httpipe-code-v1 identity";

/// What the exchange gives the data transfer (§14.3).
pub struct CodeKeys {
    /// The data path `/code/v1/x/{32 hex}`.
    pub path: String,
    /// The transfer's age identity `AGE-SECRET-KEY-1…` (the receiver decrypts with it).
    pub identity: Zeroizing<String>,
    /// Its recipient `age1…` (the sender encrypts to it).
    pub recipient: String,
}

impl CodeKeys {
    /// The data transfer's format: age-rt to [`CodeKeys::recipient`] (`PROTOCOL.md` §14.2),
    /// whatever the caller's default.
    pub const FORMAT: Format = Format::AgeRt;
}

impl fmt::Debug for CodeKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeKeys")
            .field("path", &self.path)
            .field("recipient", &self.recipient)
            .finish_non_exhaustive()
    }
}

/// The SPAKE2 output K and what HKDF-SHA256 derives from it.
pub(super) struct Shared(pub(super) Zeroizing<Vec<u8>>);

impl Shared {
    fn derive<const N: usize>(&self, info: &str) -> Zeroizing<[u8; N]> {
        let mut out = Zeroizing::new([0u8; N]);
        // ok: N ≤ 32, far below HKDF-SHA256's limit
        let _ = Hkdf::<Sha256>::new(None, &self.0).expand(info.as_bytes(), out.as_mut());
        out
    }

    pub(super) fn confirm_receiver(&self) -> Zeroizing<[u8; 32]> {
        self.derive(INFO_CONFIRM_RECEIVER)
    }

    pub(super) fn confirm_sender(&self) -> Zeroizing<[u8; 32]> {
        self.derive(INFO_CONFIRM_SENDER)
    }

    pub(super) fn offer_cipher(&self) -> ChaCha20Poly1305 {
        let key = self.derive::<32>(INFO_OFFER);
        ChaCha20Poly1305::new(Key::from_slice(key.as_ref()))
    }

    pub(super) fn keys(&self) -> Result<CodeKeys, Error> {
        let path = self.derive::<16>(INFO_PATH);
        let path = format!(
            "{}/x/{}",
            crate::protocol::paths::CODE_NAMESPACE,
            hex(path.as_ref())
        );
        let secret = self.derive::<32>(INFO_IDENTITY);
        let id = Identity::generate_x25519_with_rng(&mut FixedRandom::new(secret.to_vec()))?;
        let identity = id
            .to_secret_string()
            .ok_or_else(|| Error::usage("derived identity is not X25519"))?;
        let recipient = id
            .to_recipient()
            .ok_or_else(|| Error::usage("derived identity is not X25519"))?
            .to_string();
        Ok(CodeKeys {
            path,
            identity,
            recipient,
        })
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
