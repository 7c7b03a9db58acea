//! `receive` / `openReader`: the fetch adapter of the core's consumer
//! (`crate::client::consumer`): rendezvous (§5), `GET` the data URL (§3.3), body checks
//! (a cut connection is `TRUNCATED`), decryption (§7–§8) when keys are given.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::Response;

use super::bindings::{now_ms, sleep};
use super::chunks::{self, ByteStream};
use super::crypto::{decrypt_stream, decryptor_for};
use super::error::into_js;
use super::http::{body_stream, exchange, exchange_seen, fetch, say_last_words, text, JsHeaders};
use super::js_streams::JsValueStream;
use super::options::Parsed;
use super::pagehide::PageHide;
use super::presence;
use super::receipt::{with_receipt, Receipt};
use super::stall::{self, StallTimer};
use super::stop::Abort;
use crate::client::consumer::{
    BodyCheck, Consumer, ConsumerBody, Incoming, ResumeStep, Resumer, Seen, Step,
};
use crate::client::error::{Error, ErrorCode, Failure};
use crate::client::rate::RateMeter;
use crate::client::request::{Headers, Request, TEXT_LIMIT};
use crate::client::stall::StallStep;
use crate::crypto::Decryptor;

/// `receive(options) → Promise<{ stream, contentType?, filename?, size? }>`: resolves when the
/// producer's stream starts. The stream errors with `TRUNCATED` if the producer's stream was
/// cut, `ABORTED` on the signal, `WRONG_KEY` / `DECRYPT_FAILED` when decrypting. `size` is the
/// producer's `Content-Length` or its declared size (`X-Piping: httpipe-size=N`); never for
/// encrypted streams (the SDK sends no size in clear). Cancelling the stream disconnects, and
/// the producer's `send` rejects with `PEER_DISCONNECTED`.
#[wasm_bindgen(js_name = receive)]
pub async fn receive_js(options: JsValue) -> Result<JsValue, JsValue> {
    receive_inner(&options).await.map_err(into_js)
}

async fn receive_inner(options: &JsValue) -> Result<JsValue, Error> {
    let p = Parsed::from_js(options)?;
    // A decryptor is built first, so bad keys fail before anything waits on the relay.
    let decryptor = if p.encrypted() {
        Some(Rc::new(RefCell::new(decryptor_for(&p.o)?)))
    } else {
        None
    };
    let mut abort = Abort::new(p.signal.clone())?;
    let mut consumer = Consumer::new(p.receive_config()?)?;
    let mut response: Option<Response> = None;
    // A page that goes away before the stream started tells a producer that may wait for it
    // (§12.5), until this returns.
    let mut _page_left = None;
    loop {
        match consumer.poll() {
            Step::Rendezvous(req) => {
                // the producer's hello counts from the answer's head: a receive aborted while
                // the body is read still tells it (§12.5)
                let mut head =
                    |status, headers: &JsHeaders| consumer.on_rendezvous_head(status, headers);
                match exchange_seen(&req, &mut abort, None, &mut head).await {
                    Ok((status, headers, body)) => consumer.on_response(status, &headers, &body),
                    Err(f) => consumer.on_failure(f),
                }
                let calls = consumer.abandon_notice().calls;
                _page_left = PageHide::watch(Box::new(move || calls.clone()));
            }
            Step::Get(req) => {
                if let Some(ms) = req.timeout_ms {
                    abort.arm_timeout(ms);
                }
                // the producer's presence is checked while the head waits (§12.5)
                let check = consumer.presence_check(now_ms());
                let signal = abort.signal();
                let head = fetch(&req, &signal, None, false);
                let r = presence::checked(check, p.signal.clone(), head).await;
                abort.disarm_timeout();
                match r {
                    Ok(Ok(resp)) => {
                        consumer.on_head(resp.status(), &JsHeaders(resp.headers()));
                        response = Some(resp);
                    }
                    Ok(Err(e)) => consumer.on_failure(abort.failure(&e)),
                    Err(e) => {
                        abort.abort_internal();
                        consumer.on_failure(Failure::coded(e));
                    }
                }
            }
            Step::ReadErrorBody => {
                let body = match &response {
                    Some(r) => text(r, TEXT_LIMIT).await.unwrap_or_default(),
                    None => String::new(),
                };
                consumer.on_error_body(&body);
            }
            Step::Failed(e) => {
                // a producer that may be waiting for this consumer is told it left (§12.5)
                say_last_words(consumer.left_notice(e.code)).await;
                return Err(e);
            }
            Step::Stream(incoming, check) => {
                let body = response.take().and_then(body_stream).ok_or_else(|| {
                    Error::new(ErrorCode::RelayError, "the relay's response has no body")
                })?;
                return released(&consumer, incoming, check, body, abort, decryptor, &p);
            }
        }
    }
}

