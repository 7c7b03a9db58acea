//! Delivery receipts (`docs/PROTOCOL.md` §12) as pure functions: what the consumer commits to
//! while it releases bytes, the receipt text it sends, and the producer's verdict on the
//! receipt it gets. The adapters only make the Connect calls (§5.1) and feed bytes in.

use crate::protocol::base64::URL_SAFE_NO_PAD;
use hmac::Mac;
use subtle::ConstantTimeEq;
use xxhash_rust::xxh3::Xxh3;

use super::error::{Error, ErrorCode};
use super::rendezvous::auth_headers;
use super::request::Request;
use super::urls::{ConnectMode, RelayBase};
use crate::protocol::channel::{self, key_header as channel_key};
use crate::protocol::headers::HELLO;
use crate::protocol::hello::{
    self, item, ResumeHello, BYTES, CODE, DIGEST, END_VERSION, MAC_SEPARATOR, RECEIPT_VERSION,
    STATUS, VERSION_1,
};

/// What one side counted and hashed (§12.2): plaintext bytes released (consumer) or read
/// from the source (producer), and the digest of the commitments: XXH3-128 of the bytes, or
/// SHA-256 of an encrypted transfer's chunk tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commitment {
    pub bytes: u64,
    pub digest: Vec<u8>,
}

/// Counts bytes and, for a plain transfer, hashes them (§12.2). An encrypted transfer's
/// digest is the cipher's tag digest instead ([`Committer::with_digest`]).
#[derive(Clone, Default)]
pub struct Committer {
    bytes: u64,
    hasher: Xxh3,
}

impl Committer {
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn new() -> Self {
        Self::default()
    }

    /// Plain transfer: counts and hashes `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        self.hasher.update(bytes);
    }

    /// Encrypted transfer: counts `n` plaintext bytes (the digest comes from the cipher).
    pub fn count(&mut self, n: u64) {
        self.bytes += n;
    }

    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The commitment of a plain transfer so far.
    pub fn commitment(&self) -> Commitment {
        Commitment {
            bytes: self.bytes,
            digest: self.hasher.digest128().to_be_bytes().to_vec(),
        }
    }

    /// The commitment of an encrypted transfer: the byte count and the cipher's tag digest.
    pub fn with_digest(&self, digest: [u8; 32]) -> Commitment {
        Commitment {
            bytes: self.bytes,
            digest: digest.to_vec(),
        }
    }
}

/// How the consumer's side ended (§12.2 `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every byte released (and, `receipt: 'manual'`, confirmed by the application).
    Ok,
    /// The application cancelled the stream.
    Cancelled,
    /// The consumer failed with this code.
    Failed(ErrorCode),
}

impl Outcome {
    /// The receipt of a consumer that failed with `code`: an abort (the application's signal,
    /// or a page being closed, whose browser aborts its requests) is the application
    /// cancelling; anything else is `failed` with its code.
    pub fn of_error(code: ErrorCode) -> Outcome {
        match code {
            ErrorCode::Aborted => Outcome::Cancelled,
            code => Outcome::Failed(code),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Cancelled => "cancelled",
            Outcome::Failed(_) => "failed",
        }
    }

    /// The receipt call's `timeout` in seconds (§12.2).
    pub fn send_timeout_s(self) -> f64 {
        match self {
            Outcome::Ok => hello::RECEIPT_SEND_TIMEOUT_S,
            Outcome::Cancelled | Outcome::Failed(_) => hello::NEGATIVE_RECEIPT_TIMEOUT_S,
        }
    }

