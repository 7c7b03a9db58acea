//! `send`: the fetch adapter of the core's producer (`crate::client::producer`): it asks
//! the state machine what to do, does it with `fetch`, and reports back. Every decision
//! (rendezvous, streaming vs segmented and the fallback, part retries, status-log verdicts,
//! error classification) is the core's.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::ReadableStream;

use super::abort::Abort;
use super::bindings::{now_ms, sleep};
use super::chunks::{self, concat, ByteStream, Shared, View};
use super::crypto::{encrypt_stream, encryptor_for};
use super::error::into_js;
use super::http::{exchange, fetch, probe, streaming_uploads_supported, text, TEXT_LIMIT};
use super::options::Parsed;
use super::pagehide::PageHide;
use super::receipt::{self, Ledger};
use crate::client::error::{Error, ErrorCode};
use crate::client::producer::{Producer, SendReport, Step, StreamFailure};
use crate::client::rate::RateMeter;
use crate::client::request::{NoHeaders, Request};
use crate::client::resume::ReplayWindow;
use crate::client::status::Verdict;
use crate::client::transport::OriginMemory;
use crate::protocol::hello::FAILURE_NOTICE_WAIT_MS;

thread_local! {
    static MEMORY: RefCell<OriginMemory> = RefCell::new(OriginMemory::new());
}

/// `send(stream, options) → Promise<SendReport>` for a `ReadableStream<Uint8Array>` source
/// (the package entry turns `Blob`, `string`, `Uint8Array` and async iterables into one).
/// Resolves once the relay confirmed `[STATE:TRANSFER_SUCCESSFUL]` (the consumer got every
/// byte); rejects with `PEER_DISCONNECTED` if the consumer left, `ABORTED`, `UNAUTHORIZED`,
/// `FORBIDDEN`, `CONNECT_TIMEOUT`, `NETWORK`, `RELAY_ERROR`, `UNSUPPORTED`.
#[wasm_bindgen(js_name = sendStream)]
pub async fn send_stream(source: ReadableStream, options: JsValue) -> Result<JsValue, JsValue> {
    let p = Parsed::from_js(&options).map_err(into_js)?;
    let mut abort = Abort::new(p.signal.clone()).map_err(into_js)?;
    let started = now_ms();
    let meter = Rc::new(RefCell::new(RateMeter::new(started, p.size())));
    let result = send_inner(source, &p, &mut abort, meter.clone()).await;
    if result.is_err() {
        // Stop whatever is still running (the upload, a waiting part request).
        abort.abort_internal();
    }
    let report = result.map_err(into_js)?;
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
    p: &Parsed,
    abort: &mut Abort,
    meter: Rc<RefCell<RateMeter>>,
) -> Result<SendReport, Error> {
    let mut producer = Producer::<View>::new(p.send_config(streaming_uploads_supported())?)?;
    // What the receipt is checked against (§12.2): the plaintext's count, and the bytes on
    // the wire (hashed only when the consumer commits to them).
    let plain = Rc::new(RefCell::new(Ledger::default()));
    let wire = Rc::new(RefCell::new(Ledger::default()));
    let mut stream: ByteStream = receipt::committed(
        chunks::metered(
            chunks::source(source, abort.reason_cell()),
            meter.clone(),
            p.on_progress.clone(),
        ),
        plain.clone(),
    );
    let enc = if p.encrypted() {
        Some(Rc::new(RefCell::new(encryptor_for(&p.o)?)))
    } else {
        None
    };
    if let Some(e) = &enc {
        stream = encrypt_stream(stream, e.clone())?;
    }
    stream = receipt::committed(stream, wire.clone());
    // The replay window (§12.3) keeps what goes to the upload once both sides resume.
    let window = Rc::new(RefCell::new(ReplayWindow::<View>::new(0)));
    // What the source has not yielded yet, however many uploads read from it: a resumed
    // upload is the window's bytes, then this (never what an earlier replay left unsent).
    let source = Shared::new(chunks::recorded(
        chunks::stoppable(stream, abort.reason_cell()),
        window.clone(),
    ));
    let mut stream: ByteStream = source.reader().boxed_local();

    let mut reconnecting = false;
    // In a page: if it goes away mid-transfer, tell a consumer that may be resuming (§12.3).
    let page_left: Rc<RefCell<Option<Request>>> = Rc::default();
    let _page_hide = PageHide::watch({
        let page_left = page_left.clone();
        move || page_left.borrow_mut().take()
    });
    // Unarmed → armed (once the core knows the stream) → withdrawn (delivered, or failed
    // with its own notice on the way).
    let mut page_notice_armed = _page_hide.is_none();
    let mut page_notice_withdrawn = _page_hide.is_none();
    loop {
        {
            let w = window.borrow();
            producer.observe(now_ms(), w.low(), w.high());
        }
        if producer.is_reconnecting() != reconnecting {
            // "connection lost — resuming…" and back (§12.3)
            reconnecting = !reconnecting;
            let mut m = meter.borrow_mut();
            m.set_resume(reconnecting, producer.resumed());
            Parsed::report_progress(&p.on_progress, m.report(now_ms()));
        }
        let step = MEMORY.with(|m| producer.poll(&mut m.borrow_mut()));
        if !page_notice_armed {
            // armed once the core knows the stream (right after the step that starts it)
            if let Some(n) = producer.failure_notice(&Error::new(
                ErrorCode::Aborted,
                "the sending page went away (closed, reloaded or navigated elsewhere)",
            )) {
                *page_left.borrow_mut() = Some(n);
                page_notice_armed = true;
            }
        } else if !page_notice_withdrawn && producer.delivered() {
            page_left.borrow_mut().take();
            page_notice_withdrawn = true;
        }
        match step {
            Step::Rendezvous(req) => {
                match exchange(&req, abort, None).await {
                    Ok((status, headers, body)) => producer.on_response(status, &headers, &body),
                    Err(f) => producer.on_failure(f),
                }
                if producer.resumes() {
                    *window.borrow_mut() = ReplayWindow::new(p.resume_window);
                }
                // The receipt of a plain transfer, or of a consumer without keys, commits to
                // the bytes on the wire (§12.2).
                wire.borrow_mut().hash = crate::client::ledger::producer_hashes_wire(
                    producer.expects_receipt(),
                    producer.receipt_commits_to_plaintext(),
                );
            }
            Step::Receipt(req) => match exchange(&req, abort, None).await {
                Ok((status, headers, body)) => {
                    let transfer = producer.transfer_id().unwrap_or_default().to_string();
                    let (ours, key) = receipt::producer_commitment(
                        &plain.borrow(),
                        &wire.borrow(),
                        enc.as_deref(),
                        producer.receipt_commits_to_plaintext(),
                        &transfer,
                    );
                    producer.on_receipt(status, &headers, &body, &ours, key.as_deref());
                }
                Err(f) => producer.on_failure(f),
            },
            Step::Stream(req) => {
                let shared = Shared::new(std::mem::replace(
                    &mut stream,
                    futures::stream::empty().boxed_local(),
                ));
                upload_stream(&mut producer, &req, &shared, abort).await;
                // A fallback reads on from the same source (after the core's replay).
                stream = shared.reader().boxed_local();
            }
            Step::ResumeFrom(offset) => {
                // The core checked the offset against this window (§12.3).
                let replay = window.borrow().replay_from(offset).unwrap_or_default();
                stream = futures::stream::iter(replay.into_iter().map(|v| Ok(v.0)))
                    .chain(source.reader())
                    .boxed_local();
            }
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
            Step::Probe(req) => match probe(&req, abort.reason()).await {
                Ok(status) => producer.on_response(status, &NoHeaders, ""),
                Err(f) => producer.on_failure(f),
            },
            Step::Done(report) => return Ok(report),
            Step::Failed(e) => {
                // its own notice (a last word that outlives the page) replaces the page's
                page_left.borrow_mut().take();
                if let Some(notice) = producer.failure_notice(&e) {
                    // The consumer may be meeting us to resume: tell it nothing more comes.
                    // `send()` waits a moment for it (work left in the background dies with a
                    // Worker's request or a script that exits; a resuming consumer is on the
                    // channel within moments of the break), then the call goes on without it.
                    let call = wasm_bindgen_futures::JsFuture::from(
                        wasm_bindgen_futures::future_to_promise(async move {
                            if let Ok(mut a) = Abort::new(None) {
                                let _ = exchange(&notice, &mut a, None).await;
                            }
                            Ok(JsValue::UNDEFINED)
                        }),
                    );
                    let wait = Box::pin(sleep(FAILURE_NOTICE_WAIT_MS));
                    let _ = futures::future::select(call, wait).await;
                }
                return Err(e);
            }
        }
    }
}

