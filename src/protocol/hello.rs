//! Hellos and receipts (`docs/PROTOCOL.md` §5.1, §12): the items peers exchange through the
//! Connect API's `X-Httpipe-Hello` / `X-Httpipe-Peer-Hello` headers.
//!
//! A hello is `item; item; ...`, an item `key` or `key=value`. Unknown items are ignored, so
//! later versions can add some. Everything here is plain data and pure functions.

/// The version item: `httpipe=1` (§12.1).
pub const VERSION: &str = "httpipe";
/// The one version this code speaks.
pub const VERSION_1: &str = "1";
/// Producer: the transfer's id (§12.1).
pub const TRANSFER: &str = "transfer";
/// Producer: will wait for a receipt; consumer: sends receipts (§12.1).
pub const RECEIPT: &str = "receipt";
/// Consumer: `receipt=decrypted`, it decrypts and commits to the plaintext (§12.1); a bare
/// `receipt` commits to the bytes as they arrive.
pub const DECRYPTED: &str = "decrypted";
/// Both: this side resumes after a break (§12.3).
pub const RESUME: &str = "resume";
/// Producer (with `receipt`): it states its end on the transfer's channel (§12.2, "The
/// producer's end").
pub const ATTEST: &str = "attest";
/// Producer (with `receipt`): it sends its stream as it is, not encrypted by it, so a consumer
/// that decrypts it anyway commits to the bytes as they arrived (§12.1, §12.2).
pub const PLAIN: &str = "plain";
/// Producer: it keeps a presence call open on the transfer's presence channel until its
/// verdict (§12.5).
pub const PRESENCE: &str = "presence";
/// The hello of a presence call, from either side (§12.5).
pub const PRESENCE_HELLO: &str = "httpipe-presence=1";
/// The `timeout` of a producer's presence call, in seconds (§12.5).
pub const PRESENCE_CALL_S: f64 = 25.0;
/// Presence checks in a row that find no producer before a consumer gives up (§12.5).
pub const PRESENCE_MISSES: u32 = 2;
/// The first item of a producer's end, `httpipe-end=1; bytes=N; digest=D` (§12.2), in the
/// hello of its channel calls once its source ended; `bytes` and `digest` are the receipt's.
pub const END_VERSION: &str = "httpipe-end";
/// The first item of a resume call's hello (§12.3), from either side.
pub const RESUME_VERSION: &str = "httpipe-resume";
/// Producer (resume call): the first wire byte it can send again.
pub const FROM: &str = "from";
/// Producer (resume call): the wire bytes it has sent.
pub const TO: &str = "to";
/// Consumer (resume call): the wire bytes it holds.
pub const OFFSET: &str = "offset";
/// Producer (resume call): it failed for another reason than the break, with this code.
pub const FAILED: &str = "failed";
/// Seconds a failed producer's notice waits for the consumer's resume call (§12.3): longer than
/// a stall takes to notice (`STALL_AFTER_S` + a stall call), so that a consumer whose transport
/// hides the cut (WebKitGTK's `fetch` never settles a reset HTTP/2 body, §10) still meets it.
pub const FAILURE_NOTICE_TIMEOUT_S: f64 = STALL_AFTER_S + STALL_CALL_S + 3.0;
/// Milliseconds `send()` waits for its failure notice to be taken before it rejects; the call
/// goes on in the background after that (§12.3).
pub const FAILURE_NOTICE_WAIT_MS: f64 = 2000.0;
/// Seconds a side keeps trying to meet the other after a break, by default (§12.3).
pub const RESUME_TIME_S: f64 = 60.0;
/// The longest `linger` a relay grants a channel call's hello, in seconds (§5.1).
pub const LINGER_MAX_S: f64 = 60.0;
/// Seconds a side's last word lingers on the channel after it left (§5.1 `linger`): its peer's
/// default resume time, within which a peer that still reads bytes in flight meets it.
pub const LAST_WORD_LINGER_S: f64 = RESUME_TIME_S;
/// The longest single resume call, in seconds (§12.3).
pub const RESUME_CALL_MAX_S: f64 = 30.0;
/// Seconds a side waits with bytes between it and its peer (a producer's upload that takes
/// nothing, a consumer's read that gets nothing) before it asks whether the connection
/// stalled (§12.4).
pub const STALL_AFTER_S: f64 = 10.0;
/// The `timeout` of a stall call, in seconds (§12.4).
pub const STALL_CALL_S: f64 = 2.0;
/// Milliseconds before a resume call that failed below HTTP (or got a 503) is repeated.
pub const RESUME_RETRY_MS: f64 = 1000.0;
/// Bytes of a transfer id before encoding (16 → 22 base64url characters).
pub const TRANSFER_ID_BYTES: usize = 16;
/// Seconds a consumer's `ok` receipt call waits for the producer, repeated while the relay
/// can't be reached (§12.2).
pub const RECEIPT_SEND_TIMEOUT_S: f64 = 30.0;
/// Seconds a consumer's `cancelled` / `failed` receipt call waits for the producer, made once
/// (§12.2): a producer that cares is on the channel already or within seconds.
pub const NEGATIVE_RECEIPT_TIMEOUT_S: f64 = FAILURE_NOTICE_TIMEOUT_S;
/// Seconds a producer waits for the receipt by default (§12.2).
pub const RECEIPT_TIMEOUT_S: f64 = 120.0;

