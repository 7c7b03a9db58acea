use super::*;
use crate::client::error::Cause;
use crate::client::error::StopReason;
use crate::client::receipt::{self, Outcome};
use crate::client::request::NoHeaders;
use crate::client::stall::StallStep;
use crate::protocol::headers::PEER_HELLO;
use crate::protocol::hello::RESUME_RETRY_MS;

mod channel;
mod resume;

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
fn a_wait_without_timeout_goes_on_call_after_call() {
    // §11.2: a 408 to a 60 s call is the next call, with the hello, until the producer comes
    let mut c = Consumer::new(ReceiveConfig {
        timeout_s: None,
        ..cfg(true, false)
    })
    .unwrap();
    for _ in 0..3 {
        let Step::Rendezvous(r) = c.poll() else {
            panic!()
        };
        assert!(r.url.ends_with("mode=await-writer&timeout=60"), "{}", r.url);
        assert!(r
            .headers
            .iter()
            .any(|(k, _)| *k == crate::protocol::headers::HELLO));
        c.on_response(408, &NoHeaders, "[ERROR:CONNECT_TIMEOUT]\n");
    }
    let Step::Rendezvous(_) = c.poll() else {
        panic!()
    };
    c.on_response(200, &NoHeaders, "http://h:1/p\n");
    let Step::Get(g) = c.poll() else { panic!() };
    assert_eq!(g.url, "http://h:1/p");
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

// Regression (§12.1 `plain`, §12.3): a consumer that decrypts an age file its producer sent
// as it is resumed at its decryptor's last chunk, received the bytes beyond it twice, and its
// receipt, which commits to the bytes as they arrived, counted them twice. With `plain` it
// resumes at the bytes it holds, its decryptor keeping the chunk it holds.
#[test]
fn a_decrypting_consumer_of_a_plain_producer_resumes_at_the_bytes_it_holds() {
    use crate::crypto::{DecryptOptions, Decryptor, Encryptor, Format, Identity, Recipient};
    let mut enc = Encryptor::new(
        Format::Age,
        &[Recipient::passphrase_with_work_factor("pw", 1)],
    )
    .unwrap();
    let mut file = Vec::new();
    enc.update(&[7u8; 100_000], &mut file).unwrap();
    enc.finish(&mut file).unwrap();
    let held = &file[..file.len() - 20_000]; // the second chunk is partly here
    let offset_after_break = |plain: bool| {
        let mut r = resuming_consumer(60.0);
        let mut b = ConsumerBody::new(body_check(false).resuming_at_bytes(plain));
        let mut dec =
            Decryptor::new(&[Identity::passphrase("pw")], DecryptOptions::default()).unwrap();
        b.on_chunk(held).unwrap();
        dec.update(held, &mut Vec::new()).unwrap();
        let down = Failure::network(std::io::Error::other("reset"));
        let ResumeStep::Call(call) = b.on_break(down, Some(&mut r), Some(&mut dec), 0.0) else {
            panic!("a resume call")
        };
        let hello = call
            .headers
            .iter()
            .find(|(k, _)| *k == crate::protocol::headers::HELLO);
        hello.map(|(_, v)| v.clone()).unwrap_or_default()
    };
    assert_eq!(
        offset_after_break(true),
        format!("httpipe-resume=1; offset={}", held.len())
    );
    let chunk_end = offset_after_break(false);
    assert_ne!(
        chunk_end,
        offset_after_break(true),
        "an encrypting producer: a chunk's end"
    );
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
