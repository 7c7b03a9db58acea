//! `send`: the fetch adapter of the core's producer (`crate::client::producer`): it asks
//! the state machine what to do, does it with `fetch`, and reports back. Every decision
//! (rendezvous, streaming vs segmented and the fallback, part retries, status-log verdicts,
//! error classification) is the core's.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::ReadableStream;

use super::bindings::{now_ms, sleep, Delay};
use super::body;
use super::chunks::{self, concat, BodyWatch, ByteStream, Kept, Shared, SourceFailure, View};
use super::crypto::{encrypt_stream, encryptor_for};
use super::error::{into_js, to_js};
use super::http::{exchange, fetch, runtime_streams, say_last_words, text, upload_cut, JsHeaders};
use super::options::Parsed;
use super::pagehide::ProducerPageNotice;
use super::receipt::{self, Ledger};
use super::stop::Abort;
use crate::client::error::{Error, ErrorCode, Failure};
use crate::client::producer::{Producer, SendReport, Step, StreamFailure};
use crate::client::rate::RateMeter;
use crate::client::receipt::Commitment;
use crate::client::request::{Headers, NoHeaders, Request, TEXT_LIMIT};
use crate::client::resume::ReplayWindow;
use crate::client::stall::StallStep;
use crate::client::status::Verdict;
use crate::client::transport::OriginMemory;
use crate::crypto::Encryptor;
use zeroize::Zeroizing;

thread_local! {
    static MEMORY: RefCell<OriginMemory> = RefCell::new(OriginMemory::new());
}

/// `send(stream, options, reopen?) → Promise<SendReport>` for a `ReadableStream<Uint8Array>`
/// source (the package entry turns `Blob`, `string`, `Uint8Array` and async iterables into
/// one). `reopen(start, end)`, given for a source that can be read again (a `Blob`, bytes),
/// returns a `ReadableStream` of its bytes `start..end`: a resume (§12.3) then reopens the
/// source instead of keeping a replay window.
/// Resolves once the relay confirmed `[STATE:TRANSFER_SUCCESSFUL]` (the consumer got every
/// byte); rejects with `PEER_DISCONNECTED` if the consumer left, `ABORTED`, `UNAUTHORIZED`,
/// `FORBIDDEN`, `CONNECT_TIMEOUT`, `NETWORK`, `RELAY_ERROR`, `UNSUPPORTED`.
#[wasm_bindgen(js_name = sendStream)]
pub async fn send_stream(
    source: ReadableStream,
    options: JsValue,
    reopen: Option<Function>,
) -> Result<JsValue, JsValue> {
    let p = Parsed::from_js(&options).map_err(into_js)?;
    let mut abort = Abort::new(p.signal.clone()).map_err(into_js)?;
    let started = now_ms();
    let meter = Rc::new(RefCell::new(RateMeter::new(started, p.size())));
    let failed = SourceFailure::default();
    let result = send_inner(source, reopen, &p, &mut abort, meter.clone(), &failed).await;
    if result.is_err() {
        // Stop whatever is still running (the upload, a waiting part request).
        abort.abort_internal();
    }
    // A source that failed is reported as what it is (§11.2 step 5): its error is the cause.
    let report = result.map_err(|e| failed.to_js(&e))?;
    let bytes = meter.borrow().bytes();
    let out = Object::new();
    Reflect::set(&out, &"bytes".into(), &(bytes as f64).into())?;
    Reflect::set(&out, &"durationMs".into(), &(now_ms() - started).into())?;
    Reflect::set(&out, &"transport".into(), &report.transport.as_str().into())?;
    Reflect::set(&out, &"relayState".into(), &report.relay_state.into())?;
    Reflect::set(&out, &"resumes".into(), &report.resumes.into())?;
    if let Some(r) = &report.receipt {
        let receipt = Object::new();
        Reflect::set(&receipt, &"bytes".into(), &(r.bytes as f64).into())?;
        Reflect::set(&receipt, &"digest".into(), &r.digest.clone().into())?;
        Reflect::set(&receipt, &"authenticated".into(), &r.authenticated.into())?;
        Reflect::set(&out, &"receipt".into(), &receipt)?;
    }
    Ok(out.into())
}

