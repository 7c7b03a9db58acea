//! Resuming a cut or stalled body (§12.3, §12.4).

use super::*;

/// §12.4 timing, on a fake clock: a read waiting less than STALL_AFTER_S sleeps until
/// then; then the call; after an answer without a meeting, another 10 s; no offset known
/// yet: look again later; a resume under way: no watch.
#[test]
fn the_stall_watch_asks_after_ten_starving_seconds() {
    let mut r = resuming_consumer(60.0);
    let wake = |s: StallStep| match s {
        StallStep::WakeAt(t) => t,
        s => panic!("{s:?}"),
    };
    assert_eq!(wake(r.poll_stall(1_000.0, 1_000.0, Some(5))), 11_000.0);
    assert_eq!(wake(r.poll_stall(9_000.0, 1_000.0, Some(5))), 11_000.0);
    assert_eq!(wake(r.poll_stall(11_000.0, 1_000.0, None)), 21_000.0);
    let StallStep::Call(call) = r.poll_stall(11_000.0, 1_000.0, Some(5)) else {
        panic!("10 s without a byte: the stall call")
    };
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=5".into()
    )));
    assert!(matches!(
        r.poll_stall(12_000.0, 1_000.0, Some(5)),
        StallStep::Off
    ));
    assert!(r
        .on_stall_answer(Some((408, &NoHeaders)), 13_000.0)
        .is_none());
    // the same read goes on: another 10 s from the answer
    assert_eq!(wake(r.poll_stall(13_000.0, 1_000.0, Some(5))), 23_000.0);
    assert!(matches!(
        r.poll_stall(23_000.0, 1_000.0, Some(5)),
        StallStep::Call(_)
    ));
}

/// §12.4: a starving read asks on the channel; a 408 or a failed call reads on; the
/// producer waiting too resumes as after a break; its failure notice ends the stream.
#[test]
fn a_stalled_body_resumes_when_the_producer_waits_too() {
    let mut r = resuming_consumer(5.0);
    let call = r.stall_call(70).unwrap();
    assert_eq!(
        call.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=2",
            crate::protocol::channel::channel_id("TID")
        )
    );
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=70".into()
    )));
    assert!(r.stall_call(70).is_err(), "one at a time");
    assert!(r.on_stall_answer(Some((408, &NoHeaders)), 0.0).is_none());
    r.stall_call(70).unwrap();
    assert!(r.on_stall_answer(None, 0.0).is_none(), "a failed call");
    r.stall_call(70).unwrap();
    let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
    let Some(ResumeStep::Get(get)) = r.on_stall_answer(Some((200, &offer)), 0.0) else {
        panic!("the stall is a break")
    };
    assert_eq!(
        get.url,
        format!(
            "http://h:1/p?channel={}",
            crate::protocol::channel::channel_id("TID")
        )
    );
    let at: &[(&str, &str)] = &[("x-piping", "httpipe-resume=70")];
    let ResumeStep::Resumed(_, 70) = r.on_head(200, &at, 100.0) else {
        panic!()
    };
    assert_eq!(r.resumes, 1);
    r.stall_call(80).unwrap();
    let failed: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; failed=SOURCE_FAILED")];
    let Some(ResumeStep::Failed(e)) = r.on_stall_answer(Some((200, &failed)), 0.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    // the time to meet again after a stall runs out with the stall's error
    r.stall_call(80).unwrap();
    let Some(ResumeStep::Get(_)) = r.on_stall_answer(Some((200, &offer)), 0.0) else {
        panic!()
    };
    let ResumeStep::Call(_) = r.on_head(503, &NoHeaders, 1000.0) else {
        panic!()
    };
    let ResumeStep::Failed(e) = r.on_call(408, &NoHeaders, "", 5500.0) else {
        panic!()
    };
    assert!(e.message.contains("stalled after 80 bytes"), "{e}");
}

/// §12.3: a break meets the producer with the offset held, refuses an offer that no
/// longer covers it, and checks that the resumed stream starts at that offset.
/// §12.3, §13.4: a cluster node named by the rendezvous answer died with the transfer. The
/// resume goes through the relay's own URL (the balancer), and a balancer's 502 / 504 while
/// its upstream is gone is "not now", not a refusal.
#[test]
fn a_resume_finds_a_live_node_through_the_relay_url() {
    let mut c = cfg(true, false);
    c.resume_s = Some(30.0);
    let mut c = Consumer::new(c).unwrap();
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
    c.on_response(200, &h, "http://10.0.0.11:8080/p\n");
    let mut r = c.resumer().expect("both sides resume");
    let Step::Get(get) = c.poll() else { panic!() };
    assert_eq!(
        get.url, "http://10.0.0.11:8080/p",
        "the first GET follows the answer"
    );
    c.on_head(200, &NoHeaders);
    let Step::Stream(_, check) = c.poll() else {
        panic!()
    };
    let cut = Failure::network(Cause {
        name: String::new(),
        message: "reset".into(),
    });
    let ResumeStep::Call(_) = r.on_break(cut, &check, Some(70), 0.0) else {
        panic!()
    };
    let mut now = 0.0;
    for gateway in [502, 504, 503] {
        let ResumeStep::Sleep(ms) = r.on_call(gateway, &NoHeaders, "", now) else {
            panic!("{gateway} is repeated")
        };
        assert_eq!(ms, RESUME_RETRY_MS);
        now += ms;
        let ResumeStep::Call(_) = r.on_slept(now) else {
            panic!()
        };
    }
    let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
    let ResumeStep::Get(get) = r.on_call(200, &offer, "", now) else {
        panic!()
    };
    let channel = crate::protocol::channel::channel_id("TID");
    assert_eq!(get.url, format!("http://h:1/p?channel={channel}"));
    // the resumed GET reached the dead node through the balancer: meet again
    let ResumeStep::Call(_) = r.on_head(502, &NoHeaders, now + 10.0) else {
        panic!("a 502 on the resumed GET meets again")
    };
}