    /// Whether a call that failed below HTTP (or got a 503) is repeated within
    /// [`Outcome::send_timeout_s`] (§12.2): only the `ok` receipt, which a producer waits for;
    /// a negative one is sent once, so a consumer that failed against a relay that is gone
    /// ends at once instead of trying for half a minute.
    pub fn repeats(self) -> bool {
        self == Outcome::Ok
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A digest as the report shows it: lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(key: &[u8; 32], transfer: &str, text: &str) -> [u8; 32] {
    let mut m = crate::protocol::token::mac(key);
    m.update(transfer.as_bytes());
    m.update(b"\n");
    m.update(text.as_bytes());
    m.finalize().into_bytes().into()
}

/// The receipt text the consumer sends (§12.2); `key` is the receipt key of an encrypted
/// transfer (adds the MAC).
pub fn receipt_text(
    transfer: &str,
    outcome: Outcome,
    c: &Commitment,
    key: Option<&[u8; 32]>,
) -> String {
    let mut t = format!(
        "{RECEIPT_VERSION}=1; {STATUS}={}; {BYTES}={}; {DIGEST}={}",
        outcome.as_str(),
        c.bytes,
        b64(&c.digest)
    );
    if let Outcome::Failed(code) = outcome {
        t.push_str(&format!("; {CODE}={}", code.as_str()));
    }
    if let Some(k) = key {
        let m = mac(k, transfer, &t);
        t.push_str(MAC_SEPARATOR);
        t.push_str(&b64(&m));
    }
    t
}

/// A verified receipt, as `send()` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptReport {
    /// Plaintext bytes the consumer released.
    pub bytes: u64,
    /// The digest, lowercase hex.
    pub digest: String,
    /// Signed with the transfer's receipt key (encrypted transfers).
    pub authenticated: bool,
}

fn unconfirmed(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Unconfirmed,
        format!("the receiver's receipt (PROTOCOL.md §12.2) {why}; the delivery is not confirmed"),
    )
}

/// The producer's error for a negative receipt `text` (§12.2): `cancelled`, or `failed` with
/// the receiver's code (also the error's peer code, for a producer that acts on it: a wrong
/// passphrase); `how_far` says where the receiver stopped ("after 3 of the 5 bytes sent"). `None` when
/// `text` is no negative receipt.
pub fn negative_verdict(text: &str, how_far: &str) -> Option<Error> {
    if item(text, RECEIPT_VERSION) != Some(VERSION_1) {
        return None;
    }
    match item(text, STATUS)? {
        "cancelled" => Some(Error::new(
            ErrorCode::PeerDisconnected,
            format!("the receiver cancelled {how_far}"),
        )),
        "failed" => {
            let code = item(text, CODE).unwrap_or("an error");
            let e = Error::new(
                ErrorCode::PeerDisconnected,
                format!("the receiver failed with {code} {how_far}"),
            );
            Some(match ErrorCode::parse(code) {
                Some(peer) => e.with_peer(peer),
                None => e,
            })
        }
        _ => None,
    }
}

/// The producer's verdict on receipt `text` for transfer `transfer`: `ours` is what the
/// producer sent; `key` the receipt key of an encrypted transfer (then the MAC is required).
pub fn verify(
    text: &str,
    transfer: &str,
    ours: &Commitment,
    key: Option<&[u8; 32]>,
) -> Result<ReceiptReport, Error> {
    if item(text, RECEIPT_VERSION) != Some("1") {
        return Err(unconfirmed("is not a version 1 receipt"));
    }
    let bytes = item(text, BYTES).and_then(|b| b.parse::<u64>().ok());
    let digest = item(text, DIGEST).and_then(|d| URL_SAFE_NO_PAD.decode(d));
    let (Some(bytes), Some(digest)) = (bytes, digest) else {
        return Err(unconfirmed("is malformed (no byte count or digest)"));
    };
    // A negative receipt needs no MAC: it can only make the send fail, which anyone on the
    // path could do anyway by cutting it; and a consumer that failed on a wrong key has none.
    let how_far = format!("after {bytes} of the {} bytes sent", ours.bytes);
    if let Some(e) = negative_verdict(text, &how_far) {
        return Err(e);
    }
    if item(text, STATUS) != Some("ok") {
        return Err(unconfirmed("has no known status"));
    }
    let authenticated = match key {
        Some(k) => {
            // the MAC is the last item (§12.2): after the last `;`
            let at = text
                .rfind(';')
                .filter(|&i| text[i..].starts_with(MAC_SEPARATOR));
            let Some((signed, m)) = at.map(|i| (&text[..i], &text[i + MAC_SEPARATOR.len()..]))
            else {
                return Err(unconfirmed("has no MAC, but the transfer is encrypted"));
            };
            let Some(m) = URL_SAFE_NO_PAD.decode(m.trim()) else {
                return Err(unconfirmed("has a malformed MAC"));
            };
            let want = mac(k, transfer, signed);
            if m.len() != want.len() || !bool::from(want.ct_eq(&m)) {
                return Err(unconfirmed(
                    "does not verify: it was not made with this transfer's key",
                ));
            }
            true
        }
        None => false,
    };
    if bytes != ours.bytes {
        return Err(unconfirmed(format!(
            "says {bytes} bytes arrived, but {} were sent",
            ours.bytes
        )));
    }
    if digest != ours.digest {
        return Err(unconfirmed("has another digest than the bytes sent"));
    }
    Ok(ReceiptReport {
        bytes,
        digest: hex(&digest),
        authenticated,
    })
}

