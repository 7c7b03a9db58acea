//! Resuming a cut or stalled upload (§12.3, §12.4).

use super::*;

/// §12.3: a cut streaming upload meets the consumer on the channel with its window, goes
/// on at the consumer's offset on the Data API channel, and counts the resume.
#[test]
fn a_cut_upload_resumes_at_the_consumers_offset() {
    let mut mem = OriginMemory::new();
    let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
    c.resume_s = Some(10.0);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(r) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(r.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe=1; transfer=TID; presence; receipt; attest; plain; resume".into()
    )));
    let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
    // the answer names a cluster node (§13.3) ...
    p.on_response(200, &h, "http://10.0.0.11:8080/p\n");
    assert!(p.resumes());
    let Step::Stream(first) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(first.url, "http://10.0.0.11:8080/p");
    // while it streams, a failure of its own is told on the channel, as a last word
    let aborted = Error::new(ErrorCode::Aborted, "gone");
    let notice = p
        .failure_notice(&aborted)
        .expect("a notice while streaming");
    assert!(notice.last_word);
    assert!(notice.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; failed=ABORTED".into()
    )));
    p.observe(1000.0, 100, 500);
    let cut = Failure::network(Cause {
        name: String::new(),
        message: "reset".into(),
    });
    p.on_stream_failed(StreamFailure {
        failure: cut,
        replay: None,
        response_started: true,
        source_error: None,
    });
    let Step::Receipt(call) = p.poll(&mut mem) else {
        panic!("the producer meets the consumer on the channel")
    };
    assert_eq!(
        call.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=10",
            crate::protocol::channel::channel_id("TID")
        )
    );
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; from=100; to=500".into()
    )));
    // nobody yet (408): call again; then the consumer asks for byte 300
    let none = receipt::Committer::new().commitment();
    p.on_receipt(408, &NoHeaders, "", &none, None);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    // a balancer whose upstream died answers 502 / 504: not now, call again (§13.4)
    for gateway in [502, 504] {
        p.on_receipt(gateway, &NoHeaders, "Bad Gateway", &none, None);
        let Step::Sleep(ms) = p.poll(&mut mem) else {
            panic!("{gateway} is repeated")
        };
        assert_eq!(ms, RESUME_RETRY_MS);
        p.on_slept();
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!()
        };
    }
    // meeting: the consumer hears a failure from the notice, not a withdrawal (§3.10)
    assert!(p.withdrawal(&aborted).is_none());
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
    p.on_receipt(200, &ask, "", &none, None);
    let Step::ResumeFrom(300) = p.poll(&mut mem) else {
        panic!()
    };
    let Step::Stream(up) = p.poll(&mut mem) else {
        panic!()
    };
    // ... which may have died: the resumed upload goes to the relay's own URL (§12.3)
    assert_eq!(
        up.url,
        format!(
            "http://h:1/p?channel={}",
            crate::protocol::channel::channel_id("TID")
        )
    );
    // resumed: the consumer waits for this upload on the channel's data URL, where only a
    // withdrawal reaches it (a resumed upload that fails before it reaches the relay: a source
    // that changed), and the notice goes too (§3.10, §12.3)
    let w = p.withdrawal(&aborted).expect("a withdrawal on the channel");
    assert_eq!(
        (w.method, w.url.as_str()),
        (Method::Delete, up.url.as_str())
    );
    assert!(w
        .headers
        .contains(&crate::protocol::channel::key_header("TID")));
    assert!(p.failure_notice(&aborted).is_some());
    assert!(up
        .headers
        .contains(&(X_PIPING, "httpipe-resume=300".into())));
    assert!(!up.headers.iter().any(|(n, _)| *n == CONTENT_TYPE));
    p.on_stream_log(OK_LOG.as_bytes());
    p.on_stream_end(None, StopReason::None);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    // delivered by the relay: the receipt call offers the resume, no notice is due
    assert!(p.delivered());
    assert_eq!(p.failure_notice(&aborted), None);
    let mut k = receipt::Committer::new();
    k.update(b"x");
    let ours = k.commitment();
    let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &ours, None);
    p.on_receipt(200, &vec![(PEER_HELLO, text.as_str())], "", &ours, None);
    let Step::Done(rep) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(rep.resumes, 1);
    // an offset older than the window fails, with the numbers
    let mut p = consumer_left(&mut mem, &h, 10.0, 100, 500);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=50")];
    p.on_receipt(200, &ask, "", &none, None);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
    assert!(e.message.contains("100..500"), "{e}");
    // the resume time runs out
    let mut p = consumer_left(&mut mem, &h, 3.0, 0, 10);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_failure(Failure::network(Cause {
        name: String::new(),
        message: "refused".into(),
    }));
    let Step::Sleep(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_slept();
    p.observe(2500.0, 0, 10);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
    // no call reached the relay: it is the relay that could not be reached (B3)
    assert!(
        e.message
            .contains("the relay could not be reached within 3 s to resume"),
        "{e}"
    );
    // ...and once a call reached it (408: nobody came), it is the receiver
    let mut p = consumer_left(&mut mem, &h, 3.0, 0, 10);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_receipt(408, &NoHeaders, "", &none, None);
    p.observe(2500.0, 0, 10);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(
        e.message
            .contains("the receiver did not come back within 3 s to resume"),
        "{e}"
    );
    // regression: a resume time of 1 s made no call (polled 10 ms after the break)
    let mut p = consumer_left(&mut mem, &h, 1.0, 0, 10);
    p.observe(10.0, 0, 10);
    let Step::Receipt(r) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(r.url.ends_with("timeout=1"), "{}", r.url);
}