/// Receipt items (§12.2), in their order.
pub const RECEIPT_VERSION: &str = "httpipe-receipt";
/// The receipt's outcome item (`ok`, `cancelled`, `failed`).
pub const STATUS: &str = "status";
/// The receipt's byte count item.
pub const BYTES: &str = "bytes";
/// The receipt's digest item (hex).
pub const DIGEST: &str = "digest";
/// A `failed` receipt's error code item.
pub const CODE: &str = "code";
/// What comes before the MAC in a receipt's text: the MAC covers `ID \n` and this prefix.
pub const MAC_SEPARATOR: &str = "; mac=";
/// HKDF info prefix of the receipt key (the transfer id follows).
pub const RECEIPT_KEY_INFO: &[u8] = b"httpipe receipt v1";

/// The items of a hello, in order. Malformed items are skipped.
pub fn items(hello: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    hello.split(';').filter_map(|item| {
        let item = item.trim();
        if item.is_empty() {
            return None;
        }
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        let key_ok = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        key_ok.then_some((k, v))
    })
}

/// The value of item `key` (`Some("")` for a bare item), if present.
pub fn item<'a>(hello: &'a str, key: &str) -> Option<&'a str> {
    items(hello)
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.unwrap_or(""))
}

/// True if `value` may be an item's value: visible ASCII without `;`, `,` or spaces.
pub fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
}

/// What a peer's rendezvous hello says (§12.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerHello {
    /// `httpipe=1` was there.
    pub v1: bool,
    /// (producer) `transfer=ID`: the transfer id (§12.1).
    pub transfer: Option<String>,
    /// `receipt`: this side sends (consumer) or waits for (producer) a receipt (§12.2).
    pub receipt: bool,
    /// (consumer) `receipt=decrypted`.
    pub decrypts: bool,
    /// `resume` (§12.3).
    pub resume: bool,
    /// (producer) `attest` with `receipt`: it states its end (§12.2).
    pub attests: bool,
    /// (producer) `plain` with `receipt`: it did not encrypt the stream (§12.1).
    pub plain: bool,
    /// (producer) `presence`: it keeps a presence call open until its verdict (§12.5).
    pub presence: bool,
}

