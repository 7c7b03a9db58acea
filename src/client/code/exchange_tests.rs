//! The two machines driven against each other through a fake relay that holds the channel's
//! pipes in memory (no network): who waits for whom, the busy-channel loop, the verdicts.

use std::collections::HashMap;

use super::*;
use crate::client::code::{Code, CodeMachine, CodeStep, BODY_LIMIT, CHANNEL_MAX, MAX_TRIES};
use crate::client::error::{ErrorCode, Failure, StopReason};
use crate::client::request::{Method, NoHeaders, Request};
use crate::client::urls::RelayBase;
use crate::crypto::OsRandom;

const RELAY: &str = "http://relay:1";
const LOG_DONE: &[u8] = b"[INFO] Waiting for 1 receiver(s)...\n[STATE:TRANSFER_SUCCESSFUL]\n";

fn path_of(url: &str) -> String {
    let p = url.strip_prefix(RELAY).unwrap_or(url);
    p.split('?').next().unwrap_or(p).to_string()
}

/// `"POST /code/v1/7/a"`.
fn key(method: Method, path: &str) -> String {
    format!("{} {path}", method.as_str())
}

/// An answer's body: its bytes, or the status log of a POST on a pipe, which ends when a
/// reader took the pipe's bytes.
enum Body {
    Bytes(Vec<u8>),
    LogOf(String),
}

enum Outcome {
    Head(u16, Vec<(&'static str, &'static str)>, Body),
    /// The relay holds the request until the other side comes.
    Wait,
    Fail(Failure),
}

/// The relay's pipes (§3), as far as the exchange uses them.
#[derive(Default)]
struct Relay {
    /// path → (the bytes a writer left, whether a reader took them)
    pipes: HashMap<String, (Vec<u8>, bool)>,
    /// `"GET /code/v1/7/b"` → fails below HTTP.
    cut: Vec<String>,
    /// `"POST /code/v1/7/b"` → refused with this status.
    refuse: HashMap<String, u16>,
}

impl Relay {
    /// Another writer holds pipe `pipe` of every channel.
    fn all_busy(&mut self, channels: std::ops::RangeInclusive<u16>, pipe: char) {
        for n in channels {
            let stale = vec![7u8; 65];
            self.pipes
                .insert(format!("/code/v1/{n}/{pipe}"), (stale, false));
        }
    }

    fn answer(&mut self, req: &Request, body: Option<&[u8]>) -> Outcome {
        let path = path_of(&req.url);
        let k = key(req.method, &path);
        if self.cut.contains(&k) {
            let reset = std::io::Error::other("connection reset");
            return Outcome::Fail(Failure::network(reset));
        }
        if let Some(status) = self.refuse.get(&k) {
            return Outcome::Head(*status, vec![], Body::Bytes(b"[ERROR] no".to_vec()));
        }
        match (req.method, path.strip_prefix("/connect/v0")) {
            (Method::Post, _) => {
                if let Some((_, false)) = self.pipes.get(&path) {
                    let busy = vec![("X-Httpipe-Error", "another-sender")];
                    let text = b"[ERROR] Another sender is connected".to_vec();
                    return Outcome::Head(400, busy, Body::Bytes(text));
                }
                let bytes = body.unwrap_or_default().to_vec();
                self.pipes.insert(path.clone(), (bytes, false));
                Outcome::Head(200, vec![], Body::LogOf(path))
            }
            (Method::Get, Some(pipe)) => match self.pipes.get(pipe) {
                Some((_, false)) => Outcome::Head(200, vec![], Body::Bytes(req.url.clone().into())),
                _ => Outcome::Wait,
            },
            _ => match self.pipes.get_mut(&path) {
                Some((bytes, taken @ false)) => {
                    *taken = true;
                    Outcome::Head(200, vec![], Body::Bytes(bytes.clone()))
                }
                _ => Outcome::Wait,
            },
        }
    }

