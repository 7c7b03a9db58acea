//! Short codes (`PROTOCOL.md` §14), sans-IO: the code (`7-guitarist-revenge`), the SPAKE2
//! exchange of each side as a state machine that takes the bytes read from a pipe and returns
//! the bytes to write next, the keys derived from it (the data path, the age identity and
//! recipient of the transfer), the sealed offer, the channel requests and how to read their
//! answers. The adapters (`crate::wasm::code`) only move bytes.
//!
//! Sender: [`CodeSender::new`] → `A` (POST pipe `a`) → [`CodeSender::on_b`] with pipe `b`'s
//! bytes → always POST its `c`, then fail `WRONG_CODE` or send to [`CodeKeys`].
//! Receiver: [`Code::parse`] → [`CodeReceiver::on_a`] with pipe `a`'s bytes → POST its
//! `B ‖ confirm_r` to `b` → [`CodeReceiver::on_c`] with pipe `c`'s bytes → [`CodeKeys`] and
//! the [`Offer`], or `WRONG_CODE`.

mod words;

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hkdf::Hkdf;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use spake2::{Ed25519Group, Identity as SpakeIdentity, Password, Spake2};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::error::{classify_response, Error, ErrorCode};
use super::rendezvous::auth_headers;
use super::request::{Headers, Request};
use super::status::StatusLog;
use super::urls::{ConnectMode, RelayBase};
use crate::crypto::{FixedRandom, Identity, RandomSource};
use crate::protocol::control::Code as RefusalCode;
use crate::protocol::headers::ERROR_CODE;

pub use words::{EVEN, ODD};

/// The SPAKE2 identity of both sides (symmetric mode), and the prefix of every HKDF `info`.
pub const SPAKE2_IDENTITY: &str = "httpipe-code-v1";
/// Seconds each of steps 2–4 waits for the other side (§14.2).
pub const CODE_STEP_S: f64 = 30.0;
/// Seconds the receiver waits for a sender on the channel before `WRONG_CODE` (§14.2 step 2).
pub const SENDER_WAIT_S: f64 = 10.0;
/// Highest channel number.
pub const CHANNEL_MAX: u16 = 999;
/// Channels tried first (1 to this); after [`NARROW_TRIES`] busy ones, 1 to [`CHANNEL_MAX`].
pub const CHANNEL_NARROW: u16 = 99;
/// Busy channels in 1–99 before the sender picks in 1–999.
pub const NARROW_TRIES: u32 = 3;
/// Busy channels after which the sender gives up (`RELAY_ERROR`).
pub const MAX_TRIES: u32 = 20;
/// A SPAKE2 message: one side byte and a compressed Ed25519 point.
pub const SPAKE2_MSG_LEN: usize = 33;
/// A key confirmation.
pub const CONFIRM_LEN: usize = 32;
/// The Poly1305 tag of the sealed offer.
const TAG_LEN: usize = 16;

const INFO_CONFIRM_RECEIVER: &str = "httpipe-code-v1 confirm receiver";
const INFO_CONFIRM_SENDER: &str = "httpipe-code-v1 confirm sender";
const INFO_OFFER: &str = "httpipe-code-v1 offer";
const INFO_PATH: &str = "httpipe-code-v1 path";
const INFO_IDENTITY: &str = "httpipe-code-v1 identity";

/// A `WRONG_CODE` error: its message starts "wrong code: ".
fn wrong_code(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::WrongCode, format!("wrong code: {message}"))
}

/// A POST on pipe `b` (receiver) or `c` (sender) found another writer there: someone else is in
/// this code's exchange (§14.4).
pub fn busy_pipe(pipe: Pipe) -> Error {
    match pipe {
        Pipe::C => wrong_code("someone else is answering on this code's channel; make a new code"),
        Pipe::A | Pipe::B => wrong_code("someone else answered this code first"),
    }
}

// ---- the code ---------------------------------------------------------------------------

