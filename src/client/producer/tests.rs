use super::*;
use crate::client::error::Cause;
use crate::client::request::{LastWords, NoHeaders};

const OK_LOG: &str = "[INFO] Start sending to 1 receiver(s)!\n[STATE:TRANSFER_SUCCESSFUL]\n";

fn cfg(upload: UploadMode, runtime_streams: bool, rendezvous: bool) -> SendConfig {
    SendConfig {
        relay: RelayBase::parse("http://h:1").unwrap(),
        path: "/p".into(),
        token: Some("tok".into()),
        rendezvous,
        timeout_s: None,
        upload,
        part_size: 4,
        meta: Metadata {
            content_type: Some("text/plain".into()),
            filename: None,
            size: Some(10),
        },
        encrypted: false,
        runtime_streams: if runtime_streams {
            RuntimeStreams::Yes
        } else {
            RuntimeStreams::No
        },
        upload_cut: UploadCut::BodyError,
        receipt: None,
        resume_s: None,
    }
}

fn with_receipt(mut c: SendConfig) -> SendConfig {
    c.receipt = Some(ReceiptConfig {
        transfer: "TID".into(),
        wait: true,
        timeout_s: 5.0,
        ciphertext: false,
    });
    c
}

/// A streaming producer with receipts and `resume_s`, after a rendezvous answered with
/// `hello`, whose consumer left when it had sent `high` bytes and held `low..high` (§12.3).
fn consumer_left(
    mem: &mut OriginMemory,
    hello: &[(&str, &str)],
    resume_s: f64,
    low: u64,
    high: u64,
) -> Producer<Vec<u8>> {
    let mut c = with_receipt(cfg(UploadMode::Stream, true, true));
    c.resume_s = Some(resume_s);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(_) = p.poll(mem) else {
        panic!()
    };
    p.on_response(200, &hello.to_vec(), "http://h:1/p\n");
    let Step::Stream(_) = p.poll(mem) else {
        panic!()
    };
    p.observe(0.0, low, high);
    p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
    p
}

/// Rendezvous (the consumer's hello `peer`), then a streaming upload the relay confirms.
fn streamed_to_success(p: &mut Producer<Vec<u8>>, mem: &mut OriginMemory, peer: Option<&str>) {
    let Step::Rendezvous(r) = p.poll(mem) else {
        panic!()
    };
    assert!(r.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe=1; transfer=TID; presence; receipt; attest".into()
    )));
    let h: Vec<(&str, &str)> = peer.map(|v| vec![(PEER_HELLO, v)]).unwrap_or_default();
    p.on_response(200, &h, "http://h:1/p\n");
    let Step::Stream(_) = p.poll(mem) else {
        panic!()
    };
    p.on_stream_log(OK_LOG.as_bytes());
    p.on_stream_end();
}

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
        "httpipe=1; transfer=TID; presence; receipt; attest; resume".into()
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
    p.on_stream_end();
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
    assert!(e.message.contains("within 3 s to resume"), "{e}");
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
    p.on_stream_end();
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

fn net() -> Failure {
    Failure::network(Cause {
        name: "TypeError".into(),
        message: "fetch failed".into(),
    })
}

fn id_header() -> Vec<(&'static str, &'static str)> {
    vec![("x-httpipe-upload", "UP")]
}

/// Drives a segmented upload of `data` (in chunks of 3) answering every part with 200;
/// returns the part URLs and bodies sent.
fn drive_segmented(
    p: &mut Producer<Vec<u8>>,
    mem: &mut OriginMemory,
    data: &[u8],
) -> (Vec<(String, Vec<u8>)>, Step) {
    let mut source = data.chunks(3).map(<[u8]>::to_vec);
    let mut sent = Vec::new();
    loop {
        match p.poll(mem) {
            Step::NeedSource => match source.next() {
                Some(c) => p.on_chunk(c),
                None => p.on_source_end(),
            },
            Step::Part(req) => {
                let body: Vec<u8> = p.part_body().concat();
                let last = req.url.contains("final=1");
                sent.push((req.url, body));
                let log = if last { OK_LOG } else { "" };
                p.on_response(200, &id_header(), log);
            }
            other => return (sent, other),
        }
    }
}

