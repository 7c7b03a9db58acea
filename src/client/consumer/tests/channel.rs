//! What the consumer says on the transfer's channel: its receipt (§12.2), that it left (§12.5).

use super::*;

#[test]
fn a_producer_that_waits_gets_a_receipt_call() {
    let mut c = Consumer::new(cfg(true, false)).unwrap();
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; receipt")];
    c.on_response(200, &h, "http://h:1/p\n");
    assert_eq!(c.receipt_transfer(), Some("TID"));
    let mut k = receipt::Committer::new();
    k.update(b"abc");
    let req = c
        .receipt_plan()
        .unwrap()
        .request(Outcome::Ok, &k.commitment(), None)
        .unwrap();
    assert_eq!(
        req.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=30",
            crate::protocol::channel::channel_id("TID")
        )
    );
    let (_, hello) = req
        .headers
        .iter()
        .find(|(n, _)| *n == crate::protocol::headers::HELLO)
        .unwrap();
    assert!(hello.starts_with("httpipe-receipt=1; status=ok; bytes=3; digest="));
    // an older producer promised no end: the ok receipt checks none
    let plan = c.receipt_plan().unwrap();
    assert!(!plan.attest);
    let d = plan.delivery(Outcome::Ok, &k.commitment(), None, 0.0);
    assert!(!d.unwrap().checks_end());
    // one that says `attest` (§12.2): the ok receipt checks its end, a cancelled one not
    let mut a = Consumer::new(cfg(true, false)).unwrap();
    a.poll();
    let ha: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; receipt; attest")];
    a.on_response(200, &ha, "http://h:1/p\n");
    let plan = a.receipt_plan().unwrap();
    let ok = plan.delivery(Outcome::Ok, &k.commitment(), None, 0.0);
    assert!(ok.unwrap().checks_end());
    let cancelled = plan.delivery(Outcome::Cancelled, &k.commitment(), None, 0.0);
    assert!(!cancelled.unwrap().checks_end());
    // a consumer that decrypts (its receipt signed with the file key's receipt key) checks
    // none: its decryption authenticated the end, so a receipt its producer never takes (gone
    // after the last byte) is undelivered, not TRUNCATED
    let signed = plan.delivery(Outcome::Ok, &k.commitment(), Some(&[7; 32]), 0.0);
    assert!(!signed.unwrap().checks_end());
    // receipts turned off: the producer's wish is ignored
    let mut off = cfg(true, false);
    off.receipt = false;
    let mut c = Consumer::new(off).unwrap();
    let Step::Rendezvous(r) = c.poll() else {
        panic!()
    };
    assert!(r
        .headers
        .contains(&(crate::protocol::headers::HELLO, "httpipe=1".into())));
    c.on_response(200, &h, "http://h:1/p\n");
    assert!(c.receipt_plan().is_none());
    // a decrypting consumer says so
    let mut d = Consumer::new(cfg(true, true)).unwrap();
    let Step::Rendezvous(r) = d.poll() else {
        panic!()
    };
    assert!(r.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe=1; receipt=decrypted".into()
    )));
}

/// §12.5: a consumer that fails after its rendezvous and before its stream started tells a
/// producer that keeps presence (its abort is `cancelled`, a refusal `failed` with its code);
/// not after `TRUNCATED`, not without presence, not once the stream started.
#[test]
fn a_consumer_that_gives_up_before_its_stream_tells_a_present_producer() {
    let met = |hello: &str| {
        let mut c = Consumer::new(cfg(true, false)).unwrap();
        let Step::Rendezvous(_) = c.poll() else {
            panic!()
        };
        let h: &[(&str, &str)] = &[(PEER_HELLO, hello)];
        c.on_response(200, &h, "http://h:1/p\n");
        let Step::Get(_) = c.poll() else { panic!() };
        c
    };
    let present = "httpipe=1; transfer=TID; presence; receipt";
    let mut c = met(present);
    c.on_failure(Failure::stopped(StopReason::User, None));
    let Step::Failed(e) = c.poll() else { panic!() };
    assert_eq!(e.code, ErrorCode::Aborted);
    let words = c.left_notice(e.code);
    assert_eq!(words.calls.len(), 1);
    let call = &words.calls[0];
    let presence = crate::protocol::channel::channel_id("TID-presence");
    assert!(call
        .url
        .contains(&format!("mode=await-writer&channel={presence}&timeout=15")));
    assert!(call
        .headers
        .iter()
        .any(|(_, v)| v.contains("status=cancelled; bytes=0")));
    assert_eq!(words.wait_ms, 2000.0);

    // refused: `failed` with the code
    let mut c = met(present);
    c.on_head(403, &NoHeaders);
    let Step::ReadErrorBody = c.poll() else {
        panic!()
    };
    c.on_error_body("[ERROR] forbidden\n");
    let Step::Failed(e) = c.poll() else { panic!() };
    let words = c.left_notice(e.code);
    let hello = &words.calls[0].headers;
    let code = e.code.as_str();
    assert!(hello
        .iter()
        .any(|(_, v)| v.contains("status=failed") && v.contains(code)));

    // the producer vanished or withdrew: nobody to tell
    let truncated = Error::new(ErrorCode::Truncated, "gone");
    assert!(met(present).left_notice(truncated.code).calls.is_empty());
    // a producer without presence (curl, an older version) waits on nothing of ours
    let aborted = Error::new(ErrorCode::Aborted, "stop");
    let old = met("httpipe=1; transfer=TID; receipt");
    assert!(old.left_notice(aborted.code).calls.is_empty());
    // once the stream started, the transfer's own receipts say it (§12.2)
    let mut c = met(present);
    c.on_head(200, &NoHeaders);
    let Step::Stream(..) = c.poll() else { panic!() };
    assert!(c.left_notice(aborted.code).calls.is_empty());
}

/// §12.5: the producer's hello counts from the rendezvous answer's head — a consumer that
/// fails while the body is still read (aborted then) tells that producer too (found by an
/// adversarial run: the sender waited forever).
#[test]
fn a_consumer_that_fails_while_the_rendezvous_body_is_read_tells_the_producer() {
    let mut c = Consumer::new(cfg(true, false)).unwrap();
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; presence; receipt")];
    c.on_rendezvous_head(200, &h);
    c.on_failure(Failure::stopped(StopReason::User, None));
    let Step::Failed(e) = c.poll() else { panic!() };
    assert_eq!(e.code, ErrorCode::Aborted);
    assert_eq!(c.left_notice(e.code).calls.len(), 1);
    // a refusal's head says nothing about a producer
    let mut c = Consumer::new(cfg(true, false)).unwrap();
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    c.on_rendezvous_head(408, &h);
    c.on_failure(Failure::stopped(StopReason::User, None));
    let Step::Failed(e) = c.poll() else { panic!() };
    assert!(c.left_notice(e.code).calls.is_empty());
}