/// A short code `N-ODD-EVEN` (§14.1): the channel, then a word of the PGP "odd" list (three
/// syllables) and one of its "even" list (two syllables), one random byte each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    channel: u16,
    odd: u8,
    even: u8,
}

impl Code {
    /// The code on `channel` (1–999) with the words of `bytes`.
    pub fn new(channel: u16, bytes: [u8; 2]) -> Result<Code, Error> {
        if !(1..=CHANNEL_MAX).contains(&channel) {
            return Err(Error::usage(format!(
                "a code's channel is 1–{CHANNEL_MAX}, not {channel}"
            )));
        }
        Ok(Code {
            channel,
            odd: bytes[0],
            even: bytes[1],
        })
    }

    /// Reads a code as a person typed it: case-insensitive, parts separated by any run of
    /// `-` and spaces. `WRONG_CODE` naming the part that is wrong.
    pub fn parse(input: &str) -> Result<Code, Error> {
        let lower = input.to_lowercase();
        let parts: Vec<&str> = lower
            .split(|c: char| c == '-' || c.is_whitespace())
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() != 3 {
            return Err(wrong_code(format!(
                "{input:?} is not a code: a code is a number and two words, like 7-guitarist-revenge"
            )));
        }
        let n = parts[0];
        let channel = (!n.is_empty()
            && n.len() <= 3
            && n.bytes().all(|b| b.is_ascii_digit())
            && !n.starts_with('0'))
        .then(|| n.parse::<u16>().ok())
        .flatten()
        .ok_or_else(|| {
            wrong_code(format!(
                "the code's number {n:?} is wrong: it is 1–999, as the 7 in 7-guitarist-revenge"
            ))
        })?;
        let word = |w: &str, list: &[&str; 256], other: &[&str; 256], which: &str| {
            if let Some(i) = list.iter().position(|x| *x == w) {
                return Ok(i as u8);
            }
            let hint = if other.contains(&w) {
                " (it is a word of the other place: are the two words swapped?)"
            } else {
                ""
            };
            Err(wrong_code(format!(
                "the code's {which} word {w:?} is not one a code uses{hint}"
            )))
        };
        let odd = word(parts[1], &ODD, &EVEN, "first")?;
        let even = word(parts[2], &EVEN, &ODD, "second")?;
        Ok(Code { channel, odd, even })
    }

    /// The channel number N.
    pub fn channel(&self) -> u16 {
        self.channel
    }

    /// The stream path of one of the channel's pipes `a`, `b`, `c`: `/code/v1/N/{pipe}`.
    pub fn pipe_path(&self, pipe: Pipe) -> String {
        pipe_path(self.channel, pipe)
    }
}

impl fmt::Display for Code {
    /// The canonical form, the SPAKE2 password: `7-guitarist-revenge`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{}",
            self.channel, ODD[self.odd as usize], EVEN[self.even as usize]
        )
    }
}

/// The channel for the sender's next try, after `busy` busy channels, from a random `r`:
/// 1–99 for the first [`NARROW_TRIES`] tries, then 1–999 (§14.2 step 1).
pub fn pick_channel(busy: u32, r: u32) -> u16 {
    let range = if busy < NARROW_TRIES {
        CHANNEL_NARROW
    } else {
        CHANNEL_MAX
    };
    (r % u32::from(range)) as u16 + 1
}

/// The sender's next code after `busy` busy channels: a channel by [`pick_channel`] and two
/// random words. `RELAY_ERROR` after [`MAX_TRIES`] busy channels in a row.
pub fn next_code(busy: u32, rng: &mut dyn RandomSource) -> Result<Code, Error> {
    if busy >= MAX_TRIES {
        return Err(Error::new(
            ErrorCode::RelayError,
            format!("{busy} channels in a row were busy on the relay; try again later"),
        ));
    }
    let mut r = [0u8; 6];
    rng.fill(&mut r)?;
    let channel = pick_channel(busy, u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
    Code::new(channel, [r[4], r[5]])
}

// ---- the pipes --------------------------------------------------------------------------

/// One of a channel's three pipes (§14.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    /// Sender → receiver: `A`.
    A,
    /// Receiver → sender: `B ‖ confirm_r`.
    B,
    /// Sender → receiver: `confirm_s ‖ seal(offer)`.
    C,
}