#[test]
fn rendezvous_then_streaming_success_is_remembered() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, true)).unwrap();
    let Step::Rendezvous(r) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(r.url, "http://h:1/connect/v0/p?mode=await-reader");
    p.on_response(200, &NoHeaders, "http://h:1/p\n");
    let Step::Stream(req) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(req.url, "http://h:1/p");
    assert!(req.headers.contains(&(X_PIPING, "httpipe-size=10".into())));
    assert_eq!(p.on_stream_log(b"[INFO] x\n"), Verdict::Pending);
    p.on_stream_log(b"[STATE:TRANSFER_SUCCESSFUL]\n");
    p.on_stream_end();
    let Step::Done(rep) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(rep.transport, Transport::Stream);
    assert_eq!(rep.relay_state, "[STATE:TRANSFER_SUCCESSFUL]");
    assert_eq!(
        mem.plan(UploadMode::Auto, RuntimeStreams::Yes, "http://h:1")
            .unwrap(),
        Plan::Stream { fallback: false }
    );
}

#[test]
fn fallback_after_a_failure_before_any_byte_left_replays_the_same_bytes() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: net(),
        replay: Some(vec![b"hel".to_vec(), b"lo".to_vec()]),
        response_started: false,
        source_error: None,
    });
    let mut source = vec![b" world".to_vec()].into_iter();
    let mut sent = Vec::new();
    let done = loop {
        match p.poll(&mut mem) {
            Step::NeedSource => match source.next() {
                Some(c) => p.on_chunk(c),
                None => p.on_source_end(),
            },
            Step::Part(req) => {
                let last = req.url.contains("final=1");
                sent.push(p.part_body().concat());
                p.on_response(200, &id_header(), if last { OK_LOG } else { "" });
            }
            other => break other,
        }
    };
    let Step::Done(rep) = done else {
        panic!("{done:?}")
    };
    assert_eq!(rep.transport, Transport::Segmented);
    assert_eq!(sent.concat(), b"hello world");
    assert_eq!(
        mem.plan(UploadMode::Auto, RuntimeStreams::Yes, "http://h:1")
            .unwrap(),
        Plan::Segmented
    );
}

#[test]
fn no_fallback_when_streaming_was_asked_for() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: net(),
        replay: Some(vec![]),
        response_started: false,
        source_error: None,
    });
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Network);
}

#[test]
fn a_cut_after_bytes_left_probes_the_relay() {
    for (alive, code) in [
        (true, ErrorCode::PeerDisconnected),
        (false, ErrorCode::Network),
    ] {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_stream_failed(StreamFailure {
            failure: net(),
            replay: None,
            response_started: false,
            source_error: None,
        });
        let Step::Probe(req) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(req.url, "http://h:1/version");
        assert_eq!(req.timeout_ms, Some(PROBE_TIMEOUT_MS));
        if alive {
            p.on_failure(net()); // the first probe may hit a dead pooled connection
            let Step::Probe(_) = p.poll(&mut mem) else {
                panic!()
            };
            p.on_response(200, &NoHeaders, "httpipe-relay 0.1.0\n");
        } else {
            for _ in 0..PROBE_TRIES - 1 {
                p.on_failure(net());
                let Step::Probe(_) = p.poll(&mut mem) else {
                    panic!()
                };
            }
            p.on_failure(net());
        }
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, code, "{e}");
    }
}

#[test]
fn a_broken_status_log_probes_even_with_the_replay_kept() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: net(),
        replay: Some(vec![]),
        response_started: true,
        source_error: None,
    });
    assert!(matches!(p.poll(&mut mem), Step::Probe(_)));
}

#[test]
fn stops_and_source_errors_are_reported_as_such() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: Failure::stopped(StopReason::User, None),
        replay: Some(vec![]),
        response_started: false,
        source_error: None,
    });
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Aborted);

    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_failed(StreamFailure {
        failure: net(),
        replay: Some(vec![]),
        response_started: false,
        source_error: Some(Error::usage("bad chunk")),
    });
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.message, "bad chunk");
}

