//! Each side's SPAKE2 exchange (§14.2, §14.3) and the sealed offer: state machines that take
//! the bytes read from a pipe and return the bytes to write next.

use chacha20poly1305::aead::Aead;
use chacha20poly1305::Nonce;
use spake2::{Ed25519Group, Identity as SpakeIdentity, Password, Spake2};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::channel::Code;
use super::keys::{CodeKeys, Shared};
use super::{wrong_code, CONFIRM_LEN, SPAKE2_IDENTITY, SPAKE2_MSG_LEN};
use crate::client::error::{Error, ErrorCode};
use crate::crypto::RandomSource;

/// The Poly1305 tag of the sealed offer.
pub(super) const TAG_LEN: usize = 16;

/// 64 random bytes handed to SPAKE2 (it draws one scalar) through rand_core's traits.
struct Draw {
    bytes: Zeroizing<[u8; 64]>,
    at: usize,
    short: bool,
}

impl rand_core::RngCore for Draw {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for d in dest {
            match self.bytes.get(self.at) {
                Some(b) => *d = *b,
                None => self.short = true,
            }
            self.at += 1;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for Draw {}

/// Starts SPAKE2 (symmetric, Ed25519) with the canonical code as the password.
fn start(
    code: &Code,
    rng: &mut dyn RandomSource,
) -> Result<(Spake2<Ed25519Group>, Vec<u8>), Error> {
    let mut bytes = Zeroizing::new([0u8; 64]);
    rng.fill(bytes.as_mut())?;
    let mut draw = Draw {
        bytes,
        at: 0,
        short: false,
    };
    let password = Password::new(code.to_string().as_bytes());
    let (state, msg) = Spake2::<Ed25519Group>::start_symmetric_with_rng(
        &password,
        &SpakeIdentity::new(SPAKE2_IDENTITY.as_bytes()),
        &mut draw,
    );
    if draw.short {
        return Err(Error::usage("SPAKE2 asked for more randomness than drawn"));
    }
    Ok((state, msg))
}

// ---- the offer --------------------------------------------------------------------------

/// The producer's metadata, sealed in pipe `c` (§14.3): JSON (`offer_json`: unset fields
/// written as `null`; absent or `null` fields read as unset, unknown ones ignored). The
/// miniserde derives are the tests' reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(test, derive(miniserde::Serialize, miniserde::Deserialize))]
pub struct Offer {
    /// The offer's version (1).
    pub v: u32,
    /// The file's name.
    pub name: Option<String>,
    /// Plaintext bytes.
    pub size: Option<u64>,
    /// The media type.
    #[cfg_attr(test, serde(rename = "type"))]
    pub content_type: Option<String>,
}

impl Offer {
    /// A version-1 offer.
    pub fn new(name: Option<String>, size: Option<u64>, content_type: Option<String>) -> Offer {
        Offer {
            v: 1,
            name,
            size,
            content_type,
        }
    }
}

// ---- the sender -------------------------------------------------------------------------

/// The sender's side of the exchange.
pub struct CodeSender {
    code: Code,
    state: Spake2<Ed25519Group>,
    a: Vec<u8>,
    offer: Offer,
}

/// What the sender does with pipe `b`'s bytes: POST `c` (always), then `result`.
#[derive(Debug)]
pub struct SenderReply {
    pub c: Vec<u8>,
    pub result: Result<CodeKeys, Error>,
}

impl CodeSender {
    pub fn new(code: Code, offer: Offer, rng: &mut dyn RandomSource) -> Result<Self, Error> {
        let (state, a) = start(&code, rng)?;
        Ok(CodeSender {
            code,
            state,
            a,
            offer,
        })
    }

    pub fn code(&self) -> &Code {
        &self.code
    }

    /// `A`, the body of pipe `a`.
    pub fn message_a(&self) -> &[u8] {
        &self.a
    }