async fn send_inner(
    source: ReadableStream,
    reopen: Option<Function>,
    p: &Parsed,
    abort: &mut Abort,
    meter: Rc<RefCell<RateMeter>>,
    failed: &SourceFailure,
) -> Result<SendReport, Error> {
    let mut producer = Producer::<View>::new(p.send_config(runtime_streams(), upload_cut())?)?;
    // A source that can be read again (a `Blob`, bytes) resumes by reading it again (§12.3).
    let reopen = reopen.filter(|_| p.resume_s.is_some());
    let Pipeline {
        plain,
        wire,
        enc,
        window,
        source,
        ended,
    } = pipeline(source, reopen.is_some(), p, abort, meter.clone(), failed)?;
    // What was sent, as a receipt is checked against (§12.2).
    let ours = |p: &Producer<View>| sent(p, &plain, &wire, enc.as_deref());
    let mut stream: ByteStream = source.reader().boxed_local();

    let mut reconnecting = false;
    // The producer's presence calls (§12.5), until this returns (the verdict), and what they
    // learn: the consumer gave up before its stream started.
    let mut presence = None;
    let peer_left = super::presence::PeerLeft::default();
    // In a page: if it goes away mid-transfer, tell a consumer that may be resuming (§12.3).
    let mut page_left = ProducerPageNotice::watch();
    loop {
        // the stop that followed the consumer's word is not what the core reports (§12.5)
        if let Some(e) = peer_left.take() {
            producer.on_peer_left(e);
        }
        observe(&mut producer, &window, &ended, &ours);
        report_resume(&producer, &mut reconnecting, &meter, &p.on_progress);
        let step = MEMORY.with(|m| producer.poll(&mut m.borrow_mut()));
        page_left.update(&producer);
        match step {
            Step::Rendezvous(req) => {
                match exchange(&req, abort, None).await {
                    Ok((status, headers, body)) => producer.on_response(status, &headers, &body),
                    Err(f) => producer.on_failure(f),
                }
                if presence.is_none() {
                    let keep = |k| super::presence::keep(k, abort.cutter(), peer_left.clone());
                    presence = producer.presence().map(keep);
                }
                met(
                    &producer,
                    &window,
                    enc.as_deref(),
                    &wire,
                    reopen.is_some(),
                    p,
                );
            }
            Step::Receipt(req) => match exchange(&req, abort, None).await {
                Ok((status, headers, body)) => {
                    let (sent, key) = ours(&producer);
                    producer.on_receipt(status, &headers, &body, &sent, key.as_deref());
                }
                Err(f) => producer.on_failure(f),
            },
            Step::Stream(req) => {
                let shared = Shared::new(std::mem::replace(
                    &mut stream,
                    futures::stream::empty().boxed_local(),
                ));
                let upload = Upload {
                    req: &req,
                    shared: &shared,
                    abort,
                    window: &window,
                    ours: &ours,
                    ended: &ended,
                };
                upload_stream(&mut producer, upload).await;
                // A fallback reads on from the same source (after the core's replay).
                stream = shared.reader().boxed_local();
            }
            Step::ResumeFrom(offset) => {
                // The core checked the offset against this window (§12.3).
                let replay = window.borrow().replay_from(offset);
                let again = (reopen.as_ref(), enc.as_deref(), (&*abort, failed));
                stream = body::resumed(replay, again, &source);
            }
            Step::NeedSource | Step::Part(_) | Step::Sleep(_) | Step::Probe(_) => {
                segmented_step(&mut producer, step, abort, &mut stream).await
            }
            Step::Done(report) => return Ok(report),
            Step::Failed(e) => {
                // its own notice (a last word that outlives the page) replaces the page's
                page_left.withdraw();
                say_last_words(producer.last_words(&e)).await;
                return Err(e);
            }
        }
    }
}

/// The producer's bytes on their way to the upload: counted for the receipt, encrypted,
/// recorded in the replay window, shared by every upload attempt.
struct Pipeline {
    /// What the receipt is checked against (§12.2): the plaintext's count, and the bytes on
    /// the wire (hashed only when the consumer commits to them).
    plain: Rc<RefCell<Ledger>>,
    wire: Rc<RefCell<Ledger>>,
    enc: Option<Rc<RefCell<Encryptor>>>,
    /// The replay window (§12.3): what went to the upload once both sides resume; a source
    /// that can be reopened keeps only an encrypted stream's header.
    window: Rc<RefCell<ReplayWindow<Kept>>>,
    /// What the source has not yielded yet, however many uploads read from it: a resumed
    /// upload is the window's bytes, then this (never what an earlier replay left unsent).
    source: Rc<Shared>,
    /// The wire stream ended cleanly: the ledgers are final (the producer's end, §12.2).
    ended: Rc<Cell<bool>>,
}