/// §12.4: a blocked streaming upload asks on the channel; nothing (408, a failed call)
/// changes nothing; the consumer waiting too turns it into a resume at its offset, with
/// the verdict taken on the window the call offered.
#[test]
fn a_stalled_upload_resumes_when_the_consumer_waits_too() {
    let mut mem = OriginMemory::new();
    let none = receipt::Committer::new().commitment();
    let start = |mem: &mut OriginMemory, resume: bool| {
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = resume.then_some(10.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        assert!(p.stall_call().is_none(), "not before the upload");
        let Step::Rendezvous(_) = p.poll(mem) else {
            panic!()
        };
        let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
        p.on_response(200, &h, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(mem) else {
            panic!()
        };
        p
    };
    assert!(
        start(&mut mem, false).stall_call().is_none(),
        "no resume, no call"
    );
    let mut p = start(&mut mem, true);
    p.observe(0.0, 100, 500);
    let call = p.stall_call().expect("a stall call");
    assert_eq!(
        call.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-reader&channel={}&timeout=2",
            crate::protocol::channel::channel_id("TID")
        )
    );
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; from=100; to=500".into()
    )));
    assert!(p.stall_call().is_none(), "one at a time");
    assert!(!p.on_stall_answer(Some((408, &NoHeaders)), &none, None));
    assert!(p.stall_call().is_some());
    assert!(!p.on_stall_answer(None, &none, None), "a failed call");
    // the consumer waits too: resume at its offset, on the window offered
    assert!(p.stall_call().is_some());
    p.observe(0.0, 400, 900);
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
    assert!(p.on_stall_answer(Some((200, &ask)), &none, None));
    let Step::ResumeFrom(300) = p.poll(&mut mem) else {
        panic!("resumes at the consumer's offset")
    };
    assert_eq!(p.resumed(), 1);
    let Step::Stream(up) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(
        up.url,
        format!(
            "http://h:1/p?channel={}",
            crate::protocol::channel::channel_id("TID")
        )
    );
    // an offset outside the offered window fails with the numbers
    let mut p = start(&mut mem, true);
    p.observe(0.0, 100, 500);
    assert!(p.stall_call().is_some());
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=50")];
    assert!(p.on_stall_answer(Some((200, &ask)), &none, None));
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
    assert!(e.message.contains("100..500"), "{e}");
    // the upload ended (the relay's success) while the call was out: the consumer's
    // receipt it met is the receipt
    let mut p = start(&mut mem, true);
    assert!(p.stall_call().is_some());
    p.on_stream_log(OK_LOG.as_bytes());
    p.on_stream_end(None, StopReason::None);
    let text = receipt::receipt_text("TID", receipt::Outcome::Ok, &none, None);
    assert!(p.on_stall_answer(Some((200, &vec![(PEER_HELLO, text.as_str())])), &none, None));
    let Step::Done(rep) = p.poll(&mut mem) else {
        panic!("the receipt that met the stall call confirms the delivery")
    };
    assert_eq!(rep.receipt.map(|r| r.bytes), Some(0));
    // a cancelled receipt meanwhile ends the send
    let mut p = start(&mut mem, true);
    assert!(p.stall_call().is_some());
    let text = receipt::receipt_text("TID", receipt::Outcome::Cancelled, &none, None);
    assert!(p.on_stall_answer(Some((200, &vec![(PEER_HELLO, text.as_str())])), &none, None));
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
}