#[test]
fn the_consumer_leaving_mid_stream_is_seen_at_once() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(
        p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n"),
        Verdict::PeerDisconnected
    );
    assert!(p.is_finished());
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
}

#[test]
fn refusals_of_the_streaming_upload() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Stream, true, false)).unwrap();
    let Step::Stream(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stream_refused(400, "[ERROR] Another sender has been connected on '/p'.\n");
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::RelayError);
    assert!(e.message.contains("Another sender"));
}

#[test]
fn segmented_parts_small_first_then_final_with_metadata_on_part_zero_only() {
    let mut mem = OriginMemory::new();
    let mut c = cfg(UploadMode::Segmented, true, false);
    c.part_size = 4;
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let (sent, end) = drive_segmented(&mut p, &mut mem, b"0123456789");
    let Step::Done(rep) = end else {
        panic!("{end:?}")
    };
    assert_eq!(rep.transport, Transport::Segmented);
    let urls: Vec<&str> = sent.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://h:1/p?part=0",
            "http://h:1/p?part=1&upload=UP",
            "http://h:1/p?part=2&upload=UP&final=1"
        ]
    );
    let bodies: Vec<&[u8]> = sent.iter().map(|(_, b)| &b[..]).collect();
    assert_eq!(bodies, [&b"0123"[..], b"4567", b"89"]);
}

#[test]
fn an_empty_source_opens_with_part_zero_and_ends_with_an_empty_final_part() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
    let (sent, end) = drive_segmented(&mut p, &mut mem, b"");
    assert!(matches!(end, Step::Done(_)));
    let urls: Vec<&str> = sent.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://h:1/p?part=0",
            "http://h:1/p?part=1&upload=UP&final=1"
        ]
    );
}

fn segmented_at_part_one() -> (Producer<Vec<u8>>, OriginMemory) {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
    let Step::NeedSource = p.poll(&mut mem) else {
        panic!()
    };
    p.on_chunk(b"01234567".to_vec());
    let Step::Part(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(200, &id_header(), "");
    let Step::Part(req) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(req.url.contains("part=1"));
    (p, mem)
}

/// Regression (#25, found by the WebKit tests): a segmented upload aborted midway left its
/// consumer waiting ~120 s (the withdrawal is refused while the upload holds the path, the
/// gap timeout is 60 s); now its last word abandons the upload (§4), with the token.
#[test]
fn a_segmented_upload_that_fails_locally_is_abandoned() {
    let (mut p, _mem) = segmented_at_part_one();
    p.on_source_error(Error::new(ErrorCode::Unsupported, "the source failed"));
    let e = Error::new(ErrorCode::Unsupported, "the source failed");
    let req = p.withdrawal(&e).expect("the abandonment");
    assert_eq!(req.method, Method::Delete);
    assert_eq!(req.url, "http://h:1/p?upload=UP");
    assert!(req.headers.contains(&(AUTHORIZATION, "Bearer tok".into())));
    // a failure of the network is no local failure: nothing to say
    let (p, _mem) = segmented_at_part_one();
    assert!(p
        .withdrawal(&Error::new(ErrorCode::Network, "cut"))
        .is_none());
}

#[test]
fn a_part_is_retried_on_network_errors_with_backoff_then_fails() {
    let (mut p, mut mem) = segmented_at_part_one();
    for n in 1..PART_TRIES {
        p.on_failure(net());
        let Step::Sleep(ms) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(ms, PART_RETRY_BACKOFF_MS * n as f64);
        p.on_slept();
        let Step::Part(req) = p.poll(&mut mem) else {
            panic!()
        };
        assert!(req.url.contains("part=1"), "the same part again");
        assert_eq!(p.part_body().concat(), b"4567");
    }
    p.on_failure(net());
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Network);
}