    /// Pipe `b`'s bytes `B ‖ confirm_r`: the body of pipe `c`, and the keys or `WRONG_CODE`.
    pub fn on_b(self, b: &[u8]) -> SenderReply {
        let refused = |c: Vec<u8>| SenderReply {
            c,
            result: Err(wrong_code(
                "the receiver used another code, or someone else tried this one",
            )),
        };
        // Not the right receiver's message: answer with bytes no confirmation matches, so the
        // receiver fails too, even when only confirm_r was altered on the way (§14.2 step 3).
        let filler = || vec![0u8; CONFIRM_LEN + TAG_LEN];
        if b.len() != SPAKE2_MSG_LEN + CONFIRM_LEN {
            return refused(filler());
        }
        let (msg, confirm_r) = b.split_at(SPAKE2_MSG_LEN);
        let Ok(k) = self.state.finish(msg) else {
            return refused(filler());
        };
        let k = Shared(Zeroizing::new(k));
        if !bool::from(k.confirm_receiver().as_ref().ct_eq(confirm_r)) {
            return refused(filler());
        }
        let mut c = k.confirm_sender().to_vec();
        let offer = super::offer_json::write_offer(&self.offer).into_bytes();
        match k
            .offer_cipher()
            .encrypt(Nonce::from_slice(&[0u8; 12]), offer.as_slice())
        {
            Ok(sealed) => c.extend_from_slice(&sealed),
            Err(_) => return refused(filler()),
        }
        SenderReply {
            c,
            result: k.keys(),
        }
    }
}

// ---- the receiver -----------------------------------------------------------------------

/// The receiver's side of the exchange.
pub struct CodeReceiver {
    state: Option<Spake2<Ed25519Group>>,
    b: Vec<u8>,
    k: Option<Shared>,
}

impl CodeReceiver {
    pub fn new(code: &Code, rng: &mut dyn RandomSource) -> Result<Self, Error> {
        let (state, b) = start(code, rng)?;
        Ok(CodeReceiver {
            state: Some(state),
            b,
            k: None,
        })
    }

    /// Pipe `a`'s bytes `A`: the body of pipe `b`, `B ‖ confirm_r`.
    pub fn on_a(&mut self, a: &[u8]) -> Result<Vec<u8>, Error> {
        let not_a = || wrong_code("what waits on this channel is not a code's first message");
        if a.len() != SPAKE2_MSG_LEN {
            return Err(not_a());
        }
        let state = self
            .state
            .take()
            .ok_or_else(|| Error::usage("on_a called twice"))?;
        let k = Shared(Zeroizing::new(state.finish(a).map_err(|_| not_a())?));
        let mut out = self.b.clone();
        out.extend_from_slice(k.confirm_receiver().as_ref());
        self.k = Some(k);
        Ok(out)
    }

    /// Pipe `c`'s bytes `confirm_s ‖ seal(offer)`: the keys and the offer, or `WRONG_CODE`.
    pub fn on_c(&self, c: &[u8]) -> Result<(CodeKeys, Offer), Error> {
        let k = self
            .k
            .as_ref()
            .ok_or_else(|| Error::usage("on_c before on_a"))?;
        let wrong = || {
            wrong_code(
                "the sender's code is another one (mistyped?), or someone else answered it first",
            )
        };
        if c.len() < CONFIRM_LEN + TAG_LEN {
            return Err(wrong());
        }
        let (confirm_s, sealed) = c.split_at(CONFIRM_LEN);
        if !bool::from(k.confirm_sender().as_ref().ct_eq(confirm_s)) {
            return Err(wrong());
        }
        let plain = k
            .offer_cipher()
            .decrypt(Nonce::from_slice(&[0u8; 12]), sealed)
            .map_err(|_| {
                Error::new(
                    ErrorCode::DecryptFailed,
                    "the sender's offer failed authentication (altered on the way)",
                )
            })?;
        let offer: Offer = std::str::from_utf8(&plain)
            .ok()
            .and_then(super::offer_json::read_offer)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Unsupported,
                    "the sender's offer is not one this version reads (not a JSON object with \
                     a version, PROTOCOL.md §14.3)",
                )
            })?;
        if offer.v != 1 {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "the sender's offer is version {}; this version reads 1",
                    offer.v
                ),
            ));
        }
        Ok((k.keys()?, offer))
    }
}
