//! The segmented upload: parts, retries, refusals and verdicts (§4).

use super::*;

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
    let req = segmented_to_part_one(&mut p, &mut mem);
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