#[test]
fn a_retried_part_that_is_then_accepted_goes_on() {
    let (mut p, mut mem) = segmented_at_part_one();
    p.on_failure(net());
    let Step::Sleep(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_slept();
    let Step::Part(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(200, &NoHeaders, "");
    assert!(matches!(p.poll(&mut mem), Step::NeedSource));
}

#[test]
fn part_zero_is_not_retried_and_aborts_are_not_retried() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
    let Step::NeedSource = p.poll(&mut mem) else {
        panic!()
    };
    p.on_chunk(b"0123".to_vec());
    let Step::Part(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_failure(net());
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Network);

    let (mut p, mut mem) = segmented_at_part_one();
    p.on_failure(Failure::stopped(StopReason::User, None));
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Aborted);
}

#[test]
fn part_refusals_404_409_413() {
    for (status, code, words) in [
        (404, ErrorCode::PeerDisconnected, "dropped the upload"),
        (409, ErrorCode::RelayError, "another part number"),
        (413, ErrorCode::Unsupported, "smaller part size"),
        (401, ErrorCode::Unauthorized, "token"),
    ] {
        let (mut p, mut mem) = segmented_at_part_one();
        p.on_response(status, &NoHeaders, "[ERROR] nope\n");
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, code, "{status}: {e}");
        assert!(e.message.contains(words), "{status}: {e}");
    }
}

#[test]
fn part_refusals_are_read_from_the_relay_code_first() {
    // The code decides (§3.5), whatever the status says.
    for (status, relay_code, code, words) in [
        (
            400,
            "unknown-upload",
            ErrorCode::PeerDisconnected,
            "dropped the upload",
        ),
        (
            400,
            "part-length-mismatch",
            ErrorCode::RelayError,
            "another part number",
        ),
        (
            400,
            "part-too-large",
            ErrorCode::Unsupported,
            "smaller part size",
        ),
        (404, "not-found", ErrorCode::RelayError, "HTTP 404"),
    ] {
        let (mut p, mut mem) = segmented_at_part_one();
        let headers = vec![("X-Httpipe-Error", relay_code)];
        p.on_response(status, &headers, "[ERROR] nope\n");
        let Step::Failed(e) = p.poll(&mut mem) else {
            panic!()
        };
        assert_eq!(e.code, code, "{relay_code}: {e}");
        assert!(e.message.contains(words), "{relay_code}: {e}");
    }
}

#[test]
fn part_zero_without_an_upload_id_means_no_segmented_support() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
    let Step::NeedSource = p.poll(&mut mem) else {
        panic!()
    };
    p.on_chunk(b"0123".to_vec());
    let Step::Part(_) = p.poll(&mut mem) else {
        panic!()
    };
    p.on_response(200, &NoHeaders, "");
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Unsupported);
}

#[test]
fn status_log_verdicts_of_parts() {
    // The consumer left: the next part's answer says so.
    let (mut p, mut mem) = segmented_at_part_one();
    p.on_response(200, &NoHeaders, "[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::PeerDisconnected);
    // A final part whose log doesn't end in success is not success.
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, true, false)).unwrap();
    let mut mem = OriginMemory::new();
    let mut n = 0;
    let end = loop {
        match p.poll(&mut mem) {
            Step::NeedSource => p.on_source_end(),
            Step::Part(_) => {
                n += 1;
                let log = if n == 2 { "[INFO] Sent\n" } else { "" };
                p.on_response(200, &id_header(), log);
            }
            other => break other,
        }
    };
    let Step::Failed(e) = end else { panic!() };
    assert_eq!(e.code, ErrorCode::RelayError);
}

#[test]
fn encrypted_sends_no_metadata_in_clear() {
    let mut c = cfg(UploadMode::Auto, true, false);
    c.encrypted = true;
    c.meta.filename = Some("secret.txt".into());
    let h = producer_headers(c.token.as_deref(), &c.meta, c.encrypted);
    assert_eq!(
        h,
        vec![
            (AUTHORIZATION, "Bearer tok".to_string()),
            (CONTENT_TYPE, OCTET_STREAM.to_string())
        ]
    );
}

#[test]
fn a_bad_path_fails_before_anything_waits() {
    let mut c = cfg(UploadMode::Auto, true, true);
    c.path = "/a?b".into();
    assert!(Producer::<Vec<u8>>::new(c).is_err());
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
