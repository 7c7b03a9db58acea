//! Randomness: the OS/browser generator, or a fixed byte sequence for reproducible tests.

use super::Error;

/// A source of random bytes for [`Encryptor`](super::Encryptor) construction.
///
/// All randomness of an encryption is drawn when the encryptor is built, in this order:
/// the 16-byte file key; then per recipient, in the order given, the 16-byte scrypt salt, the
/// 32-byte X25519 ephemeral secret, or the 64 bytes of an `mlkem768x25519` encapsulation (32
/// for ML-KEM-768, then the 32-byte X25519 ephemeral secret); then the 16-byte payload nonce.
pub trait RandomSource {
    /// Fills `buf` completely with random bytes.
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Error>;
}

/// The operating system's CSPRNG via `getrandom` (`crypto.getRandomValues` on wasm32).
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Error> {
        getrandom::fill(buf).map_err(|e| Error::Random(e.to_string()))
    }
}

/// Hands out a fixed byte sequence, then fails. **For tests and test vectors only**: output
/// encrypted with it is not confidential.
#[derive(Debug, Clone)]
pub struct FixedRandom {
    bytes: Vec<u8>,
    pos: usize,
}

impl FixedRandom {
    /// Serves `bytes` in order.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        FixedRandom {
            bytes: bytes.into(),
            pos: 0,
        }
    }
}

impl RandomSource for FixedRandom {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Error> {
        let end = self.pos + buf.len();
        let src = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| Error::Random("FixedRandom ran out of bytes".into()))?;
        buf.copy_from_slice(src);
        self.pos = end;
        Ok(())
    }
}

/// Draws an array of `N` random bytes.
pub(crate) fn draw<const N: usize>(rng: &mut dyn RandomSource) -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    rng.fill(&mut b)?;
    Ok(b)
}
