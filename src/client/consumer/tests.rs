use super::*;
use crate::client::error::Cause;
use crate::client::error::StopReason;
use crate::client::receipt::{self, Outcome};
use crate::client::request::NoHeaders;
use crate::client::stall::StallStep;
use crate::protocol::headers::PEER_HELLO;
use crate::protocol::hello::RESUME_RETRY_MS;

fn cfg(rendezvous: bool, encrypted: bool) -> ReceiveConfig {
    ReceiveConfig {
        relay: RelayBase::parse("http://h:1").unwrap(),
        path: "/p".into(),
        token: None,
        rendezvous,
        timeout_s: Some(5.0),
        encrypted,
        size: Some(99),
        receipt: true,
        resume_s: None,
        ciphertext: false,
    }
}

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

/// The resumer of a consumer whose rendezvous met a producer that resumes (§12.3).
fn resuming_consumer(resume_s: f64) -> Resumer {
    let mut c = cfg(true, false);
    c.resume_s = Some(resume_s);
    let mut c = Consumer::new(c).unwrap();
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    let h: &[(&str, &str)] = &[(PEER_HELLO, "httpipe=1; transfer=TID; resume")];
    c.on_response(200, &h, "http://h:1/p\n");
    c.resumer().expect("both sides resume")
}

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
    // a stream that doesn't say where it starts is refused
    let ResumeStep::Failed(e) = r.on_head(200, &NoHeaders, 1600.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::RelayError);
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
    assert!(e.message.contains("within 5 s to resume"), "{e}");
}

#[test]
fn rendezvous_get_and_metadata() {
    let mut c = Consumer::new(cfg(true, false)).unwrap();
    let Step::Rendezvous(r) = c.poll() else {
        panic!()
    };
    assert_eq!(r.url, "http://h:1/connect/v0/p?mode=await-writer&timeout=5");
    assert!(r
        .headers
        .contains(&(crate::protocol::headers::HELLO, "httpipe=1; receipt".into())));
    c.on_response(200, &NoHeaders, "http://other:2/p\n");
    assert_eq!(c.receipt_transfer(), None, "a producer without a hello");
    let Step::Get(g) = c.poll() else { panic!() };
    assert_eq!(g.url, "http://other:2/p");
    assert_eq!(g.timeout_ms, None, "the rendezvous already waited");
    let h: &[(&str, &str)] = &[
        ("content-type", "text/csv"),
        ("x-piping", "httpipe-size=12"),
        ("content-disposition", "attachment; filename=\"a.csv\""),
    ];
    c.on_head(200, &h);
    let Step::Stream(i, check) = c.poll() else {
        panic!()
    };
    assert_eq!(i.content_type.as_deref(), Some("text/csv"));
    assert_eq!(i.filename.as_deref(), Some("a.csv"));
    assert_eq!(i.size, Some(12));
    assert_eq!(i.progress_total, Some(12));
    assert!(
        check.on_end().is_ok(),
        "no Content-Length: nothing to check"
    );
}

#[test]
fn encrypted_metadata_is_not_the_plaintexts() {
    let mut c = Consumer::new(cfg(false, true)).unwrap();
    let Step::Get(g) = c.poll() else { panic!() };
    assert_eq!(g.timeout_ms, Some(5000.0));
    let h: &[(&str, &str)] = &[
        ("content-type", "application/octet-stream"),
        ("content-length", "500"),
    ];
    c.on_head(200, &h);
    let Step::Stream(i, _) = c.poll() else {
        panic!()
    };
    assert_eq!(i.content_type, None);
    assert_eq!(i.size, None);
    assert_eq!(i.progress_total, Some(99));
}

#[test]
fn refusals_and_failures() {
    let mut c = Consumer::new(cfg(false, false)).unwrap();
    let Step::Get(_) = c.poll() else { panic!() };
    c.on_head(403, &crate::client::request::NoHeaders);
    let Step::ReadErrorBody = c.poll() else {
        panic!()
    };
    c.on_error_body("[ERROR:FORBIDDEN] wrong mode\n");
    let Step::Failed(e) = c.poll() else { panic!() };
    assert_eq!(e.code, ErrorCode::Forbidden);

    let mut c = Consumer::new(cfg(false, false)).unwrap();
    let Step::Get(_) = c.poll() else { panic!() };
    c.on_failure(Failure::stopped(StopReason::Timeout, None));
    let Step::Failed(e) = c.poll() else { panic!() };
    assert_eq!(e.code, ErrorCode::ConnectTimeout);
}