#[test]
fn a_break_resumes_at_the_offset_held() {
    let mut c = cfg(true, false);
    c.resume_s = Some(5.0);
    let mut c = Consumer::new(c).unwrap();
    let Step::Rendezvous(r) = c.poll() else {
        panic!()
    };
    assert!(r.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe=1; receipt; resume".into()
    )));
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
    c.on_response(200, &h, "http://h:1/p\n");
    let mut r = c.resumer().expect("both sides resume");
    let Step::Get(_) = c.poll() else { panic!() };
    c.on_head(200, &NoHeaders);
    let Step::Stream(_, check) = c.poll() else {
        panic!()
    };
    let cut = || {
        Failure::network(Cause {
            name: String::new(),
            message: "reset".into(),
        })
    };
    let ResumeStep::Call(call) = r.on_break(cut(), &check, Some(70), 0.0) else {
        panic!()
    };
    assert_eq!(
        call.url,
        format!(
            "http://h:1/connect/v0/p?mode=await-writer&channel={}&timeout=5",
            crate::protocol::channel::channel_id("TID")
        )
    );
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=70".into()
    )));
    // the relay is down: try again after a pause
    let ResumeStep::Sleep(_) = r.on_call_failure(cut()) else {
        panic!()
    };
    let ResumeStep::Call(_) = r.on_slept(1000.0) else {
        panic!()
    };
    let offer: &[(&str, &str)] = &[(PEER_HELLO, "httpipe-resume=1; from=10; to=90")];
    let ResumeStep::Get(get) = r.on_call(200, &offer, "", 1500.0) else {
        panic!()
    };
    assert_eq!(
        get.url,
        format!(
            "http://h:1/p?channel={}",
            crate::protocol::channel::channel_id("TID")
        )
    );
    // a stream that doesn't say where it starts, or starts elsewhere (another meeting's
    // upload: a relay frozen and thawed answers a queue of stale calls, B2), is dropped and
    // the sides meet again on the break's clock (PROTOCOL.md §12.3)
    let ResumeStep::Call(call) = r.on_head(200, &NoHeaders, 1600.0) else {
        panic!()
    };
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=70".into()
    )));
    let ResumeStep::Get(_) = r.on_call(200, &offer, "", 1700.0) else {
        panic!()
    };
    let elsewhere: &[(&str, &str)] = &[("x-piping", "httpipe-resume=40")];
    let ResumeStep::Call(_) = r.on_head(200, &elsewhere, 1800.0) else {
        panic!()
    };
    let ResumeStep::Get(_) = r.on_call(200, &offer, "", 1900.0) else {
        panic!()
    };
    // ...until the break's resume time runs out: TRUNCATED, as after any break
    let ResumeStep::Failed(e) = r.on_head(200, &elsewhere, 5900.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    assert!(e.message.contains("within 5 s to resume"), "{e}");
    // again, and the stream starts at 70
    let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(70), 2000.0) else {
        panic!()
    };
    let ResumeStep::Get(_) = r.on_call(200, &offer, "", 2100.0) else {
        panic!()
    };
    let at: &[(&str, &str)] = &[("x-piping", "httpipe-resume=70")];
    let ResumeStep::Resumed(_, 70) = r.on_head(200, &at, 2200.0) else {
        panic!()
    };
    assert_eq!(r.resumes, 1);
    // an offer that no longer covers the offset: TRUNCATED with the numbers
    let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(5), 3000.0) else {
        panic!()
    };
    let ResumeStep::Failed(e) = r.on_call(200, &offer, "", 3100.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    assert!(e.message.contains("10..90"), "{e}");
    // a stop is no break; time running out names the resume time
    let ResumeStep::Failed(e) = r.on_break(
        Failure::stopped(StopReason::User, None),
        &check,
        Some(5),
        0.0,
    ) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Aborted);
    let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(5), 0.0) else {
        panic!()
    };
    let ResumeStep::Failed(e) = r.on_call(408, &NoHeaders, "", 4500.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    assert!(
        e.message
            .contains("the sender did not come back within 5 s to resume"),
        "{e}"
    );
    // no call reached the relay (failed below HTTP, a gateway's 502): the relay is named
    let ResumeStep::Call(_) = r.on_break(cut(), &check, Some(5), 0.0) else {
        panic!()
    };
    let ResumeStep::Sleep(_) = r.on_call_failure(Failure::network(Cause {
        name: String::new(),
        message: "refused".into(),
    })) else {
        panic!()
    };
    let ResumeStep::Call(_) = r.on_slept(1000.0) else {
        panic!()
    };
    let ResumeStep::Sleep(_) = r.on_call(502, &NoHeaders, "", 2000.0) else {
        panic!()
    };
    let ResumeStep::Failed(e) = r.on_slept(4900.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    assert!(
        e.message
            .contains("the relay could not be reached within 5 s to resume"),
        "{e}"
    );
}