/// One streaming `POST` whose body is the shared source; the status log is fed to the core
/// as it arrives (Node and Deno read it full-duplex; Chromium after the upload).
async fn upload_stream(
    producer: &mut Producer<View>,
    req: &Request,
    shared: &Rc<Shared>,
    abort: &Abort,
) {
    // The body reads the shared source only while this upload is the current one: a cut
    // upload that fetch still pulls from must never take bytes from the next (§12.3).
    let live = Rc::new(std::cell::Cell::new(true));
    let _close = chunks::CloseOnDrop(live.clone());
    let body = chunks::to_js(chunks::gated(
        chunks::cut_on_error(shared.reader().boxed_local(), abort.cutter()),
        live,
    ));
    let signal = abort.signal();
    let failed = |e: &JsValue, response_started: bool| StreamFailure {
        failure: abort.failure(e),
        replay: shared.take_replay(),
        response_started,
        source_error: shared.source_error(),
    };
    let resp = match fetch(req, &signal, Some(body.into()), true).await {
        Ok(r) => r,
        Err(e) => return producer.on_stream_failed(failed(&e, false)),
    };
    if resp.status() != 200 {
        let body = text(&resp, TEXT_LIMIT).await.unwrap_or_default();
        return producer.on_stream_refused(resp.status(), &body);
    }
    if let Some(body) = resp.body() {
        let mut log = chunks::raw(body);
        while let Some(piece) = log.next().await {
            match piece.and_then(|c| c.dyn_into::<Uint8Array>()) {
                Ok(c) => {
                    if producer.on_stream_log(&c.to_vec()) == Verdict::PeerDisconnected {
                        return;
                    }
                }
                Err(e) => return producer.on_stream_failed(failed(&e, true)),
            }
        }
    }
    producer.on_stream_end();
}