/// Builds the [`Pipeline`] over the caller's stream; `reopens`: the source can be read again
/// (a plain one's bytes are the wire bytes; an encrypted one is sealed again from a chunk).
fn pipeline(
    source: ReadableStream,
    reopens: bool,
    p: &Parsed,
    abort: &Abort,
    meter: Rc<RefCell<RateMeter>>,
    failed: &SourceFailure,
) -> Result<Pipeline, Error> {
    let plain = Rc::new(RefCell::new(Ledger::default()));
    let wire = Rc::new(RefCell::new(Ledger::default()));
    let mut stream: ByteStream = chunks::metered(
        chunks::source(source, abort.reason_cell(), failed.clone()),
        meter,
        p.on_progress.clone(),
        Some(plain.clone()),
    );
    let web = super::webcrypto::active();
    let enc = if p.encrypted() {
        let e = encryptor_for(&p.o)?;
        let e = if reopens { e.seekable() } else { e };
        // WebCrypto's cipher seals the chunks the encryptor hands out (src/wasm/webcrypto.rs)
        let e = if web.is_some() { e.defer_seals() } else { e };
        Some(Rc::new(RefCell::new(e)))
    } else {
        None
    };
    if let Some(e) = &enc {
        stream = match web {
            Some(w) => super::webcrypto::encrypt_stream(stream, e.clone(), w)?,
            None => encrypt_stream(stream, e.clone())?,
        };
    }
    let ended = Rc::new(Cell::new(false));
    let window = Rc::new(RefCell::new(ReplayWindow::<Kept>::new(0)));
    let source = Shared::new(chunks::wire_tap(
        stream,
        wire.clone(),
        window.clone(),
        ended.clone(),
        abort.reason_cell(),
    ));
    Ok(Pipeline {
        plain,
        wire,
        enc,
        window,
        source,
        ended,
    })
}

/// What one streaming upload needs besides the producer.
struct Upload<'a> {
    req: &'a Request,
    shared: &'a Rc<Shared>,
    abort: &'a Abort,
    /// The replay window (what a stall call offers, §12.4).
    window: &'a RefCell<ReplayWindow<Kept>>,
    /// What was sent, for a receipt that answers a stall call (§12.2).
    ours: &'a dyn Fn(&Producer<View>) -> Sent,
    /// The source ended (the producer's end, §12.2).
    ended: &'a Cell<bool>,
}

/// The clock and the replay window, for the core (§12.3); once the source ended, what was
/// sent, when the core states its end (§12.2).
fn observe(
    producer: &mut Producer<View>,
    window: &RefCell<ReplayWindow<Kept>>,
    ended: &Cell<bool>,
    ours: &dyn Fn(&Producer<View>) -> Sent,
) {
    {
        let w = window.borrow();
        producer.observe(now_ms(), w.low(), w.high());
    }
    if ended.get() && producer.needs_end() {
        let (sent, _) = ours(producer);
        producer.attest(sent);
    }
}

/// Performs a step of the segmented loop or a probe (§4, §11.2): the source's next chunk, a
/// part, a pause, a probe of the relay.
async fn segmented_step(
    producer: &mut Producer<View>,
    step: Step,
    abort: &mut Abort,
    stream: &mut ByteStream,
) {
    match step {
        Step::NeedSource => match stream.next().await {
            Some(Ok(chunk)) => producer.on_chunk(View(chunk)),
            Some(Err(e)) => producer.on_source_error(e),
            None => producer.on_source_end(),
        },
        Step::Part(req) => {
            let body = concat(producer.part_body());
            match exchange(&req, abort, Some(body.into())).await {
                Ok((status, headers, log)) => producer.on_response(status, &headers, &log),
                Err(f) => producer.on_failure(f),
            }
        }
        Step::Sleep(ms) => {
            sleep(ms).await;
            producer.on_slept();
        }
        Step::Probe(req) => match exchange(&req, abort, None).await {
            Ok((status, ..)) => producer.on_response(status, &NoHeaders, ""),
            Err(f) => producer.on_failure(f),
        },
        _ => {}
    }
}