    /// The body, once there is all of it.
    fn read(&self, body: &Body) -> Option<Vec<u8>> {
        match body {
            Body::Bytes(b) => Some(b.clone()),
            Body::LogOf(path) => self
                .pipes
                .get(path)
                .filter(|(_, taken)| *taken)
                .map(|_| LOG_DONE.to_vec()),
        }
    }
}

/// One side: its machine and the request it waits on.
struct Party<M: CodeMachine> {
    m: M,
    /// Every request it made, in order.
    sent: Vec<Request>,
    /// The request sent whose head hasn't come.
    pending: Option<(Request, Option<Vec<u8>>)>,
    /// The answer's body, once its head came.
    body: Option<Body>,
    reading: bool,
    announced: Vec<String>,
    end: Option<Result<M::Done, Error>>,
}

trait Side {
    /// One move against `relay`; false when it waits for the other side (or has ended).
    fn step(&mut self, relay: &mut Relay) -> bool;
    /// Nobody moves: what this side waits on runs out (the relay's 408 for a wait on a
    /// sender, else the step's timeout). False when it waits on nothing.
    fn expire(&mut self) -> bool;
}

impl<M: CodeMachine> Party<M> {
    fn new(m: M) -> Self {
        Party {
            m,
            sent: vec![],
            pending: None,
            body: None,
            reading: false,
            announced: vec![],
            end: None,
        }
    }

    /// The requests made, as `"POST /code/v1/7/a"`.
    fn log(&self) -> Vec<String> {
        self.sent
            .iter()
            .map(|r| key(r.method, &path_of(&r.url)))
            .collect()
    }

    fn error(&self) -> &Error {
        match &self.end {
            Some(Err(e)) => e,
            _ => panic!("no error: {:?}", self.log()),
        }
    }
}

impl<M: CodeMachine> Side for Party<M> {
    fn step(&mut self, relay: &mut Relay) -> bool {
        if self.end.is_some() {
            return false;
        }
        if let Some((req, body)) = &self.pending {
            match relay.answer(req, body.as_deref()) {
                Outcome::Wait => return false,
                Outcome::Fail(f) => self.m.on_failure(f),
                Outcome::Head(status, headers, body) => {
                    self.m.on_head(status, &headers);
                    self.body = Some(body);
                }
            }
            self.pending = None;
            return true;
        }
        if self.reading {
            let Some(body) = self.body.as_ref().and_then(|b| relay.read(b)) else {
                return false;
            };
            self.reading = false;
            self.body = None;
            self.m.on_body(body);
            return true;
        }
        match self.m.poll() {
            CodeStep::Send { req, body } => {
                self.sent.push(req.clone());
                self.pending = Some((req, body));
            }
            CodeStep::Announce(code) => self.announced.push(code.to_string()),
            CodeStep::ReadBody { limit } => {
                assert_eq!(limit, BODY_LIMIT);
                self.reading = true;
            }
            CodeStep::Done(d) => self.end = Some(Ok(d)),
            CodeStep::Failed(e) => self.end = Some(Err(e)),
        }
        true
    }

    fn expire(&mut self) -> bool {
        let timeout = || Failure::stopped(StopReason::Timeout, None);
        if let Some((req, _)) = self.pending.take() {
            if req.url.contains("mode=await-writer") {
                self.m.on_head(408, &NoHeaders);
                self.body = Some(Body::Bytes(b"[ERROR] timeout".to_vec()));
            } else {
                self.m.on_failure(timeout());
            }
            return true;
        }
        if self.reading {
            self.reading = false;
            self.m.on_failure(timeout());
            return true;
        }
        false
    }
}

/// Moves every side until all have ended; when nobody moves, the first side that waits
/// runs out of time.
fn run(relay: &mut Relay, sides: &mut [&mut dyn Side]) {
    for _ in 0..10_000 {
        let mut moved = false;
        for s in sides.iter_mut() {
            moved |= s.step(relay);
        }
        if !moved && !sides.iter_mut().any(|s| s.expire()) {
            return;
        }
    }
    panic!("the exchange never ended");
}