/// §12.4 timing, on a fake clock: no watch without resume; a body blocked less than
/// STALL_AFTER_S sleeps until then; then the call, repeated while the body stays
/// blocked; a call out (or no upload yet) looks again a second later.
#[test]
fn the_stall_watch_asks_after_ten_blocked_seconds_and_repeats() {
    let mut mem = OriginMemory::new();
    let start = |mem: &mut OriginMemory, resume: bool| {
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = resume.then_some(60.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(_) = p.poll(mem) else {
            panic!()
        };
        let h = vec![(PEER_HELLO, "httpipe=1; receipt; resume")];
        p.on_response(200, &h, "http://h:1/p\n");
        p
    };
    let mut off = start(&mut mem, false);
    assert!(matches!(off.poll_stall(60_000.0), StallStep::Off));
    let mut p = start(&mut mem, true);
    // before the upload: nothing to ask about yet, look again later
    p.observe(20_000.0, 0, 0);
    assert!(matches!(p.poll_stall(20_000.0), StallStep::WakeAt(t) if t == 21_000.0));
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.observe(20_000.0, 0, 64);
    assert!(matches!(p.poll_stall(0.0), StallStep::WakeAt(t) if t == 30_000.0));
    p.observe(26_000.0, 0, 64);
    assert!(matches!(p.poll_stall(4_000.0), StallStep::WakeAt(t) if t == 32_000.0));
    p.observe(32_000.0, 0, 64);
    let StallStep::Call(call) = p.poll_stall(10_000.0) else {
        panic!("blocked 10 s: the stall call")
    };
    assert!(call.url.contains("mode=await-reader"), "{}", call.url);
    // one at a time
    assert!(matches!(p.poll_stall(10_500.0), StallStep::WakeAt(t) if t == 33_000.0));
    let none = receipt::Committer::new().commitment();
    assert!(!p.on_stall_answer(Some((408, &NoHeaders)), &none, None));
    // still blocked after the 408: ask again at once
    p.observe(34_000.0, 0, 64);
    assert!(matches!(p.poll_stall(12_000.0), StallStep::Call(_)));
}

/// §12.3: the window the driver keeps once met — none unless both sides resume; a source
/// read again keeps only what can't be read again (an encrypted stream's header); else the
/// last `resumeWindow` bytes. And whether the wire bytes are hashed for the receipt (§12.2).
#[test]
fn the_replay_window_follows_the_consumers_hello() {
    let mut mem = OriginMemory::new();
    let mut met = |hello: &'static str| {
        let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
        c.resume_s = Some(10.0);
        let mut p = Producer::<Vec<u8>>::new(c).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &vec![(PEER_HELLO, hello)], "http://h:1/p\n");
        p
    };
    let p = met("httpipe=1; receipt; resume");
    let w = p.replay_window::<Vec<u8>>(None, 1000).expect("a window");
    assert_eq!((w.low(), w.high()), (0, 0));
    assert!(p.replay_window::<Vec<u8>>(Some(64), 1000).is_some());
    assert!(
        p.hashes_wire(),
        "a plain transfer's receipt commits to the wire bytes"
    );
    let p = met("httpipe=1; receipt");
    assert!(
        p.replay_window::<Vec<u8>>(None, 1000).is_none(),
        "the consumer doesn't resume"
    );
}

/// §3.10, §12.3: a consumer cut after the relay's success meets the receipt call and resumes;
/// the resumed upload is not the one the relay delivered, so a failure of the producer's own
/// before it reaches the relay (a source that changed) is told on the channel's data URL and
/// by the notice. Regression (CI, `sdk-resume` "a source that changed"): the first upload's
/// success still stood, no last word was made, and the consumer waited out its resumed `GET`.
#[test]
fn a_resume_after_the_relays_success_keeps_its_last_words() {
    let mut mem = OriginMemory::new();
    let h = [(PEER_HELLO, "httpipe=1; receipt; resume")];
    let (mut p, _) = streaming_after(&mut mem, &h, 10.0);
    p.observe(0.0, 0, 500);
    p.on_stream_log(OK_LOG.as_bytes());
    p.on_stream_end(None, StopReason::None);
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(p.delivered());
    let changed = Error::new(ErrorCode::Unsupported, "the source changed");
    let none = receipt::Committer::new().commitment();
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
    p.on_receipt(200, &ask, "", &none, None);
    let Step::ResumeFrom(300) = p.poll(&mut mem) else {
        panic!()
    };
    let Step::Stream(up) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(!p.delivered(), "the resumed upload is not delivered yet");
    p.on_stream_end(Some(changed.clone()), StopReason::None);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Unsupported);
    let words = p.last_words(&e);
    let urls: Vec<_> = words
        .calls
        .iter()
        .map(|r| (r.method, r.url.clone()))
        .collect();
    assert!(
        urls.contains(&(Method::Delete, up.url.clone())),
        "the withdrawal on the channel's data URL: {urls:?}"
    );
    assert!(p.failure_notice(&e).is_some(), "the notice too");
}