/// The rendezvous answered: when both sides resume, the replay window (a source that can be
/// reopened keeps only an encrypted stream's header); whether the wire bytes are hashed (the
/// receipt of a plain transfer, or of a consumer without keys, commits to them, §12.2).
fn met(
    producer: &Producer<View>,
    window: &RefCell<ReplayWindow<Kept>>,
    enc: Option<&RefCell<Encryptor>>,
    wire: &RefCell<Ledger>,
    reopens: bool,
    p: &Parsed,
) {
    let head = reopens.then(|| enc.map_or(0, |e| e.borrow().header_len()));
    if let Some(w) = producer.replay_window(head, p.resume_window) {
        *window.borrow_mut() = w;
    }
    wire.borrow_mut().hash = producer.hashes_wire();
}

/// Progress says "connection lost — resuming…" while the core meets the consumer again, and
/// back, with how many breaks were resumed (§12.3).
fn report_resume(
    producer: &Producer<View>,
    reconnecting: &mut bool,
    meter: &RefCell<RateMeter>,
    on_progress: &Option<Function>,
) {
    if producer.is_reconnecting() == *reconnecting {
        return;
    }
    *reconnecting = !*reconnecting;
    let mut m = meter.borrow_mut();
    m.set_resume(*reconnecting, producer.resumed());
    Parsed::report_progress(on_progress, m.report(now_ms()));
}

/// What was sent and the receipt key (§12.2), as a receipt is checked against.
type Sent = (Commitment, Option<Zeroizing<[u8; 32]>>);

/// What `p` sent (its ledgers and encryptor), as its receipt is checked against.
fn sent(
    p: &Producer<View>,
    plain: &RefCell<Ledger>,
    wire: &RefCell<Ledger>,
    enc: Option<&RefCell<Encryptor>>,
) -> Sent {
    let transfer = p.transfer_id().unwrap_or_default().to_string();
    receipt::producer_commitment(
        &plain.borrow(),
        &wire.borrow(),
        enc,
        p.receipt_commits_to_plaintext(),
        &transfer,
    )
}

/// One streaming `POST` whose body is the shared source; the status log is fed to the core
/// as it arrives (Node and Deno read it full-duplex; Chromium after the upload). Meanwhile
/// the core's stall watch runs (§12.4) and stops the upload when the core says so. Every stop
/// of the upload (the source failed, the caller's abort, a stall) cuts it: the body errors and
/// the request aborts in the core's order (§11.2 step 5, [`body::BodyStop`]).
async fn upload_stream(producer: &mut Producer<View>, up: Upload<'_>) {
    let watch = BodyWatch::new();
    // The upload's own controller (linked to the operation's): a stall stops this request
    // and nothing else.
    let own = match Abort::new(Some(up.abort.signal())) {
        Ok(a) => a,
        Err(_) => {
            return producer.on_stream_failed(StreamFailure {
                failure: Failure::stopped(up.abort.reason(), None),
                replay: up.shared.take_replay(),
                response_started: false,
                source_error: up.shared.source_error(),
            })
        }
    };
    // The body reads the shared source only while this upload is the current one: a cut
    // upload that fetch still pulls from must never take bytes from the next (§12.3).
    let live = Rc::new(Cell::new(true));
    let _close = chunks::CloseOnDrop(live.clone());
    let source = chunks::watched(
        chunks::gated(up.shared.reader().boxed_local(), live),
        watch.clone(),
    );
    let (body, stop) = match body::upload_body(source, producer.stop_order(), own.cutter()) {
        Ok(b) => b,
        Err(e) => {
            return producer.on_stream_failed(StreamFailure {
                failure: own.failure(&e),
                replay: up.shared.take_replay(),
                response_started: false,
                source_error: up.shared.source_error(),
            })
        }
    };
    let _first = FirstOnAbort::set(up.abort, &stop);
    let producer = RefCell::new(producer);
    let calls = StallCalls::default();
    let upload = stream_once(&producer, &up, &own, body);
    let stall = stall_watch(&producer, &up, &watch, &calls);
    futures::pin_mut!(upload, stall);
    match futures::future::select(upload, stall).await {
        // The core turned the stall into a resume (or the consumer's receipt ended it).
        futures::future::Either::Right(_) => stop.stop(&to_js(&Error::new(
            ErrorCode::Network,
            "the upload stalled (PROTOCOL.md §12.4)",
        ))),
        futures::future::Either::Left((_, stall)) => {
            // A stall call still out may have met the consumer (its receipt, or its ask to
            // resume): the relay handed that to this call alone, so its answer goes to the
            // core, whatever the upload's end made of the transfer.
            calls.ended.set(true);
            if calls.out.get() {
                stall.await;
            }
        }
    }
}