fn code_relay() -> CodeRelay {
    CodeRelay::new(RelayBase::parse(RELAY).unwrap(), None)
}

fn offer() -> Offer {
    Offer::new(
        Some("report.pdf".into()),
        Some(3 << 20),
        Some("application/pdf".into()),
    )
}

fn sender(timeout_s: Option<f64>) -> Party<CodeSend> {
    Party::new(CodeSend::new(
        code_relay(),
        offer(),
        timeout_s,
        Box::new(OsRandom),
    ))
}

fn receiver(code: &str) -> Party<CodeReceive> {
    let code = Code::parse(code).unwrap();
    Party::new(CodeReceive::new(code_relay(), code, Box::new(OsRandom)))
}

/// The sender's code, once it holds a channel (it then waits for a receiver).
fn hold(relay: &mut Relay, s: &mut Party<CodeSend>) -> String {
    while s.step(relay) {}
    assert_eq!(s.announced.len(), 1, "{:?} {:?}", s.announced, s.log());
    s.announced[0].clone()
}

/// A fresh relay and a sender holding a channel: its code and channel.
fn held() -> (Relay, Party<CodeSend>, String, u16) {
    let mut relay = Relay::default();
    let mut s = sender(None);
    let code = hold(&mut relay, &mut s);
    let n = Code::parse(&code).unwrap().channel();
    (relay, s, code, n)
}

/// `e` has `code` and says `words`.
fn says(e: &Error, code: ErrorCode, words: &str) {
    assert_eq!(e.code, code, "{}", e.message);
    assert!(e.message.contains(words), "{}", e.message);
}

fn channel_of(key: &str) -> u16 {
    key.split('/').nth(3).unwrap().parse().unwrap()
}

#[test]
fn a_right_code_gives_both_sides_the_same_keys_and_the_offer() {
    let mut relay = Relay::default();
    let mut s = sender(Some(5.0));
    let code = hold(&mut relay, &mut s);
    let n = Code::parse(&code).unwrap().channel();
    // typed as heard: case and spaces don't matter
    let mut r = receiver(&code.to_uppercase().replace('-', "  "));
    run(&mut relay, &mut [&mut s, &mut r]);

    let sent = s.end.take().unwrap().unwrap();
    let (got, offer) = r.end.take().unwrap().unwrap();
    assert_eq!(sent.path, got.path);
    assert_eq!(sent.recipient, got.recipient);
    assert_eq!(*sent.identity, *got.identity);
    assert_eq!(offer, self::offer());
    assert_eq!(s.announced, vec![code]);
    let pipe = |m: &str, p: &str| format!("{m} /code/v1/{n}/{p}");
    assert_eq!(
        s.log(),
        [pipe("POST", "a"), pipe("GET", "b"), pipe("POST", "c")]
    );
    assert_eq!(
        r.log(),
        [
            format!("GET /connect/v0/code/v1/{n}/a"),
            pipe("GET", "a"),
            pipe("POST", "b"),
            pipe("GET", "c")
        ]
    );
    // step 1 waits as long as the sender's timeout, the others 30 s; the wait for a
    // sender is the relay's 10 s (+ 5 s backstop)
    let timeouts = |p: &[Request]| p.iter().map(|r| r.timeout_ms).collect::<Vec<_>>();
    assert_eq!(
        timeouts(&s.sent),
        [Some(5000.0), Some(30_000.0), Some(30_000.0)]
    );
    assert_eq!(
        timeouts(&r.sent),
        [
            Some(15_000.0),
            Some(30_000.0),
            Some(30_000.0),
            Some(30_000.0)
        ]
    );
    assert!(r.sent[0].url.ends_with("?mode=await-writer&timeout=10"));
    // the machines are over
    assert!(matches!(s.m.poll(), CodeStep::Failed(e) if e.code == ErrorCode::Unsupported));
}