fn pipe_path(channel: u16, pipe: Pipe) -> String {
    let p = match pipe {
        Pipe::A => 'a',
        Pipe::B => 'b',
        Pipe::C => 'c',
    };
    format!("/code/v1/{channel}/{p}")
}

/// The requests of the exchange on a relay (with the caller's token).
#[derive(Debug, Clone)]
pub struct CodeRelay {
    base: RelayBase,
    token: Option<String>,
}

/// What a POST on a pipe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// `200`: the pipe is ours; its status log follows.
    Held,
    /// `400 another-sender`: someone else writes on this pipe.
    Busy,
}

impl CodeRelay {
    pub fn new(base: RelayBase, token: Option<String>) -> Self {
        CodeRelay { base, token }
    }

    /// `POST /code/v1/N/{pipe}`; the adapter sends the bytes as a complete body. The sender's
    /// `a` waits as long as the caller's `timeout` (`None`: until cancelled); `b` and `c`
    /// [`CODE_STEP_S`].
    pub fn post(&self, channel: u16, pipe: Pipe, timeout_s: Option<f64>) -> Result<Request, Error> {
        let mut r = Request::post(
            self.base.data_url(&pipe_path(channel, pipe))?,
            auth_headers(self.token.as_deref()),
        );
        r.timeout_ms = match pipe {
            Pipe::A => timeout_s.map(|t| t * 1000.0),
            Pipe::B | Pipe::C => Some(CODE_STEP_S * 1000.0),
        };
        Ok(r)
    }

    /// `GET /code/v1/N/{pipe}`, waiting at most [`CODE_STEP_S`].
    pub fn get(&self, channel: u16, pipe: Pipe) -> Result<Request, Error> {
        let mut r = Request::get(
            self.base.data_url(&pipe_path(channel, pipe))?,
            auth_headers(self.token.as_deref()),
        );
        r.timeout_ms = Some(CODE_STEP_S * 1000.0);
        Ok(r)
    }

    /// The receiver's first question: is a sender waiting on the channel (`await-writer`,
    /// [`SENDER_WAIT_S`])?
    pub fn await_sender(&self, channel: u16) -> Result<Request, Error> {
        let mut r = Request::get(
            self.base.connect_url(
                &pipe_path(channel, Pipe::A),
                ConnectMode::AwaitWriter,
                Some(SENDER_WAIT_S),
            )?,
            auth_headers(self.token.as_deref()),
        );
        // the relay answers 408 after SENDER_WAIT_S; the client's own limit is a backstop
        r.timeout_ms = Some((SENDER_WAIT_S + 5.0) * 1000.0);
        Ok(r)
    }
}

/// The answer's head to a POST on a pipe (`body`: the error body when not 200).
pub fn on_post(
    status: u16,
    headers: &dyn Headers,
    body: &str,
    what: &str,
) -> Result<Posted, Error> {
    if status == 200 {
        return Ok(Posted::Held);
    }
    let code = headers.get(ERROR_CODE).and_then(|c| RefusalCode::parse(&c));
    if status == 400 && code == Some(RefusalCode::AnotherSender) {
        return Ok(Posted::Busy);
    }
    Err(classify_response(status, body, what))
}

/// The end of a POST's status log: `Ok` once the reader took the bytes.
pub fn on_post_log(log: &[u8], what: &str) -> Result<(), Error> {
    let mut s = StatusLog::new();
    s.push(log);
    s.finish(what).map(|_| ())
}