impl PeerHello {
    /// Reads a hello; unknown and malformed items are ignored.
    pub fn parse(hello: &str) -> PeerHello {
        let v1 = item(hello, VERSION) == Some(VERSION_1);
        PeerHello {
            v1,
            transfer: item(hello, TRANSFER)
                .filter(|t| valid_value(t))
                .map(str::to_string),
            receipt: v1 && item(hello, RECEIPT).is_some(),
            decrypts: v1 && item(hello, RECEIPT) == Some(DECRYPTED),
            resume: v1 && item(hello, RESUME).is_some(),
            attests: v1 && item(hello, RECEIPT).is_some() && item(hello, ATTEST).is_some(),
            plain: v1 && item(hello, RECEIPT).is_some() && item(hello, PLAIN).is_some(),
            presence: v1 && item(hello, PRESENCE).is_some(),
        }
    }
}

/// A producer's rendezvous hello: `httpipe=1; transfer=ID; presence[; receipt; attest[;
/// plain]][; resume]` (a producer that waits for a receipt states its end, §12.2, and says
/// when it did not encrypt, `encrypted` false, §12.1).
pub fn producer_hello(transfer: &str, receipt: bool, encrypted: bool, resume: bool) -> String {
    let mut h = format!("{VERSION}={VERSION_1}; {TRANSFER}={transfer}; {PRESENCE}");
    if receipt {
        h.push_str(&format!("; {RECEIPT}; {ATTEST}"));
        if !encrypted {
            h.push_str(&format!("; {PLAIN}"));
        }
    }
    if resume {
        h.push_str(&format!("; {RESUME}"));
    }
    h
}

/// The key of a transfer's presence channel (§12.5, §5.1): its transfer id and `-presence`.
pub fn presence_key(transfer: &str) -> String {
    format!("{transfer}-presence")
}

/// A consumer's rendezvous hello: `httpipe=1[; receipt[=decrypted]][; resume]`.
pub fn consumer_hello(receipt: bool, decrypts: bool, resume: bool) -> String {
    let mut h = format!("{VERSION}={VERSION_1}");
    match (receipt, decrypts) {
        (false, _) => {}
        (true, false) => h.push_str(&format!("; {RECEIPT}")),
        (true, true) => h.push_str(&format!("; {RECEIPT}={DECRYPTED}")),
    }
    if resume {
        h.push_str(&format!("; {RESUME}"));
    }
    h
}

/// What a resume call's hello says (§12.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeHello {
    /// The producer can send wire bytes `from..to` again.
    Offer {
        /// The first wire byte it can send again.
        from: u64,
        /// The wire bytes sent so far.
        to: u64,
    },
    /// The consumer holds `offset` wire bytes.
    Ask {
        /// Wire bytes held.
        offset: u64,
    },
    /// The producer failed for another reason than the break (its source, its application),
    /// with this error code: nothing more comes.
    Failed {
        /// The producer's error code.
        code: String,
    },
}

impl ResumeHello {
    /// Parses a resume call's hello; `None` for anything else (e.g. a receipt, §12.2).
    pub fn parse(hello: &str) -> Option<ResumeHello> {
        if item(hello, RESUME_VERSION) != Some(VERSION_1) {
            return None;
        }
        let num = |k: &str| {
            item(hello, k)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
        };
        let failed = item(hello, FAILED).filter(|c| valid_value(c));
        match (num(FROM), num(TO), num(OFFSET), failed) {
            (Some(from), Some(to), None, None) if from <= to => {
                Some(ResumeHello::Offer { from, to })
            }
            (None, None, Some(offset), None) => Some(ResumeHello::Ask { offset }),
            (None, None, None, Some(code)) => Some(ResumeHello::Failed { code: code.into() }),
            _ => None,
        }
    }