#[test]
fn busy_channels_then_a_free_one() {
    let mut relay = Relay::default();
    relay.all_busy(1..=999, 'a');
    let mut s = sender(None);
    let code = hold(&mut relay, &mut s);
    let posts = s.log();
    let channels: Vec<u16> = posts.iter().map(|k| channel_of(k)).collect();
    assert!(posts.len() > 6, "{posts:?}");
    assert!(posts
        .iter()
        .all(|k| k.starts_with("POST ") && k.ends_with("/a")));
    // 1–99 first, then 1–999, then 1–9999; every channel but the last was busy
    assert!(channels[..3].iter().all(|n| *n <= 99), "{channels:?}");
    assert!(channels[3..6].iter().all(|n| *n <= 999), "{channels:?}");
    let (last, before) = channels.split_last().unwrap();
    assert!(before.iter().all(|n| *n <= 999), "{channels:?}");
    assert!((1000..=CHANNEL_MAX).contains(last));
    // the code shown is the held channel's, shown once; no POST waits forever
    assert_eq!(Code::parse(&code).unwrap().channel(), *last);
    assert_eq!(s.sent[0].timeout_ms, None);

    let mut r = receiver(&code);
    run(&mut relay, &mut [&mut s, &mut r]);
    let sent = s.end.take().unwrap().unwrap();
    assert_eq!(r.end.take().unwrap().unwrap().0.path, sent.path);
    assert_eq!(s.announced.len(), 1);
}

#[test]
fn the_busy_limit() {
    let mut relay = Relay::default();
    relay.all_busy(1..=CHANNEL_MAX, 'a');
    let mut s = sender(None);
    run(&mut relay, &mut [&mut s]);
    says(
        s.error(),
        ErrorCode::RelayBusy,
        &format!("the relay's code channels are busy: {MAX_TRIES} channels in a row"),
    );
    assert_eq!(s.sent.len(), MAX_TRIES as usize);
    assert!(s.announced.is_empty());
}

#[test]
fn a_wrong_code_fails_both_sides_and_the_real_code_finds_no_sender() {
    let (mut relay, mut s, code, n) = held();
    let words: Vec<&str> = code.split('-').collect();
    let other = if words[1] == "adroitness" {
        "adviser"
    } else {
        "adroitness"
    };
    let mut r = receiver(&format!("{n}-{other}-{}", words[2]));
    run(&mut relay, &mut [&mut s, &mut r]);

    says(
        s.error(),
        ErrorCode::WrongCode,
        "the receiver used another code",
    );
    // c is sent all the same, so that the receiver fails too
    assert_eq!(s.log().last().unwrap(), &format!("POST /code/v1/{n}/c"));
    says(
        r.error(),
        ErrorCode::WrongCode,
        "the sender's code is another one",
    );

    // a code works once: the real receiver now finds nobody (the relay's 408)
    let mut late = receiver(&code);
    run(&mut relay, &mut [&mut late]);
    says(late.error(), ErrorCode::WrongCode, "no sender is waiting");
    assert_eq!(late.sent.len(), 1);
}

#[test]
fn wrong_code_is_the_verdict_even_when_c_fails() {
    let (mut relay, mut s, code, n) = held();
    relay.cut.push(format!("POST /code/v1/{n}/c"));
    let words: Vec<&str> = code.split('-').collect();
    let other = if words[2] == "aardvark" {
        "absurd"
    } else {
        "aardvark"
    };
    let mut r = receiver(&format!("{n}-{}-{other}", words[1]));
    run(&mut relay, &mut [&mut s, &mut r]);
    assert_eq!(s.error().code, ErrorCode::WrongCode);
    // the receiver never gets a c: its step runs out, and says the sender did not answer
    says(r.error(), ErrorCode::WrongCode, "the sender did not answer");
}

