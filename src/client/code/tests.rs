//! Unit tests of the code, its keys and the exchange's messages.

use super::relay::{Answer, Posted};
use super::spake::TAG_LEN;
use super::*;
use crate::client::urls::RelayBase;
use crate::crypto::{FixedRandom, Identity, OsRandom};

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
    let wide = next_code(3, &mut FixedRandom::new(vec![200, 0, 0, 0, 0, 0]));
    assert_eq!(wide.unwrap().channel(), 201);
    let wider = next_code(6, &mut FixedRandom::new(vec![0x10, 0x27, 0, 0, 0, 0]));
    assert_eq!(wider.unwrap().channel(), 10_000 % 9999 + 1);
    let e = next_code(MAX_TRIES, &mut OsRandom).unwrap_err();
    assert_eq!(e.code, ErrorCode::RelayBusy);
    assert!(
        e.message.contains("the relay's code channels are busy"),
        "{}",
        e.message
    );
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
        CONFIRM_LEN + TAG_LEN + offer_json::write_offer(&offer).len()
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
    assert_eq!(Code::parse("9999 Yucatan zulu").unwrap().channel(), 9999);
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
    wrong("10000-guitarist-revenge", "number \"10000\"");
    wrong("0999-guitarist-revenge", "number \"0999\"");
    wrong("x-guitarist-revenge", "number \"x\"");
    wrong("+7-guitarist-revenge", "number");
    wrong("7-guitarst-revenge", "first word \"guitarst\"");
    wrong("7-guitarist-revenue", "second word \"revenue\"");
    wrong("7-revenge-guitarist", "swapped");
}

#[test]
fn the_word_lists() {
    assert_eq!((EVEN.words().count(), ODD.words().count()), (256, 256));
    let all: std::collections::HashSet<&str> = EVEN.words().chain(ODD.words()).collect();
    assert_eq!(all.len(), 512);
    // PGP word list spot checks (the PDF's example E582 → "topmost Istanbul")
    assert_eq!((EVEN.word(0xE5), ODD.word(0x82)), ("topmost", "istanbul"));
    assert_eq!((EVEN.word(0), ODD.word(0)), ("aardvark", "adroitness"));
    assert_eq!((EVEN.word(0xFF), ODD.word(0xFF)), ("zulu", "yucatan"));
    assert_eq!((ODD.word(0x69), EVEN.word(0xA9)), ("guitarist", "revenge"));
    for b in 0..=255u8 {
        assert_eq!(
            (EVEN.byte_of(EVEN.word(b)), ODD.byte_of(ODD.word(b))),
            (Some(b), Some(b))
        );
    }
    for w in all {
        assert!(w.bytes().all(|b| b.is_ascii_lowercase()), "{w}");
    }
}

#[test]
fn channels() {
    // 1–99 for 3 tries, 1–999 for 3, then 1–9999 (§14.2 step 1), uniform in each
    for r in [0u32, 1, 98, 99, 12345, u32::MAX] {
        assert!((1..=99).contains(&pick_channel(0, r)));
        assert!((1..=99).contains(&pick_channel(2, r)));
        assert!((1..=999).contains(&pick_channel(3, r)));
        assert!((1..=999).contains(&pick_channel(5, r)));
        assert!((1..=9999).contains(&pick_channel(6, r)));
        assert!((1..=9999).contains(&pick_channel(MAX_TRIES - 1, r)));
    }
    assert_eq!(pick_channel(3, 998), 999);
    assert_eq!(pick_channel(6, 9998), 9999);
    assert_eq!(pick_channel(u32::MAX, 9998), 9999);
    assert!(Code::new(0, [0, 0]).is_err());
    assert!(Code::new(9999, [0, 0]).is_ok());
    assert!(Code::new(10000, [0, 0]).is_err());
    assert_eq!(
        Code::new(5, [1, 2]).unwrap().pipe_path(Pipe::B),
        "/code/v1/5/b"
    );
}

#[test]
fn requests() {
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
}

/// A whole answer to `what`, with `headers` and `body`.
fn answer(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut a = Answer::head("POST http://h:1/code/v1/7/a".into(), status, &headers);
    a.body = body.to_vec();
    a
}