/// The producer's end (§12.2, "The producer's end"): `httpipe-end=1; bytes=N; digest=D`, the
/// items its channel calls carry once its source ended; `c` is what a receipt is checked
/// against.
pub fn end_items(c: &Commitment) -> String {
    format!(
        "{END_VERSION}={VERSION_1}; {BYTES}={}; {DIGEST}={}",
        c.bytes,
        b64(&c.digest)
    )
}

fn not_the_end(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Truncated,
        format!(
            "the stream ended cleanly, but {why}: the end is not the sender's (PROTOCOL.md §12.2)"
        ),
    )
}

/// The consumer's verdict on the producer's hello that answered its `ok` receipt (`None`: the
/// answer had none), when the producer promised its end (§12.2): `Ok` when it states the
/// end the consumer released (`ours`, its receipt's commitment) — also in a failure notice of
/// a producer stopped after its source ended; else `TRUNCATED`.
pub fn check_end(peer_hello: Option<&str>, ours: &Commitment) -> Result<(), Error> {
    let Some(text) = peer_hello else {
        return Err(not_the_end("the sender did not state its end"));
    };
    if item(text, END_VERSION) != Some(VERSION_1) {
        // a failure notice without an end: the producer failed before its source ended
        return Err(not_the_end(match ResumeHello::parse(text) {
            Some(ResumeHello::Failed { code }) => {
                format!("the sender failed with {code} before its end")
            }
            _ => "the sender did not state its end".to_string(),
        }));
    }
    // with one (a failure notice included: the producer stopped after its source ended), the
    // end decides
    let bytes = item(text, BYTES).and_then(|b| b.parse::<u64>().ok());
    let digest = item(text, DIGEST).and_then(|d| URL_SAFE_NO_PAD.decode(d));
    let (Some(bytes), Some(digest)) = (bytes, digest) else {
        return Err(not_the_end("the sender's end is malformed"));
    };
    if bytes != ours.bytes {
        return Err(not_the_end(format!(
            "the sender sent {bytes} bytes and {} arrived",
            ours.bytes
        )));
    }
    if digest != ours.digest {
        return Err(not_the_end(format!(
            "the {bytes} bytes that arrived are not the ones the sender sent (another digest)"
        )));
    }
    Ok(())
}

/// A fresh transfer id (§12.1) from 16 random bytes.
pub fn transfer_id(random: &[u8; hello::TRANSFER_ID_BYTES]) -> String {
    b64(random)
}

/// A fresh transfer id (§12.1) from the system's (or the JS runtime's) randomness.
#[cfg(feature = "crypto")]
pub fn new_transfer_id() -> Result<String, Error> {
    let mut b = [0u8; hello::TRANSFER_ID_BYTES];
    getrandom::fill(&mut b).map_err(|e| {
        Error::new(
            ErrorCode::Unsupported,
            format!("no randomness for a transfer id: {e}"),
        )
    })?;
    Ok(transfer_id(&b))
}

/// Where a consumer's receipt goes (§12.2): from `Consumer::receipt_plan`.
#[derive(Debug, Clone)]
pub struct ReceiptPlan {
    pub(crate) relay: RelayBase,
    pub(crate) path: String,
    pub(crate) token: Option<String>,
    /// The producer's transfer id.
    pub transfer: String,
    /// The producer states its end (its hello said `attest`, §12.2): an `ok` receipt's
    /// meeting checks it.
    pub attest: bool,
    /// The producer did not encrypt (its hello said `plain`, §12.1): the receipt commits to
    /// the bytes as they arrived, also from a consumer that decrypts them.
    pub plain: bool,
}