#[test]
fn someone_else_on_the_channel() {
    // another writer already on b (the receiver comes first): the receiver's POST b is
    // refused as busy, and the sender reads the stranger's b
    let (mut relay, mut s, code, _) = held();
    relay.all_busy(1..=CHANNEL_MAX, 'b');
    let mut r = receiver(&code);
    run(&mut relay, &mut [&mut r]);
    run(&mut relay, &mut [&mut s]);
    says(
        r.error(),
        ErrorCode::WrongCode,
        "someone else answered this code first",
    );
    assert_eq!(s.error().code, ErrorCode::WrongCode);

    // another writer on c (before the receiver reads it): the sender's POST c is refused
    // as busy
    let (mut relay, mut s, code, _) = held();
    relay.all_busy(1..=CHANNEL_MAX, 'c');
    let mut r = receiver(&code);
    while r.step(&mut relay) {} // up to its POST b
    run(&mut relay, &mut [&mut s]);
    says(s.error(), ErrorCode::WrongCode, "someone else is answering");
}

#[test]
fn a_failed_step_ends_the_exchange() {
    // GET b fails below HTTP: NETWORK naming the request; the receiver's POST b runs out
    let (mut relay, mut s, code, n) = held();
    relay.cut.push(format!("GET /code/v1/{n}/b"));
    let mut r = receiver(&code);
    run(&mut relay, &mut [&mut s, &mut r]);
    says(
        s.error(),
        ErrorCode::Network,
        &format!("GET {RELAY}/code/v1/{n}/b"),
    );
    says(
        r.error(),
        ErrorCode::WrongCode,
        "the sender did not answer within 30 s",
    );

    // the relay refuses the receiver's POST b (a token that only reads): FORBIDDEN
    let (mut relay, mut s, code, n) = held();
    relay.refuse.insert(format!("POST /code/v1/{n}/b"), 403);
    let mut r = receiver(&code);
    run(&mut relay, &mut [&mut s, &mut r]);
    assert_eq!(r.error().code, ErrorCode::Forbidden);
    assert_eq!(r.log().len(), 3);
    // the sender's GET b runs out: not "no peer arrived" (issue #26: a stranger that took A
    // left the sender with a 30-s timeout that read like a network failure)
    says(
        s.error(),
        ErrorCode::WrongCode,
        "the receiver that took this code's first message did not answer within 30 s",
    );
    assert!(s.error().message.contains("nothing was sent"));

    // a per-address limit of the relay on the sender's POST a: RELAY_BUSY at once, no retry
    let mut relay = Relay::default();
    for n in 1..=CHANNEL_MAX {
        relay.refuse.insert(format!("POST /code/v1/{n}/a"), 429);
    }
    let mut s = sender(None);
    run(&mut relay, &mut [&mut s]);
    assert_eq!(s.error().code, ErrorCode::RelayBusy);
    assert_eq!(s.sent.len(), 1);

    // no receiver within the sender's timeout: CONNECT_TIMEOUT naming POST a
    let mut relay = Relay::default();
    let mut s = sender(Some(1.0));
    run(&mut relay, &mut [&mut s]);
    says(s.error(), ErrorCode::ConnectTimeout, "/a: no peer arrived");
    assert_eq!(s.announced.len(), 1);
}

#[test]
fn a_driver_out_of_step_gets_an_error_not_a_panic() {
    let mut s = CodeSend::new(code_relay(), offer(), None, Box::new(OsRandom));
    assert!(matches!(s.poll(), CodeStep::Send { .. }));
    // polled again before the answer
    assert!(matches!(s.poll(), CodeStep::Failed(e) if e.code == ErrorCode::Unsupported));
    // a body before its head
    s.on_body(vec![]);
    assert!(matches!(s.poll(), CodeStep::Failed(e) if e.code == ErrorCode::Unsupported));

    // no randomness: the sender fails before any request
    let empty = crate::crypto::FixedRandom::new(vec![]);
    let mut s = CodeSend::new(code_relay(), offer(), None, Box::new(empty));
    assert!(matches!(s.poll(), CodeStep::Failed(_)));
}