    /// The hello's text.
    pub fn text(&self) -> String {
        match self {
            ResumeHello::Offer { from, to } => {
                format!("{RESUME_VERSION}={VERSION_1}; {FROM}={from}; {TO}={to}")
            }
            ResumeHello::Ask { offset } => {
                format!("{RESUME_VERSION}={VERSION_1}; {OFFSET}={offset}")
            }
            ResumeHello::Failed { code } => {
                format!("{RESUME_VERSION}={VERSION_1}; {FAILED}={code}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_round_trip() {
        let p = PeerHello::parse(&producer_hello("abc_-9", true, true, false));
        assert_eq!(
            p,
            PeerHello {
                v1: true,
                transfer: Some("abc_-9".into()),
                receipt: true,
                decrypts: false,
                resume: false,
                attests: true,
                plain: false,
                presence: true,
            }
        );
        assert!(PeerHello::parse(&producer_hello("T", true, false, false)).plain);
        // `plain` says what a receipt commits to: nothing without `receipt`
        assert_eq!(
            producer_hello("T", false, false, false),
            "httpipe=1; transfer=T; presence"
        );
        assert!(!PeerHello::parse("httpipe=1; transfer=T; plain").plain);
        let c = PeerHello::parse(&consumer_hello(true, false, false));
        assert!(c.v1 && c.receipt && !c.decrypts && c.transfer.is_none() && !c.resume);
        let d = PeerHello::parse(&consumer_hello(true, true, true));
        assert!(d.receipt && d.decrypts && d.resume);
        assert!(!PeerHello::parse(&consumer_hello(false, true, false)).receipt);
        assert_eq!(
            producer_hello("T", false, true, true),
            "httpipe=1; transfer=T; presence; resume"
        );
        assert!(!c.presence, "a consumer keeps no presence");
        assert_eq!(presence_key("T"), "T-presence");
        assert!(PeerHello::parse("httpipe=1; transfer=T; resume").resume);
        // `attest` promises nothing without `receipt` (its end travels with the receipt)
        assert!(!PeerHello::parse("httpipe=1; transfer=T; attest").attests);
        assert!(!PeerHello::parse("httpipe=1; transfer=T; receipt").attests);
        assert!(!c.attests && !d.attests);
        assert!(
            !PeerHello::parse("transfer=T; resume").resume,
            "no version, no promise"
        );
    }

    #[test]
    fn resume_hellos() {
        for h in [
            ResumeHello::Offer { from: 0, to: 0 },
            ResumeHello::Offer {
                from: 5,
                to: 1 << 40,
            },
            ResumeHello::Ask { offset: 65_552 },
            ResumeHello::Failed {
                code: "STEP_FAILED".into(),
            },
        ] {
            assert_eq!(ResumeHello::parse(&h.text()), Some(h));
        }
        assert_eq!(
            ResumeHello::Ask { offset: 7 }.text(),
            "httpipe-resume=1; offset=7"
        );
        for bad in [
            "httpipe-resume=2; offset=1",
            "offset=1",
            "httpipe-resume=1",
            "httpipe-resume=1; offset=-1",
            "httpipe-resume=1; offset=+1",
            "httpipe-resume=1; offset=99999999999999999999999",
            "httpipe-resume=1; from=9; to=3",
            "httpipe-resume=1; from=1; to=3; offset=2",
            "httpipe-receipt=1; status=ok; bytes=1; digest=AA",
        ] {
            assert_eq!(ResumeHello::parse(bad), None, "{bad}");
        }
        // an offer with the producer's end after it (§12.2) is the offer to an older reader
        assert_eq!(
            ResumeHello::parse("httpipe-resume=1; from=0; to=5; httpipe-end=1; bytes=5; digest=AA"),
            Some(ResumeHello::Offer { from: 0, to: 5 })
        );
    }

    #[test]
    fn unknown_and_malformed_items_are_ignored() {
        let p = PeerHello::parse(" httpipe=1 ;; future=x; Bad=1; receipt ; transfer=a,b");
        assert!(p.v1 && p.receipt);
        assert_eq!(p.transfer, None, "a value with a comma is not an id");
        // Without the version item, nothing is promised.
        assert!(!PeerHello::parse("receipt; transfer=x").receipt);
        assert!(!PeerHello::parse("httpipe=2; receipt").receipt);
        assert_eq!(PeerHello::parse(""), PeerHello::default());
    }
}
