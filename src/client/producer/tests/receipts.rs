//! The consumer's receipt and the verdict it makes (§12.2).

use super::*;

#[test]
fn a_receipt_confirms_the_delivery() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
    let Step::Receipt(req) = p.poll(&mut mem) else {
        panic!("the producer waits for the receipt")
    };
    assert_eq!(
        req.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=5",
            crate::protocol::channel::channel_id("TID")
        )
    );
    let mut c = receipt::Committer::new();
    c.update(b"0123456789");
    let ours = c.commitment();
    let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
    let h = vec![(PEER_HELLO, text.as_str())];
    p.on_receipt(200, &h, "http://h:1/p\n", &ours, None);
    let Step::Done(rep) = p.poll(&mut mem) else {
        panic!()
    };
    let r = rep.receipt.expect("a receipt");
    assert_eq!(r.bytes, 10);
    assert!(!r.authenticated);
}

/// Regression (#26): an encrypted send resolved on the receipt of a reader without keys
/// (anyone who knows the path, or the relay) for the ciphertext it stored.
#[test]
fn an_encrypted_send_needs_an_authenticated_receipt() {
    for accept_ciphertext in [false, true] {
        let mut mem = OriginMemory::new();
        let mut c = with_receipt(cfg(UploadMode::Auto, true, true));
        c.encrypted = true;
        if let Some(r) = c.receipt.as_mut() {
            r.ciphertext = accept_ciphertext;
        }
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        // the consumer's hello: receipts, but it does not decrypt
        streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
        assert!(!p.receipt_commits_to_plaintext());
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!("the producer waits for the receipt")
        };
        let mut wire = receipt::Committer::new();
        wire.update(b"age-rt ciphertext");
        let ours = wire.commitment();
        let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
        let h = vec![(PEER_HELLO, text.as_str())];
        p.on_receipt(200, &h, "", &ours, None);
        match (p.poll(&mut mem), accept_ciphertext) {
            (Step::Failed(e), false) => {
                assert_eq!(e.code, ErrorCode::Unconfirmed);
                assert!(e.message.contains("holds no key"), "{e}");
            }
            (Step::Done(rep), true) => {
                let r = rep.receipt.expect("a receipt");
                assert!(!r.authenticated);
                assert_eq!(r.bytes, 17);
            }
            (s, _) => panic!("{accept_ciphertext}: {s:?}"),
        }
    }
}

#[test]
fn without_a_receipt_promise_the_relay_verdict_stands() {
    for peer in [None, Some("httpipe=1"), Some("receipt")] {
        let mut mem = OriginMemory::new();
        let mut p =
            Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
        streamed_to_success(&mut p, &mut mem, peer);
        let Step::Done(rep) = p.poll(&mut mem) else {
            panic!("{peer:?}")
        };
        assert_eq!(rep.receipt, None);
    }
}

/// A producer whose upload the relay confirmed, waiting for a promised receipt.
fn awaiting_receipt() -> (Producer<Vec<u8>>, OriginMemory) {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Auto, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!("the producer waits for the receipt")
    };
    (p, mem)
}

#[test]
fn a_missing_or_bad_receipt_is_unconfirmed() {
    let ours = receipt::Committer::new().commitment();
    let cases: Vec<(u16, Option<&str>, ErrorCode)> = vec![
        (408, None, ErrorCode::Unconfirmed),
        (200, None, ErrorCode::Unconfirmed),
        (
            200,
            Some("httpipe-receipt=1; status=ok; bytes=3; digest=AAAA"),
            ErrorCode::Unconfirmed,
        ),
        (
            200,
            Some("httpipe-receipt=1; status=cancelled; bytes=0; digest=AAAA"),
            ErrorCode::PeerDisconnected,
        ),
        (403, None, ErrorCode::Forbidden),
    ];
    for (status, text, code) in cases {
        let (mut p, mut mem) = awaiting_receipt();
        let h: Vec<(&str, &str)> = text.map(|t| vec![(PEER_HELLO, t)]).unwrap_or_default();
        p.on_receipt(status, &h, "", &ours, None);
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!("{status} {text:?}")
        };
        assert_eq!(e.code, code, "{status} {text:?}: {}", e.message);
    }
    // the local backstop fired, or the network broke
    for f in [Failure::stopped(StopReason::Timeout, None), net()] {
        let (mut p, mut mem) = awaiting_receipt();
        p.on_failure(f);
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Unconfirmed, "{}", e.message);
    }
}
