//! The producer's end and last words on the transfer's channel (§12.2, §12.5), withdrawal (§3.10).

use super::*;

/// §3.10: a transfer that fails by its source or the caller's abort after the rendezvous
/// and before the relay's success withdraws (`DELETE` on the data URL, with the token, as a
/// last word bounded by WITHDRAW_WAIT_S); no withdrawal before the rendezvous answered or
/// without one, for a failure the relay reported, or after the relay's success.
#[test]
fn a_source_failure_before_success_withdraws() {
    let mut mem = OriginMemory::new();
    let source = Error::new(ErrorCode::Unsupported, "the source failed");
    // before the rendezvous answered: no consumer waits
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, true)).unwrap();
    let Step::Rendezvous(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(p
        .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
        .is_none());

    // the source fails before its first byte went out
    p.on_response(200, &NoHeaders, "http://h:1/p\n");
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: Failure::stopped(StopReason::None, None),
        replay: Some(Vec::new()),
        response_started: false,
        source_error: Some(source.clone()),
    });
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    let w = p.withdrawal(&e).expect("a withdrawal");
    assert_eq!(w.method, Method::Delete);
    assert_eq!(w.url, "http://h:1/p");
    assert!(w.headers.contains(&("Authorization", "Bearer tok".into())));
    assert_eq!(w.timeout_ms, Some(WITHDRAW_WAIT_S * 1000.0));
    assert!(w.last_word);
    assert_eq!(p.last_words(&e).calls.len(), 1);

    // the caller's abort while streaming withdraws too; the consumer leaving does not
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, true)).unwrap();
    let Step::Rendezvous(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(200, &NoHeaders, "http://h:1/p\n");
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(p
        .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
        .is_some());
    let left = Error::new(ErrorCode::PeerDisconnected, "left");
    assert!(p.withdrawal(&left).is_none());

    // without a rendezvous no consumer was told of this producer
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(p
        .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
        .is_none());

    // after the relay's success (waiting for the receipt), nothing to withdraw
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
    assert!(p
        .withdrawal(&Error::new(ErrorCode::Aborted, "stop"))
        .is_none());
}

fn hello_of(r: &Request) -> Option<&str> {
    r.headers
        .iter()
        .find(|(n, _)| *n == crate::protocol::headers::HELLO)
        .map(|(_, v)| v.as_str())
}

/// §12.2 "The producer's end": once the driver said what was sent, every call on the
/// transfer's channel states it (the receipt wait, a resume call after a break at the end);
/// never a failure notice; nothing to a consumer that sends no receipts.
#[test]
fn the_producer_states_its_end_on_the_channel() {
    let mut mem = OriginMemory::new();
    let mut k = receipt::Committer::new();
    k.update(b"hello");
    let sent = k.commitment();
    let end = receipt::end_items(&sent);
    // the receipt wait after the relay's success
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
    assert!(p.states_end() && p.needs_end());
    p.attest(sent.clone());
    assert!(!p.needs_end());
    let Step::Receipt(wait) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(hello_of(&wait), Some(end.as_str()));
    assert!(end.starts_with("httpipe-end=1; bytes=5; digest="), "{end}");
    // the application aborts while it waits: its end goes as a last word all the same
    let aborted = Error::new(ErrorCode::Aborted, "stop");
    let words = p.last_words(&aborted).calls;
    assert_eq!(words.len(), 1);
    assert_eq!(hello_of(&words[0]), Some(end.as_str()));
    assert!(words[0].last_word && words[0].url.contains("mode=await-reader"));

    // a driver that did not say (an older one): the wait states nothing
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1; receipt"));
    let Step::Receipt(wait) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(hello_of(&wait), None);
    assert!(p.end_notice(&aborted).is_none());

    // a consumer that sends no receipts meets no call, and is told no end
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    streamed_to_success(&mut p, &mut mem, Some("httpipe=1"));
    assert!(!p.states_end() && !p.needs_end());
    let Step::Done(_) = p.poll(&mut mem) else {
        panic!()
    };

    // both resume: a break after the body ended offers the resume and states the end
    let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
    c.resume_s = Some(10.0);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(
        200,
        &vec![(PEER_HELLO, "httpipe=1; receipt; resume")],
        "http://h:1/p\n",
    );
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.observe(1000.0, 0, 5);
    p.attest(sent.clone());
    p.on_stream_failed(StreamFailure {
        failure: Failure::network(Cause {
            name: String::new(),
            message: "reset".into(),
        }),
        replay: None,
        response_started: true,
        source_error: None,
    });
    let Step::Receipt(call) = p.poll(&mut mem) else {
        panic!()
    };
    let offer = format!("httpipe-resume=1; from=0; to=5; {end}");
    assert_eq!(hello_of(&call), Some(offer.as_str()));
    // ... and so does its failure notice: its source ended, so a consumer whose clean end is
    // that one has every byte (§12.2); a resuming one fails on the notice as always
    let notice = p.failure_notice(&aborted).unwrap();
    let stopped = format!("httpipe-resume=1; failed=ABORTED; {end}");
    assert_eq!(hello_of(&notice), Some(stopped.as_str()));
    // it lingers after this producer is gone, for a consumer that reads up to the cut later
    // (§5.1)
    assert!(notice.url.ends_with("&linger=60"), "{}", notice.url);
    assert!(!call.url.contains("linger"), "a resume call waits itself");
}