/// The answer to [`CodeRelay::await_sender`]: `408` → `WRONG_CODE` (no sender waits).
pub fn on_await_sender(status: u16, body: &str, what: &str) -> Result<(), Error> {
    match status {
        200 => Ok(()),
        408 => Err(wrong_code(
            "no sender is waiting for this code (it was used already, has expired, or was mistyped)",
        )),
        _ => Err(classify_response(status, body, what)),
    }
}

/// The answer to a GET on a pipe: its bytes.
pub fn on_get(status: u16, body: Vec<u8>, what: &str) -> Result<Vec<u8>, Error> {
    if status == 200 {
        Ok(body)
    } else {
        Err(classify_response(
            status,
            &String::from_utf8_lossy(&body),
            what,
        ))
    }
}

// ---- keys -------------------------------------------------------------------------------

/// What the exchange gives the data transfer (§14.3).
pub struct CodeKeys {
    /// The data path `/code/v1/x/{32 hex}`.
    pub path: String,
    /// The transfer's age identity `AGE-SECRET-KEY-1…` (the receiver decrypts with it).
    pub identity: Zeroizing<String>,
    /// Its recipient `age1…` (the sender encrypts to it).
    pub recipient: String,
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
struct Shared(Zeroizing<Vec<u8>>);

impl Shared {
    fn derive<const N: usize>(&self, info: &str) -> Zeroizing<[u8; N]> {
        let mut out = Zeroizing::new([0u8; N]);
        // ok: N ≤ 32, far below HKDF-SHA256's limit
        let _ = Hkdf::<Sha256>::new(None, &self.0).expand(info.as_bytes(), out.as_mut());
        out
    }

    fn confirm_receiver(&self) -> Zeroizing<[u8; 32]> {
        self.derive(INFO_CONFIRM_RECEIVER)
    }

    fn confirm_sender(&self) -> Zeroizing<[u8; 32]> {
        self.derive(INFO_CONFIRM_SENDER)
    }

    fn offer_cipher(&self) -> ChaCha20Poly1305 {
        let key = self.derive::<32>(INFO_OFFER);
        ChaCha20Poly1305::new(Key::from_slice(key.as_ref()))
    }