#[test]
fn answers() {
    let busy = [("x-httpipe-error", "another-sender")];
    let log = b"[INFO] Waiting\n[STATE:TRANSFER_SUCCESSFUL]\n";
    assert!(answer(200, &[], log).held());
    assert_eq!(answer(200, &busy, log).posted().unwrap(), Posted::Held);
    assert_eq!(
        answer(400, &busy, b"[ERROR] x").posted().unwrap(),
        Posted::Busy
    );
    assert!(!answer(400, &busy, b"[ERROR] x").held());
    let posted = |status, body: &[u8]| answer(status, &[], body).posted().unwrap_err();
    assert_eq!(posted(400, b"[ERROR] x").code, ErrorCode::RelayError);
    assert_eq!(posted(401, b"").code, ErrorCode::Unauthorized);
    let cut = posted(200, b"[INFO] x\n[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
    assert_eq!(cut.code, ErrorCode::PeerDisconnected);
    assert!(
        cut.message.contains("POST http://h:1/code/v1/7/a"),
        "{}",
        cut.message
    );
    let e = answer(408, &[], b"").sender_waits().unwrap_err();
    assert_eq!(e.code, ErrorCode::WrongCode);
    assert!(e.message.contains("no sender is waiting"), "{}", e.message);
    assert!(answer(200, &[], b"http://h:1/code/v1/7/a\n")
        .sender_waits()
        .is_ok());
    assert_eq!(answer(200, &[], &[1, 2]).got().unwrap(), vec![1, 2]);
    assert_eq!(
        answer(403, &[], b"").got().unwrap_err().code,
        ErrorCode::Forbidden
    );
    // pipe a without its sender (§14.5 rule 2): taken a moment ago, or the sender left
    let gone = answer(
        404,
        &[("x-httpipe-error", "no-sender")],
        b"[ERROR] No sender",
    )
    .got()
    .unwrap_err();
    assert_eq!(gone.code, ErrorCode::WrongCode);
    assert!(
        gone.message.contains("no sender is waiting"),
        "{}",
        gone.message
    );
    // a per-address limit (§9, §14.5): RELAY_BUSY with the relay's words
    let limit = b"[ERROR] Too many short-code requests from your address at once (at most 16)";
    for e in [
        answer(429, &[], limit).posted().unwrap_err(),
        answer(429, &[], limit).sender_waits().unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::RelayBusy);
        assert!(e.message.contains("from your address"), "{}", e.message);
    }
}

#[test]
fn offers_ignore_unknown_fields() {
    let o = offer_json::read_offer(r#"{"v":1,"name":"a","future":true}"#).unwrap();
    assert_eq!(o, Offer::new(Some("a".into()), None, None));
    assert_eq!(
        offer_json::write_offer(&Offer::new(
            Some("r.pdf".into()),
            Some(3),
            Some("application/pdf".into())
        )),
        r#"{"v":1,"name":"r.pdf","size":3,"type":"application/pdf"}"#
    );
}

#[test]
fn offers_read_absent_and_null_fields_as_unset_and_need_a_version() {
    let written = offer_json::write_offer(&Offer::new(None, Some(7), None));
    assert_eq!(written, r#"{"v":1,"name":null,"size":7,"type":null}"#);
    // what earlier versions wrote (absent fields) and what they read (null)
    for text in [r#"{"v":1,"size":7}"#, written.as_str()] {
        let o = offer_json::read_offer(text).unwrap();
        assert_eq!(o, Offer::new(None, Some(7), None));
    }
    for bad in [r#"{"size":7}"#, r#"{"v":"1"}"#, "[]", "{"] {
        assert_eq!(offer_json::read_offer(bad), None, "{bad}");
    }
}

#[test]
fn a_codes_transfer_is_age_rt_by_the_name_options_use() {
    use crate::crypto::Format;
    assert_eq!(CodeKeys::FORMAT, Format::AgeRt);
    // the wasm driver hands `format: CodeKeys::FORMAT.name()` to `send`, which parses it back
    assert_eq!(CodeKeys::FORMAT.name(), "age-rt");
    for f in [Format::Age, Format::AgeRt] {
        assert_eq!(f.name().parse::<Format>().ok(), Some(f));
    }
    assert_eq!("agert".parse::<Format>().ok(), Some(Format::AgeRt));
    assert!("age-v1".parse::<Format>().is_err());
}