#[test]
fn body_checks() {
    let mut c = Consumer::new(cfg(false, false)).unwrap();
    let Step::Get(_) = c.poll() else { panic!() };
    c.on_head(200, &vec![("content-length", "10")]);
    let Step::Stream(_, mut check) = c.poll() else {
        panic!()
    };
    check.on_bytes(4);
    let e = check.on_end().unwrap_err();
    assert_eq!(e.code, ErrorCode::Truncated);
    assert!(e.message.contains("got 4 of 10"), "{e}");
    check.on_bytes(6);
    assert!(check.on_end().is_ok());
    let cut = Failure::network(Cause {
        name: String::new(),
        message: "connection reset".into(),
    });
    assert_eq!(check.on_failure(cut).code, ErrorCode::Truncated);
    assert_eq!(
        check
            .on_failure(Failure::stopped(StopReason::User, None))
            .code,
        ErrorCode::Aborted
    );
}

/// Regression (#26): a consumer without keys wrote an age-rt stream's ciphertext out and
/// reported success; now it fails `WRONG_KEY` before the chunk that completes the header
/// line, unless it asked for the ciphertext.
#[test]
fn a_consumer_without_keys_refuses_ciphertext() {
    let start = |ciphertext: bool, encrypted: bool| {
        let mut cfg = cfg(false, encrypted);
        cfg.ciphertext = ciphertext;
        let mut c = Consumer::new(cfg).unwrap();
        let Step::Get(_) = c.poll() else { panic!() };
        c.on_head(200, &NoHeaders);
        let Step::Stream(_, check) = c.poll() else {
            panic!()
        };
        check
    };
    let mut check = start(false, false);
    assert!(check.checks_start());
    check.check_start(b"github.com/parsimonit/").unwrap();
    let e = check.check_start(b"age-rt-encryption/v0.2\n").unwrap_err();
    assert_eq!(e.code, ErrorCode::WrongKey);
    assert!(
        e.message.contains("the stream is encrypted (age-rt)"),
        "{e}"
    );
    // plain data is decided on its first bytes, and asked about no more
    let mut check = start(false, false);
    check.check_start(b"id,name\n").unwrap();
    assert!(!check.checks_start());
    // asked for the ciphertext, or decrypting: nothing to ask
    assert!(!start(true, false).checks_start());
    assert!(!start(false, true).checks_start());
}

fn body_check(sniff: bool) -> BodyCheck {
    BodyCheck::new("receiving /p".into(), Some(10), sniff)
}

/// The body's wire count is the offset a plain consumer resumes from, over resumes; the
/// stall clock starts at the first pending read and restarts with every byte.
#[test]
fn the_consumer_body_counts_the_offset_and_the_waiting_read() {
    let mut r = resuming_consumer(60.0);
    let mut b = ConsumerBody::new(body_check(false));
    b.on_chunk(b"abcd").unwrap();
    assert!(!b.waiting());
    let StallStep::WakeAt(t) = b.poll_stall(&mut r, None, 1_000.0) else {
        panic!()
    };
    assert_eq!(t, 11_000.0);
    assert!(b.waiting());
    // still the same read at 5 s: same deadline
    assert!(matches!(b.poll_stall(&mut r, None, 5_000.0), StallStep::WakeAt(t) if t == 11_000.0));
    // a byte: the clock restarts with the next pending read
    b.on_chunk(b"e").unwrap();
    assert!(matches!(b.poll_stall(&mut r, None, 7_000.0), StallStep::WakeAt(t) if t == 17_000.0));
    let StallStep::Call(call) = b.poll_stall(&mut r, None, 17_000.0) else {
        panic!("the stall call")
    };
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=5".into()
    )));
    assert!(b
        .on_stall_answer(&mut r, Some((408, &NoHeaders)), None, 18_000.0)
        .is_none());
    // a break resumes from the 5 bytes held
    let down = Failure::network(std::io::Error::other("reset"));
    let ResumeStep::Call(call) = b.on_break(down, Some(&mut r), None, 19_000.0) else {
        panic!("a resume call")
    };
    assert!(call.headers.contains(&(
        crate::protocol::headers::HELLO,
        "httpipe-resume=1; offset=5".into()
    )));
    b.on_resumed(BodyCheck::new("rest".into(), None, false), 5);
    b.on_chunk(b"fghij").unwrap();
    assert_eq!(b.received(), 10);
    b.on_end().unwrap();
}

/// Without a resumer a break is the body's error; a short body is `TRUNCATED`; a keyless
/// consumer refuses an age start before the chunk that completes it is handed out.
#[test]
fn the_consumer_body_fails_a_cut_a_short_end_and_unasked_ciphertext() {
    let mut b = ConsumerBody::new(body_check(false));
    b.on_chunk(b"abc").unwrap();
    let down = Failure::network(std::io::Error::other("reset"));
    let ResumeStep::Failed(e) = b.on_break(down, None, None, 0.0) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Truncated);
    assert_eq!(b.on_end().unwrap_err().code, ErrorCode::Truncated);

    let mut b = ConsumerBody::new(body_check(true));
    b.on_chunk(b"age-encryption.org/").unwrap();
    let e = b.on_chunk(b"v1\n-> X25519 abc\n").unwrap_err();
    assert_eq!(e.code, ErrorCode::WrongKey);
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