/// While one upload runs, the caller's `AbortSignal` stops its body first where that is what
/// cuts it ([`body::BodyStop::first`]); the upload's end lets the body go.
struct FirstOnAbort<'a> {
    abort: &'a Abort,
    stop: Rc<body::BodyStop>,
}

impl<'a> FirstOnAbort<'a> {
    fn set(abort: &'a Abort, stop: &Rc<body::BodyStop>) -> Self {
        abort.set_first(stop.first());
        FirstOnAbort {
            abort,
            stop: stop.clone(),
        }
    }
}

impl Drop for FirstOnAbort<'_> {
    fn drop(&mut self) {
        self.abort.set_first(None);
        self.stop.release();
    }
}

/// The stall calls of one upload (§12.4).
#[derive(Default)]
struct StallCalls {
    /// One is out.
    out: std::cell::Cell<bool>,
    /// The upload ended: make no more.
    ended: std::cell::Cell<bool>,
}

/// Runs the core's stall watch of the upload (§12.4): sleeps until the core's time, makes
/// the call it asks for, holding the body while the call is out. Resolves only when the core
/// says the upload is to stop.
async fn stall_watch(
    producer: &RefCell<&mut Producer<View>>,
    up: &Upload<'_>,
    watch: &BodyWatch,
    calls: &StallCalls,
) {
    while !calls.ended.get() {
        let step = {
            let mut p = producer.borrow_mut();
            observe(&mut p, up.window, up.ended, up.ours);
            p.poll_stall(watch.blocked_ms(now_ms()))
        };
        let call = match step {
            StallStep::Off => return futures::future::pending().await,
            StallStep::WakeAt(t) => {
                Delay::new((t - now_ms()).max(0.0)).await;
                continue;
            }
            StallStep::Call(call) => call,
        };
        watch.hold();
        calls.out.set(true);
        let answer = super::stall::call(&call, Some(up.abort.signal())).await;
        calls.out.set(false);
        let stop = {
            let mut p = producer.borrow_mut();
            let (c, k) = (up.ours)(&p);
            let answer = answer.as_ref().map(|(s, h)| (*s, h as &dyn Headers));
            p.on_stall_answer(answer, &c, k.as_deref())
        };
        watch.release();
        if stop {
            return;
        }
    }
}

/// The upload itself, with `body` as its request body.
async fn stream_once(
    producer: &RefCell<&mut Producer<View>>,
    up: &Upload<'_>,
    own: &Abort,
    body: ReadableStream,
) {
    let (req, shared, abort) = (up.req, up.shared, up.abort);
    let signal = own.signal();
    let failed = |e: &JsValue, response_started: bool| StreamFailure {
        failure: abort.failure(e),
        replay: shared.take_replay(),
        response_started,
        source_error: shared.source_error(),
    };
    let resp = match fetch(req, &signal, Some(body.into()), true).await {
        Ok(r) => r,
        Err(e) => return producer.borrow_mut().on_stream_failed(failed(&e, false)),
    };
    if resp.status() != 200 {
        let body = text(&resp, TEXT_LIMIT).await.unwrap_or_default();
        return producer.borrow_mut().on_stream_refused(
            resp.status(),
            &JsHeaders(resp.headers()),
            &body,
        );
    }
    if let Some(body) = resp.body() {
        let mut log = chunks::raw(body);
        while let Some(piece) = log.next().await {
            match piece.and_then(|c| c.dyn_into::<Uint8Array>()) {
                Ok(c) => {
                    if producer.borrow_mut().on_stream_log(&c.to_vec()) == Verdict::PeerDisconnected
                    {
                        return;
                    }
                }
                Err(e) => return producer.borrow_mut().on_stream_failed(failed(&e, true)),
            }
        }
    }
    let source_error = shared.source_error();
    producer
        .borrow_mut()
        .on_stream_end(source_error, abort.reason());
}