/// §12.3: a resumed upload refused `another-sender` (its channel still holds an earlier
/// upload of ours: a meeting whose answer was lost, as when a relay frozen for 20 s answers
/// a queue of stale calls at once, B2) is a break: the producer meets the consumer again.
/// The first upload so refused fails as before: that path is someone else's.
#[test]
fn a_resumed_upload_refused_another_sender_meets_again() {
    let busy: &[(&str, &str)] = &[(ERROR_CODE, "another-sender")];
    let refusal = "[ERROR] Another sender has been connected on '/p'.\n";
    let mut mem = OriginMemory::new();
    let both_resume = [(PEER_HELLO, "httpipe=1; receipt; resume")];
    let (mut p, _) = streaming_after(&mut mem, &both_resume, 10.0);
    p.on_stream_refused(400, &busy, refusal);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!("the first upload's refusal is final")
    };
    assert_eq!(e.code, ErrorCode::RelayError);
    // a resumed one: cut, met at 300, then refused
    let mut p = consumer_left(&mut mem, &both_resume, 10.0, 100, 500);
    p.observe(1000.0, 100, 500);
    let none = receipt::Committer::new().commitment();
    let ask = vec![(PEER_HELLO, "httpipe-resume=1; offset=300")];
    for _ in 0..2 {
        let Step::Receipt(_) = p.poll(&mut mem) else {
            panic!("the producer meets the consumer on the channel")
        };
        p.on_receipt(200, &ask, "", &none, None);
        let Step::ResumeFrom(300) = p.poll(&mut mem) else {
            panic!()
        };
        let Step::Stream(up) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(up.url.contains("?channel="), "{}", up.url);
        p.on_stream_refused(400, &busy, refusal);
        assert!(p.is_reconnecting(), "a break, not the end");
    }
    // ...until its resume time runs out: the refusal, and who did not come back
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_receipt(408, &NoHeaders, "", &none, None);
    p.observe(12_000.0, 100, 500);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::RelayError);
    assert!(e.message.contains("Another sender"), "{e}");
    assert!(e.message.contains("did not come back within 10 s"), "{e}");
}

/// The same for a segmented upload (WebKit, Firefox): the resumed upload's part 0 refused
/// `another-sender` is a break; its consumer waits on the channel from the meeting on.
#[test]
fn a_resumed_segmented_upload_refused_another_sender_meets_again() {
    let busy: &[(&str, &str)] = &[(ERROR_CODE, "another-sender")];
    let refusal = "[ERROR] Another sender has been connected on '/p'.\n";
    let mut mem = OriginMemory::new();
    let both_resume = [(PEER_HELLO, "httpipe=1; receipt; resume")];
    let mut p = met_after(&mut mem, UploadMode::Segmented, &both_resume, 10.0);
    segmented_to_part_one(&mut p, &mut mem);
    p.observe(1000.0, 0, 8);
    // part 1 hears that the consumer left: a break
    p.on_response(200, &id_header(), "[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
    let none = receipt::Committer::new().commitment();
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!("the producer meets the consumer on the channel")
    };
    p.on_receipt(
        200,
        &vec![(PEER_HELLO, "httpipe-resume=1; offset=4")],
        "",
        &none,
        None,
    );
    let Step::ResumeFrom(4) = p.poll(&mut mem) else {
        panic!()
    };
    let Step::NeedSource = p.poll(&mut mem) else {
        panic!()
    };
    p.on_chunk(b"4567".to_vec());
    let Step::Part(part) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(
        part.url.contains("channel=") && part.url.contains("part=0"),
        "{}",
        part.url
    );
    p.on_response(400, &busy, refusal);
    assert!(p.is_reconnecting(), "a break, not the end");
    let Step::Receipt(_) = p.poll(&mut mem) else {
        panic!("it meets the consumer again")
    };
}