/// §11.2 step 6, §12.2: a producer that promised its end and fails for its own reason
/// tells the consumer on the channel even without resume (a consumer whose body ended
/// cleanly meets it with its receipt call); a cut or the consumer leaving does not.
#[test]
fn a_producer_that_states_its_end_sends_its_failure_notice_without_resume() {
    let mut mem = OriginMemory::new();
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    let Step::Rendezvous(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(
        200,
        &vec![(PEER_HELLO, "httpipe=1; receipt")],
        "http://h:1/p\n",
    );
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(!p.resumes());
    let aborted = Error::new(ErrorCode::Aborted, "stop");
    let notice = p.failure_notice(&aborted).expect("a notice without resume");
    assert_eq!(hello_of(&notice), Some("httpipe-resume=1; failed=ABORTED"));
    assert_eq!(
        p.last_words(&aborted).calls.len(),
        2,
        "the notice and the withdrawal"
    );
    let cut = Error::new(ErrorCode::Network, "reset");
    assert!(p.failure_notice(&cut).is_none());
    let left = Error::new(ErrorCode::PeerDisconnected, "left");
    assert!(p.failure_notice(&left).is_none());
    // the source's failure (whatever its code)
    p.on_stream_failed(StreamFailure {
        failure: Failure::stopped(StopReason::Internal, None),
        replay: None,
        response_started: false,
        source_error: Some(Error::new(ErrorCode::Truncated, "upstream cut")),
    });
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    let notice = p
        .failure_notice(&e)
        .expect("a notice for the source's failure");
    assert_eq!(
        hello_of(&notice),
        Some("httpipe-resume=1; failed=TRUNCATED")
    );
    // an older consumer (no receipts): nothing on the channel
    let mut p =
        Producer::<Vec<u8>>::new(with_receipt(cfg(UploadMode::Stream, true, true))).unwrap();
    p.poll(&mut mem);
    p.on_response(200, &NoHeaders, "http://h:1/p\n");
    p.poll(&mut mem);
    assert!(p.failure_notice(&aborted).is_none());
}

/// Regression (CI, a Worker's failing feed): the withdrawal refused because the relay still
/// held the path for the broken upload ended the wait for the last words, and the resuming
/// consumer never met the notice. Only a success tells the consumer.
#[test]
fn only_a_successful_last_word_tells_the_consumer() {
    assert!(LastWords::told(Some(200)));
    for refused in [Some(400), Some(409), Some(410), Some(503), None] {
        assert!(!LastWords::told(refused), "{refused:?}");
    }
}

/// §12.5: the consumer's word that it gave up before its stream started (met by a presence
/// call) fails the transfer with that word, also over the error of the stop that followed,
/// with a resume and a source that were on their way; no last words, and never over success.
#[test]
fn the_consumer_that_left_before_its_stream_ends_the_send() {
    let mut mem = OriginMemory::new();
    let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
    c.resume_s = Some(60.0);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(_) = p.poll(&mut mem) else {
        panic!()
    };
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; receipt; resume")];
    p.on_response(200, &h, "http://h:1/p\n");
    assert!(p.presence().is_some());
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    // the stop of the upload comes first, as a break the core would resume
    p.on_stream_failed(StreamFailure {
        failure: Failure::network(std::io::Error::other("aborted")),
        replay: None,
        response_started: true,
        source_error: None,
    });
    let left = Error::new(
        ErrorCode::PeerDisconnected,
        "the receiver cancelled before…",
    );
    p.on_peer_left(left.clone());
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!("the consumer's word is the verdict")
    };
    assert_eq!(e, left);
    assert!(p.last_words(&e).calls.is_empty());
    assert!(p
        .last_words(&Error::new(ErrorCode::Aborted, "x"))
        .calls
        .is_empty());

    // never over a success
    let c = with_receipt(cfg(UploadMode::Stream, true, true));
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    streamed_to_success(&mut p, &mut mem, None);
    p.on_peer_left(left);
    assert!(matches!(p.poll(&mut mem), Step::Done(_)));
}