impl ReceiptPlan {
    /// The Connect call that delivers the receipt: `key` is the receipt key of an encrypted
    /// transfer.
    pub fn request(
        &self,
        outcome: Outcome,
        released: &Commitment,
        key: Option<&[u8; 32]>,
    ) -> Result<Request, Error> {
        let text = receipt_text(&self.transfer, outcome, released, key);
        channel_request(
            &self.relay,
            &self.path,
            &self.transfer,
            ConnectMode::AwaitWriter,
            outcome.send_timeout_s(),
            self.token.as_deref(),
            Some(text),
        )
        // a delivery the relay did not answer in time hung: it is made again (§12.2)
        .map(Request::hung_on_timeout)
        .map(|r| match outcome {
            // a side that failed may be gone before its peer reads up to the cut (§5.1)
            Outcome::Cancelled | Outcome::Failed(_) => r.into_lingering_last_word(),
            Outcome::Ok => r.into_last_word(),
        })
    }
}

/// The Connect call on the transfer's channel (§5.1, §12.2): the producer waits for the
/// receipt (`AwaitReader`, no hello), the consumer sends it (`AwaitWriter`, hello = receipt).
pub fn channel_request(
    relay: &RelayBase,
    path: &str,
    transfer: &str,
    mode: ConnectMode,
    timeout_s: f64,
    token: Option<&str>,
    hello: Option<String>,
) -> Result<Request, Error> {
    let url = relay.channel_url(path, mode, &channel::channel_id(transfer), timeout_s)?;
    let mut headers = auth_headers(token);
    headers.push(channel_key(transfer));
    if let Some(h) = hello {
        headers.push((HELLO, h));
    }
    let mut req = Request::get(url, headers);
    req.timeout_ms = Some((timeout_s + super::rendezvous::LOCAL_TIMEOUT_MARGIN_S) * 1000.0);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::request::OnTimeout;

    fn plain(bytes: &[u8]) -> Commitment {
        let mut c = Committer::new();
        c.update(bytes);
        c.commitment()
    }

    #[test]
    fn an_abort_is_a_cancel_and_receipts_are_last_words() {
        // A page being closed aborts its download before `pagehide` (CI, session 7): its
        // receipt says `cancelled`, and goes as a last word that outlives the page.
        assert_eq!(Outcome::of_error(ErrorCode::Aborted), Outcome::Cancelled);
        assert_eq!(
            Outcome::of_error(ErrorCode::DecryptFailed),
            Outcome::Failed(ErrorCode::DecryptFailed)
        );
        let plan = ReceiptPlan {
            relay: RelayBase::parse("http://127.0.0.1:1").unwrap(),
            path: "/p".into(),
            transfer: "T".into(),
            token: None,
            attest: false,
            plain: false,
        };
        // a negative one lingers after its caller left (§5.1): its peer may read up to the
        // cut only after this side's process or page is gone; an `ok` one is waited for
        for (o, lingers) in [
            (Outcome::Ok, false),
            (Outcome::Cancelled, true),
            (Outcome::Failed(ErrorCode::Network), true),
        ] {
            let r = plan.request(o, &plain(b""), None).unwrap();
            assert!(r.last_word);
            // a delivery the relay did not answer in time hung: made again (§11)
            assert_eq!(r.on_timeout, OnTimeout::Hung, "{o:?}");
            assert_eq!(r.url.ends_with("&linger=60"), lingers, "{o:?}: {}", r.url);
            // hung up after the wait for it: the relay keeps the hello, and an open call kept
            // a Node process alive 15 s after its receive() failed
            if lingers {
                assert_eq!(r.timeout_ms, Some(2000.0), "{o:?}");
            }
        }
    }

    #[test]
    fn plain_receipt_verifies() {
        let c = plain(b"hello");
        let t = receipt_text("T", Outcome::Ok, &c, None);
        assert!(
            t.starts_with("httpipe-receipt=1; status=ok; bytes=5; digest="),
            "{t}"
        );
        assert!(!t.contains("mac="));
        let r = verify(&t, "T", &c, None).unwrap();
        assert_eq!(r.bytes, 5);
        assert_eq!(
            r.digest,
            hex(&xxhash_rust::xxh3::xxh3_128(b"hello").to_be_bytes())
        );
        assert!(!r.authenticated);
    }

    #[test]
    fn mismatches_are_unconfirmed() {
        let c = plain(b"hello");
        let other = plain(b"hellO");
        let t = receipt_text("T", Outcome::Ok, &other, None);
        assert_eq!(
            verify(&t, "T", &c, None).unwrap_err().code,
            ErrorCode::Unconfirmed
        );
        let short = plain(b"hell");
        let t = receipt_text("T", Outcome::Ok, &short, None);
        let e = verify(&t, "T", &c, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unconfirmed);
        assert!(
            e.message.contains("4 bytes arrived, but 5"),
            "{}",
            e.message
        );
        for bad in [
            "",
            "status=ok",
            "httpipe-receipt=1; status=ok; bytes=x; digest=AA",
        ] {
            assert_eq!(
                verify(bad, "T", &c, None).unwrap_err().code,
                ErrorCode::Unconfirmed
            );
        }
    }

    #[test]
    fn encrypted_receipt_needs_the_key() {
        let c = Committer::new().with_digest([7; 32]);
        let key = [1u8; 32];
        let t = receipt_text("T", Outcome::Ok, &c, Some(&key));
        assert!(verify(&t, "T", &c, Some(&key)).unwrap().authenticated);
        // another key, another transfer, no MAC, a changed count: all refused
        for (text, id, k) in [
            (t.clone(), "T", [2u8; 32]),
            (t.clone(), "U", key),
            (receipt_text("T", Outcome::Ok, &c, None), "T", key),
            (t.replace("bytes=0", "bytes=1"), "T", key),
        ] {
            let e = verify(&text, id, &c, Some(&k)).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unconfirmed, "{text}");
        }
    }

    #[test]
    fn negative_receipts() {
        let c = plain(b"abc");
        let t = receipt_text("T", Outcome::Cancelled, &plain(b"a"), None);
        let e = verify(&t, "T", &c, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(
            e.message.contains("cancelled after 1 of the 3 bytes sent"),
            "{}",
            e.message
        );
        let t = receipt_text("T", Outcome::Failed(ErrorCode::DecryptFailed), &c, None);
        assert!(t.contains("; code=DECRYPT_FAILED"));
        let e = verify(&t, "T", &c, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::PeerDisconnected);
        assert!(e.message.contains("DECRYPT_FAILED"), "{}", e.message);
        // on an encrypted transfer too, without a MAC (a wrong key has none to make)
        let t = receipt_text("T", Outcome::Failed(ErrorCode::WrongKey), &c, None);
        let e = verify(&t, "T", &c, Some(&[1; 32])).unwrap_err();
        assert_eq!(e.code, ErrorCode::PeerDisconnected, "{}", e.message);
        // the receiver's code travels as the peer code (a sender can wait for a retry)
        assert_eq!(e.peer(), Some(ErrorCode::WrongKey));
        // a cancel names none; an unknown code is kept in the words only
        let t = receipt_text("T", Outcome::Cancelled, &c, None);
        assert_eq!(verify(&t, "T", &c, None).unwrap_err().peer(), None);
        let e = verify(
            "httpipe-receipt=1; status=failed; bytes=0; digest=AA; code=NEW_THING",
            "T",
            &c,
            None,
        )
        .unwrap_err();
        assert_eq!((e.code, e.peer()), (ErrorCode::PeerDisconnected, None));
        assert!(e.message.contains("NEW_THING"), "{}", e.message);
    }

    #[test]
    fn ids_and_channel_calls() {
        let id = transfer_id(&[0xff; 16]);
        assert_eq!(id.len(), 22);
        assert!(hello::valid_value(&id));
        let base = RelayBase::parse("http://h:1").unwrap();
        let r = channel_request(
            &base,
            "/p",
            &id,
            ConnectMode::AwaitWriter,
            30.0,
            Some("tok"),
            Some("httpipe-receipt=1".into()),
        )
        .unwrap();
        // the URL names the channel derived from the id; the id itself is a header (§5.1)
        assert_eq!(
            r.url,
            format!(
                "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=30",
                channel::channel_id(&id)
            )
        );
        assert!(!r.url.contains(&id));
        assert!(r.headers.contains(&(channel::KEY_HEADER, id.clone())));
        assert!(r
            .headers
            .contains(&(HELLO, "httpipe-receipt=1".to_string())));
        assert_eq!(r.timeout_ms, Some(32_000.0));
        // the producer's wait for the receipt: its timeout is "no receipt" (§11)
        assert_eq!(r.on_timeout, OnTimeout::NoPeer);
    }
}