    fn keys(&self) -> Result<CodeKeys, Error> {
        let path = self.derive::<16>(INFO_PATH);
        let path = format!("/code/v1/x/{}", hex(path.as_ref()));
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

/// The producer's metadata, sealed in pipe `c` (§14.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// The offer's version (1).
    #[serde(default)]
    pub v: u32,
    /// The file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Plaintext bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The media type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
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
                "the receiver used another code, or someone else tried this one; make a new code",
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
        let offer = serde_json::to_vec(&self.offer).unwrap_or_default();
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
        let offer: Offer = serde_json::from_slice(&plain).map_err(|e| {
            Error::new(
                ErrorCode::Unsupported,
                format!("the sender's offer is not one this version reads: {e}"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::OsRandom;

    fn exchange(send: &str, recv: &str) -> (SenderReply, Result<(CodeKeys, Offer), Error>) {
        let offer = Offer::new(Some("report.pdf".into()), Some(1 << 20), None);
        let s = CodeSender::new(Code::parse(send).unwrap(), offer, &mut OsRandom).unwrap();
        let mut r = CodeReceiver::new(&Code::parse(recv).unwrap(), &mut OsRandom).unwrap();
        let b = r.on_a(s.message_a()).unwrap();
        let reply = s.on_b(&b);
        let got = r.on_c(&reply.c);
        (reply, got)
    }

    #[test]
    fn next_code_narrow_channels_first_then_gives_up() {
        // channel from the first four bytes (little-endian), then the two words
        let mut fixed = FixedRandom::new(vec![200, 0, 0, 0, 0, 255]);
        let code = next_code(0, &mut fixed).unwrap();
        assert_eq!(code.channel(), 200 % 99 + 1);
        assert_eq!(
            code.to_string(),
            format!("{}-adroitness-zulu", 200 % 99 + 1)
        );
        let wide = next_code(
            NARROW_TRIES,
            &mut FixedRandom::new(vec![200, 0, 0, 0, 0, 0]),
        );
        assert_eq!(wide.unwrap().channel(), 201);
        let e = next_code(MAX_TRIES, &mut OsRandom).unwrap_err();
        assert_eq!(e.code, ErrorCode::RelayError);
        assert!(e.message.contains("busy"), "{}", e.message);
    }

    #[test]
    fn wrong_code_errors_say_so() {
        for e in [
            busy_pipe(Pipe::B),
            busy_pipe(Pipe::C),
            Code::parse("7-notaword-revenge").unwrap_err(),
        ] {
            assert_eq!(e.code, ErrorCode::WrongCode);
            assert!(e.message.starts_with("wrong code: "), "{}", e.message);
        }
    }

    #[test]
    fn round_trip_derives_the_same_keys_on_both_sides() {
        let (reply, got) = exchange("7-guitarist-revenge", "7 Guitarist  REVENGE");
        let sent = reply.result.unwrap();
        let (keys, offer) = got.unwrap();
        assert_eq!(sent.path, keys.path);
        assert_eq!(*sent.identity, *keys.identity);
        assert_eq!(sent.recipient, keys.recipient);
        assert!(
            keys.path.starts_with("/code/v1/x/") && keys.path.len() == 11 + 32,
            "{}",
            keys.path
        );
        assert!(keys.identity.starts_with("AGE-SECRET-KEY-1"));
        assert!(keys.recipient.starts_with("age1"));
        let id: Identity = keys.identity.parse().unwrap();
        assert_eq!(id.to_recipient().unwrap().to_string(), keys.recipient);
        assert_eq!(offer.name.as_deref(), Some("report.pdf"));
        assert_eq!(offer.size, Some(1 << 20));
        assert_eq!(offer.content_type, None);
        assert_eq!(
            reply.c.len(),
            CONFIRM_LEN + TAG_LEN + serde_json::to_vec(&offer).unwrap().len()
        );
    }

    #[test]
    fn each_exchange_has_its_own_keys() {
        let (a, _) = exchange("7-guitarist-revenge", "7-guitarist-revenge");
        let (b, _) = exchange("7-guitarist-revenge", "7-guitarist-revenge");
        assert_ne!(a.result.unwrap().path, b.result.unwrap().path);
    }

    #[test]
    fn a_wrong_code_fails_on_both_sides() {
        for other in ["7-guitarist-reward", "8-guitarist-revenge"] {
            let (reply, got) = exchange("7-guitarist-revenge", other);
            assert_eq!(reply.result.unwrap_err().code, ErrorCode::WrongCode);
            assert_eq!(got.unwrap_err().code, ErrorCode::WrongCode);
        }
    }

    #[test]
    fn tampered_messages() {
        let code = Code::parse("12-adroitness-aardvark").unwrap();
        let new = || {
            let s = CodeSender::new(code, Offer::new(None, None, None), &mut OsRandom).unwrap();
            let r = CodeReceiver::new(&code, &mut OsRandom).unwrap();
            (s, r)
        };
        // A altered: the receiver computes another key; both sides fail
        let (s, mut r) = new();
        let mut a = s.message_a().to_vec();
        a[5] ^= 1;
        let b = match r.on_a(&a) {
            Ok(b) => b,
            Err(e) => {
                assert_eq!(e.code, ErrorCode::WrongCode);
                return;
            }
        };
        let reply = s.on_b(&b);
        assert_eq!(reply.result.unwrap_err().code, ErrorCode::WrongCode);
        assert_eq!(r.on_c(&reply.c).unwrap_err().code, ErrorCode::WrongCode);
        // A of the wrong length
        let (s, mut r) = new();
        assert_eq!(
            r.on_a(&s.message_a()[1..]).unwrap_err().code,
            ErrorCode::WrongCode
        );
        // B altered (point or confirmation) or short: the sender refuses, still answers c,
        // and the receiver refuses that
        for cut in [0usize, 40, 64] {
            let (s, mut r) = new();
            let mut b = r.on_a(s.message_a()).unwrap();
            b[cut] ^= 0x80;
            let reply = s.on_b(&b);
            assert_eq!(
                reply.result.unwrap_err().code,
                ErrorCode::WrongCode,
                "{cut}"
            );
            assert_eq!(
                r.on_c(&reply.c).unwrap_err().code,
                ErrorCode::WrongCode,
                "{cut}"
            );
        }
        let (s, mut r) = new();
        let b = r.on_a(s.message_a()).unwrap();
        let reply = s.on_b(&b[..40]);
        assert_eq!(reply.result.unwrap_err().code, ErrorCode::WrongCode);
        assert_eq!(r.on_c(&reply.c).unwrap_err().code, ErrorCode::WrongCode);
        // c altered: in the confirmation → WRONG_CODE; in the sealed offer → DECRYPT_FAILED
        for (at, code) in [
            (3usize, ErrorCode::WrongCode),
            (40, ErrorCode::DecryptFailed),
        ] {
            let (s, mut r) = new();
            let b = r.on_a(s.message_a()).unwrap();
            let mut c = s.on_b(&b).c;
            c[at] ^= 1;
            assert_eq!(r.on_c(&c).unwrap_err().code, code, "{at}");
            assert_eq!(r.on_c(&c[..20]).unwrap_err().code, ErrorCode::WrongCode);
        }
    }

    #[test]
    fn parse_and_normalise() {
        let c = Code::parse("7-guitarist-revenge").unwrap();
        assert_eq!(c.channel(), 7);
        assert_eq!(c.to_string(), "7-guitarist-revenge");
        for s in [
            "7 guitarist revenge",
            "  7--Guitarist---REVENGE ",
            "7 - guitarist - revenge",
            "7-guitarist\trevenge",
        ] {
            assert_eq!(Code::parse(s).unwrap(), c, "{s}");
        }
        assert_eq!(
            Code::parse("999-yucatan-zulu").unwrap().to_string(),
            "999-yucatan-zulu"
        );
        assert_eq!(
            Code::parse("1-adroitness-aardvark").unwrap(),
            Code::new(1, [0, 0]).unwrap()
        );
        let wrong = |s: &str, needle: &str| {
            let e = Code::parse(s).unwrap_err();
            assert_eq!(e.code, ErrorCode::WrongCode, "{s}");
            assert!(e.message.contains(needle), "{s}: {}", e.message);
        };
        wrong("", "not a code");
        wrong("7-guitarist", "not a code");
        wrong("7-guitarist-revenge-x", "not a code");
        wrong("07-guitarist-revenge", "number \"07\"");
        wrong("0-guitarist-revenge", "number \"0\"");
        wrong("1000-guitarist-revenge", "number \"1000\"");
        wrong("x-guitarist-revenge", "number \"x\"");
        wrong("+7-guitarist-revenge", "number");
        wrong("7-guitarst-revenge", "first word \"guitarst\"");
        wrong("7-guitarist-revenue", "second word \"revenue\"");
        wrong("7-revenge-guitarist", "swapped");
    }

    #[test]
    fn the_word_lists() {
        let all: std::collections::HashSet<&str> = EVEN.iter().chain(ODD.iter()).copied().collect();
        assert_eq!(all.len(), 512);
        // PGP word list spot checks (the PDF's example E582 → "topmost Istanbul")
        assert_eq!((EVEN[0xE5], ODD[0x82]), ("topmost", "istanbul"));
        assert_eq!((EVEN[0], ODD[0]), ("aardvark", "adroitness"));
        assert_eq!((EVEN[0xFF], ODD[0xFF]), ("zulu", "yucatan"));
        assert_eq!((ODD[0x69], EVEN[0xA9]), ("guitarist", "revenge"));
        for w in all {
            assert!(w.bytes().all(|b| b.is_ascii_lowercase()), "{w}");
        }
    }

    #[test]
    fn channels() {
        for r in [0u32, 1, 98, 99, 12345, u32::MAX] {
            assert!((1..=99).contains(&pick_channel(0, r)));
            assert!((1..=99).contains(&pick_channel(2, r)));
            assert!((1..=999).contains(&pick_channel(3, r)));
        }
        assert_eq!(pick_channel(3, 998), 999);
        assert!(Code::new(0, [0, 0]).is_err());
        assert!(Code::new(1000, [0, 0]).is_err());
        assert_eq!(
            Code::new(5, [1, 2]).unwrap().pipe_path(Pipe::B),
            "/code/v1/5/b"
        );
    }

    #[test]
    fn requests_and_answers() {
        let relay = CodeRelay::new(RelayBase::parse("http://h:1").unwrap(), Some("t".into()));
        let a = relay.post(7, Pipe::A, None).unwrap();
        assert_eq!(a.url, "http://h:1/code/v1/7/a");
        assert_eq!(a.timeout_ms, None);
        assert_eq!(a.headers, vec![("Authorization", "Bearer t".to_string())]);
        assert_eq!(
            relay.post(7, Pipe::A, Some(2.0)).unwrap().timeout_ms,
            Some(2000.0)
        );
        assert_eq!(
            relay.post(7, Pipe::C, None).unwrap().timeout_ms,
            Some(30_000.0)
        );
        assert_eq!(relay.get(7, Pipe::B).unwrap().url, "http://h:1/code/v1/7/b");
        assert_eq!(
            relay.await_sender(7).unwrap().url,
            "http://h:1/connect/v0/code/v1/7/a?mode=await-writer&timeout=10"
        );
        let busy: Vec<(&str, &str)> = vec![("x-httpipe-error", "another-sender")];
        assert_eq!(on_post(200, &busy, "", "POST").unwrap(), Posted::Held);
        assert_eq!(
            on_post(400, &busy, "[ERROR] x", "POST").unwrap(),
            Posted::Busy
        );
        let none: Vec<(&str, &str)> = vec![];
        assert_eq!(
            on_post(400, &none, "[ERROR] x", "POST").unwrap_err().code,
            ErrorCode::RelayError
        );
        assert_eq!(
            on_post(401, &none, "", "POST").unwrap_err().code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            on_await_sender(408, "", "GET").unwrap_err().code,
            ErrorCode::WrongCode
        );
        assert!(on_await_sender(200, "http://h:1/code/v1/7/a\n", "GET").is_ok());
        assert_eq!(on_get(200, vec![1, 2], "GET").unwrap(), vec![1, 2]);
        assert_eq!(
            on_get(403, vec![], "GET").unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert!(on_post_log(b"[INFO] Waiting\n[STATE:TRANSFER_SUCCESSFUL]\n", "POST").is_ok());
        assert_eq!(
            on_post_log(b"[INFO] x\n[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n", "POST")
                .unwrap_err()
                .code,
            ErrorCode::PeerDisconnected
        );
    }

    #[test]
    fn offers_ignore_unknown_fields() {
        let o: Offer = serde_json::from_str(r#"{"v":1,"name":"a","future":true}"#).unwrap();
        assert_eq!(o, Offer::new(Some("a".into()), None, None));
        assert_eq!(
            serde_json::to_string(&Offer::new(
                Some("r.pdf".into()),
                Some(3),
                Some("application/pdf".into())
            ))
            .unwrap(),
            r#"{"v":1,"name":"r.pdf","size":3,"type":"application/pdf"}"#
        );
    }
}