/// The stream `receive` resolves with, and what the producer said about it: the body through
/// the core's checks ([`checked`]), decrypted, its receipt (§12.2) and progress.
fn released(
    consumer: &Consumer,
    incoming: Incoming,
    check: BodyCheck,
    body: Input,
    abort: Abort,
    decryptor: Option<Rc<RefCell<Decryptor>>>,
    p: &Parsed,
) -> Result<JsValue, Error> {
    let meter = Rc::new(RefCell::new(RateMeter::new(
        now_ms(),
        incoming.progress_total,
    )));
    let resume = consumer.resumer().map(|r| Resume {
        resumer: r,
        dec: decryptor.clone(),
        signal: p.signal.clone(),
        meter: meter.clone(),
        on_progress: p.on_progress.clone(),
    });
    let manual = p.receipt.manual();
    let receipt = Receipt::new(consumer.receipt_plan(), decryptor.clone(), manual);
    // the wire bytes go to a receipt that commits to them though they are decrypted (§12.1)
    let wire_receipt = Some(receipt.clone()).filter(|r| r.commits_to_wire());
    let mut stream = checked(body, Rc::new(abort), check, resume, wire_receipt);
    if let Some(dec) = &decryptor {
        stream = match super::webcrypto::active() {
            Some(w) => super::webcrypto::decrypt_stream(stream, dec.clone(), w),
            None => decrypt_stream(stream, dec.clone()),
        };
    }
    stream = with_receipt(stream, receipt.clone());
    stream = chunks::metered(stream, meter, p.on_progress.clone(), None);
    let out = Object::new();
    let set = |k: &str, v: JsValue| Reflect::set(&out, &k.into(), &v).map(|_| ());
    let js = |e: JsValue| {
        super::error::from_js(
            &e,
            Default::default(),
            ErrorCode::Unsupported,
            "building the result",
        )
    };
    set("stream", chunks::to_js(stream).map_err(js)?.into()).map_err(js)?;
    if manual {
        set("confirm", receipt.confirm_fn().into()).map_err(js)?;
    }
    if let Some(ct) = incoming.content_type {
        set("contentType", ct.into()).map_err(js)?;
    }
    if let Some(name) = incoming.filename {
        set("filename", name.into()).map_err(js)?;
    }
    if let Some(n) = incoming.size {
        set("size", (n as f64).into()).map_err(js)?;
    }
    Ok(out.into())
}

/// What the body stream needs to resume after a break (§12.3).
struct Resume {
    resumer: Resumer,
    /// The decryptor: where a decrypting consumer resumes.
    dec: Option<Rc<RefCell<Decryptor>>>,
    /// The caller's signal (the resume calls stop with it).
    signal: Option<web_sys::AbortSignal>,
    /// Progress says "reconnecting" while the sides meet again.
    meter: Rc<RefCell<RateMeter>>,
    on_progress: Option<js_sys::Function>,
}

impl Resume {
    fn progress(&self, reconnecting: bool) {
        let mut m = self.meter.borrow_mut();
        m.set_resume(reconnecting, self.resumer.resumes);
        Parsed::report_progress(&self.on_progress, m.report(now_ms()));
    }
}

struct Body {
    input: Input,
    abort: Rc<Abort>,
    /// The body's check, wire bytes held and stall clock (the core's).
    core: ConsumerBody,
    resume: Option<Resume>,
    done: bool,
    stall: StallTimer,
    /// The receipt, when it commits to the bytes as they arrive (§12.1 `plain`).
    wire_receipt: Option<Rc<Receipt>>,
}

