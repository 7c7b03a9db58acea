//! The streaming upload: its verdicts, refusals, probes and the fallback to segments (§3, §4, §11).

use super::*;

#[test]
fn a_rendezvous_408_with_time_left_is_the_next_call() {
    // §11.2: cfg's 10 s wait in calls of at most 60 s is one call; 70 s is two
    let mut mem = OriginMemory::new();
    let mut c = cfg(UploadMode::Auto, true, true);
    c.timeout_s = Some(70.0);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(r) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(r.url.ends_with("&timeout=60"), "{}", r.url);
    p.on_response(408, &NoHeaders, "[ERROR:CONNECT_TIMEOUT]\n");
    let Step::Rendezvous(r) = p.poll(&mut mem) else {
        panic!()
    };
    assert!(r.url.ends_with("&timeout=10"), "{}", r.url);
    p.on_response(408, &NoHeaders, "[ERROR:CONNECT_TIMEOUT]\n");
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::ConnectTimeout);
}

#[test]
fn rendezvous_then_streaming_success_is_remembered() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, true)).unwrap();
    let Step::Rendezvous(r) = p.poll(&mut mem) else {
        panic!()
    };
    // no call waits longer than 60 s for its head (§11.2)
    assert_eq!(
        r.url,
        "http://h:1/connect/v0/p?mode=await-reader&timeout=60"
    );
    p.on_response(200, &NoHeaders, "http://h:1/p\n");
    let Step::Stream(req) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(req.url, "http://h:1/p");
    assert!(req.headers.contains(&(X_PIPING, "httpipe-size=10".into())));
    assert_eq!(p.on_stream_log(b"[INFO] x\n"), Verdict::Pending);
    p.on_stream_log(b"[STATE:TRANSFER_SUCCESSFUL]\n");
    p.on_stream_end(None, StopReason::None);
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
    p.on_stream_refused(
        400,
        &NoHeaders,
        "[ERROR] Another sender has been connected on '/p'.\n",
    );
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::RelayError);
    assert!(e.message.contains("Another sender"));
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

/// §11.2 step 5: a status log that ends while the request body failed is that failure — the
/// source's error even when the relay says success (a runtime that ends an errored body as
/// if it were complete), the caller's stop when the log did not end in success (not a cut
/// that resumes) — and a success line the caller's stop came after is still a success.
#[test]
fn a_log_that_ends_while_the_body_failed_is_that_failure() {
    let start = || {
        let mut mem = OriginMemory::new();
        let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Auto, true, true)).unwrap();
        let Step::Rendezvous(_) = p.poll(&mut mem) else {
            panic!()
        };
        p.on_response(200, &NoHeaders, "http://h:1/p\n");
        let Step::Stream(_) = p.poll(&mut mem) else {
            panic!()
        };
        (p, mem)
    };
    let (mut p, mut mem) = start();
    p.on_stream_log(b"[STATE:TRANSFER_SUCCESSFUL]\n");
    let source = Error::new(ErrorCode::Aborted, "the source failed: disk gone");
    p.on_stream_end(Some(source), StopReason::None);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.message, "the source failed: disk gone");

    let (mut p, mut mem) = start();
    p.on_stream_log(b"[INFO] Start sending to 1 receiver(s)...\n");
    p.on_stream_end(None, StopReason::User);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Aborted, "{}", e.message);

    let (mut p, mut mem) = start();
    p.on_stream_log(b"[STATE:TRANSFER_SUCCESSFUL]\n");
    p.on_stream_end(None, StopReason::User);
    assert!(matches!(p.poll(&mut mem), Step::Done(_)));
}

/// A stop while no request is out (a pause between a part's tries) is the stop's verdict,
/// through the core (so its last words follow); after the end it changes nothing.
#[test]
fn a_stop_during_a_pause_fails_with_the_stop() {
    let mut mem = OriginMemory::new();
    let mut p = Producer::<Vec<u8>>::new(cfg(UploadMode::Segmented, false, false)).unwrap();
    let Step::NeedSource = p.poll(&mut mem) else {
        panic!()
    };
    p.on_stopped(StopReason::User);
    let Step::Failed(e) = p.poll(&mut mem) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Aborted);
    assert!(
        e.message.starts_with("segmented upload part 0"),
        "{}",
        e.message
    );
    p.on_stopped(StopReason::Timeout);
    assert!(
        matches!(p.poll(&mut mem), Step::Failed(_)),
        "a misuse, not a new verdict"
    );
}

/// §11.2 step 3: a streaming attempt falls back with every byte it pulled while they fit in
/// REPLAY_LIMIT, never with part of them; nothing is recorded after the take.
#[test]
fn the_fallback_replay_keeps_all_or_nothing() {
    let mut r = FallbackReplay::default();
    r.record(REPLAY_LIMIT - 1, vec![1u8]);
    r.record(1, vec![2u8]);
    assert_eq!(r.take(), Some(vec![vec![1u8], vec![2u8]]));
    assert_eq!(r.take(), None, "taken");
    let mut r = FallbackReplay::default();
    r.record(REPLAY_LIMIT, vec![1u8]);
    r.record(1, vec![2u8]);
    assert_eq!(r.take(), None, "one byte over the limit: no fallback");
}