/// The response body through the core's [`BodyCheck`]; keeps `abort` (and so the signal
/// link) alive as long as the stream. With `resume`, a break meets the producer again and
/// the stream goes on with the rest (§12.3).
fn checked(
    body: Input,
    abort: Rc<Abort>,
    check: BodyCheck,
    resume: Option<Resume>,
    wire_receipt: Option<Rc<Receipt>>,
) -> ByteStream {
    let state = Body {
        input: body,
        abort,
        core: ConsumerBody::new(check),
        resume,
        done: false,
        stall: StallTimer::default(),
        wire_receipt,
    };
    futures::stream::unfold(state, |mut b| async move {
        if b.done {
            return None;
        }
        loop {
            let stall = b.resume.as_mut().map(|r| (&mut b.stall, r));
            let item = match next_or_stall(&mut b.input, &mut b.core, stall).await {
                Ok(item) => item,
                // The core's stall watch asks whether the producer waits too (§12.4).
                Err(call) => match on_stall(&mut b, call).await {
                    None => continue,
                    Some(Ok((input, check, at))) => {
                        b.input = input;
                        b.core.on_resumed(check, at);
                        continue;
                    }
                    Some(Err(e)) => {
                        b.done = true;
                        return Some((Err(e), b));
                    }
                },
            };
            let failure = match item {
                Some(Ok(v)) => match v.dyn_into::<Uint8Array>() {
                    Ok(chunk) => {
                        let n = chunk.length() as usize;
                        let head = |k: usize| chunk.subarray(0, k as u32).to_vec();
                        if let Err(e) = b.core.on_chunk_with(n, head) {
                            b.done = true;
                            return Some((Err(e), b));
                        }
                        if let Some(r) = &b.wire_receipt {
                            r.enter(&chunk, Seen::Arrived);
                        }
                        return Some((Ok(chunk), b));
                    }
                    Err(v) => b.abort.failure(&v),
                },
                Some(Err(e)) => b.abort.failure(&e),
                None => {
                    b.done = true;
                    return match b.core.on_end() {
                        Err(e) => Some((Err(e), b)),
                        Ok(()) => None,
                    };
                }
            };
            if let Err(e) = resume_or_fail(&mut b, failure).await {
                b.done = true;
                return Some((Err(e), b));
            }
        }
    })
    .boxed_local()
}

type Input = JsValueStream;

/// A break in the body (§12.3), as the core decides it: with a resumer the sides meet again
/// and the body goes on from the new input; otherwise (or when resuming fails) the error the
/// stream ends with.
async fn resume_or_fail(b: &mut Body, failure: Failure) -> Result<(), Error> {
    let step = match b.resume.as_mut() {
        Some(r) => {
            let mut dec = r.dec.as_ref().map(|d| d.borrow_mut());
            let dec = dec.as_deref_mut();
            b.core
                .on_break(failure, Some(&mut r.resumer), dec, now_ms())
        }
        None => b.core.on_break(failure, None, None, now_ms()),
    };
    if let ResumeStep::Failed(e) = step {
        return Err(e);
    }
    // a step other than a failure comes only with a resumer
    let Some(r) = b.resume.as_mut() else {
        let e = "internal error in the SDK's consumer: a resume without a resumer";
        return Err(Error::new(ErrorCode::Unsupported, e));
    };
    if matches!(step, ResumeStep::Call(_)) {
        r.progress(true);
    }
    let resumed = resume_after_break(r, step).await;
    r.progress(false);
    let (input, check, at) = resumed?;
    b.input = input;
    b.core.on_resumed(check, at);
    Ok(())
}

/// The next piece of `input`, or (with `stall`) the stall call the core's watch asks for
/// once the read waited long enough (§12.4); the read is then left pending in `input` and
/// goes on at the next call.
async fn next_or_stall(
    input: &mut Input,
    core: &mut ConsumerBody,
    stall: Option<(&mut StallTimer, &mut Resume)>,
) -> Result<Option<Result<JsValue, JsValue>>, Request> {
    let mut next = input.next();
    if let std::task::Poll::Ready(item) = futures::poll!(&mut next) {
        return Ok(item);
    }
    let Some((timer, r)) = stall else {
        return Ok(next.await);
    };
    loop {
        let step = {
            let mut dec = r.dec.as_ref().map(|d| d.borrow_mut());
            core.poll_stall(&mut r.resumer, dec.as_deref_mut(), now_ms())
        };
        let due = match step {
            StallStep::Off => return Ok(next.await),
            StallStep::WakeAt(t) => t,
            StallStep::Call(call) => return Err(call),
        };
        let fired = timer.until(due);
        futures::pin_mut!(fired);
        if let futures::future::Either::Left((item, _)) =
            futures::future::select(&mut next, fired).await
        {
            return Ok(item);
        }
    }
}

/// Makes the stall call, taking nothing from the body meanwhile: `None` when the core says
/// read on; else the connection stalled, and this is the body resumed as after a break (or
/// why it could not be).
async fn on_stall(b: &mut Body, call: Request) -> Option<Result<(Input, BodyCheck, u64), Error>> {
    let r = b.resume.as_mut()?;
    let answer = stall::call(&call, r.signal.clone()).await;
    let answer = answer.as_ref().map(|(s, h)| (*s, h as &dyn Headers));
    let step = {
        let mut dec = r.dec.as_ref().map(|d| d.borrow_mut());
        let dec = dec.as_deref_mut();
        b.core
            .on_stall_answer(&mut r.resumer, answer, dec, now_ms())?
    };
    // Stalled: stop reading the stalled body (dropping the reader cancels it).
    b.input = futures::stream::empty().boxed_local();
    r.progress(true);
    let resumed = resume_after_break(r, step).await;
    r.progress(false);
    Some(resumed)
}

/// Drives the core's [`Resumer`] from `step` to the resumed body: its stream, check and
/// starting offset.
async fn resume_after_break(
    r: &mut Resume,
    mut step: ResumeStep,
) -> Result<(Input, BodyCheck, u64), Error> {
    loop {
        step = match step {
            ResumeStep::Call(req) => {
                let mut abort = Abort::new(r.signal.clone())?;
                match exchange(&req, &mut abort, None).await {
                    Ok((status, headers, body)) => {
                        r.resumer.on_call(status, &headers, &body, now_ms())
                    }
                    Err(f) => r.resumer.on_call_failure(f),
                }
            }
            ResumeStep::Sleep(ms) => {
                sleep(ms).await;
                r.resumer.on_slept(now_ms())
            }
            ResumeStep::Get(req) => {
                let mut abort = Abort::new(r.signal.clone())?;
                if let Some(ms) = req.timeout_ms {
                    abort.arm_timeout(ms);
                }
                let got = fetch(&req, &abort.signal(), None, false).await;
                abort.disarm_timeout();
                match got {
                    Ok(resp) => {
                        match r
                            .resumer
                            .on_head(resp.status(), &JsHeaders(resp.headers()), now_ms())
                        {
                            ResumeStep::Resumed(check, at) => {
                                let body = body_stream(resp).ok_or_else(|| {
                                    Error::new(
                                        ErrorCode::RelayError,
                                        "the relay's resumed response has no body",
                                    )
                                })?;
                                // The abort link lives as long as the stream reads.
                                let input = body
                                    .map(move |x| {
                                        let _ = &abort;
                                        x
                                    })
                                    .boxed_local();
                                return Ok((input, check, at));
                            }
                            next => {
                                // the core dropped this response (another meeting's upload,
                                // a 503): close it, or the relay would go on sending into it
                                abort.abort_internal();
                                next
                            }
                        }
                    }
                    Err(e) => r.resumer.on_get_failure(abort.failure(&e), now_ms()),
                }
            }
            ResumeStep::Resumed(..) => {
                return Err(Error::new(
                    ErrorCode::Unsupported,
                    "internal error in the SDK's consumer: resumed without a resumed GET",
                ))
            }
            ResumeStep::Failed(e) => return Err(e),
        };
    }
}
