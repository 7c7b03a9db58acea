//! A streaming upload's request body, stopped so that the upload is cut, never ended
//! (`PROTOCOL.md` §10, §11.2 step 5): the body is a JavaScript `ReadableStream` whose controller
//! this side keeps, and a stop errors it and aborts the request in the order the core names
//! for this runtime ([`StopOrder`]: Chromium resets an HTTP/2 upload whose body errored but
//! ends an aborted one cleanly; workerd the other way round). And what a resumed upload reads
//! (§12.3, [`resumed`]): the replay window's bytes, then the source read again, then the rest.

use std::cell::RefCell;
use std::rc::Rc;

use futures::StreamExt;
use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;
use web_sys::ReadableStream;

use super::chunks::{self, ByteStream, Kept, Shared, SourceFailure};
use super::crypto::reseal_stream;
use super::error::{from_js, to_js as error_to_js};
use super::js_streams::{pumped_stream, Detach, PumpSink, StreamController};
use super::stop::Abort;
use crate::client::error::{Error, ErrorCode};
use crate::client::resume::Replay;
use crate::client::transport::StopOrder;
use crate::crypto::Encryptor;

/// Stops one upload: its body's controller (until the body ended) and the request's abort.
pub struct BodyStop {
    controller: RefCell<Option<StreamController>>,
    /// Lets the body's Rust stream (and the source it reads) go when the upload is over.
    detach: RefCell<Option<Detach>>,
    order: StopOrder,
    abort: Rc<dyn Fn()>,
}

impl BodyStop {
    /// Stops the upload so that it is cut: errors the body with `reason` and aborts the
    /// request, in the core's order. After an abort the body errors a microtask later, once
    /// the runtime has taken the abort (as a rejected `pull` would): workerd, which ends a
    /// request whose body errors, must see the abort first. The body always errors in the
    /// end: a body left pending kept a Node `fetch` from settling.
    pub fn stop(self: &Rc<Self>, reason: &JsValue) {
        match self.order {
            StopOrder::BodyFirst => {
                self.error(reason);
                (self.abort)();
            }
            StopOrder::AbortFirst => {
                (self.abort)();
                let (me, reason) = (self.clone(), reason.clone());
                spawn_local(async move { me.error(&reason) });
            }
        }
    }

    /// Errors the body only (the caller's abort follows: [`BodyStop::first`]).
    fn error(&self, reason: &JsValue) {
        if let Some(c) = self.controller.borrow_mut().take() {
            let _ = c.error(reason);
        }
    }

    /// What a stop of the whole operation (the caller's `AbortSignal`) does to this body
    /// before it aborts the requests: errors it where that must come first (`BodyFirst`).
    pub fn first(self: &Rc<Self>) -> Option<Rc<dyn Fn()>> {
        if self.order != StopOrder::BodyFirst {
            return None;
        }
        let me = self.clone();
        Some(Rc::new(move || {
            me.error(&error_to_js(&Error::new(
                ErrorCode::Aborted,
                "the upload was aborted by its AbortSignal",
            )))
        }))
    }

    /// The upload is over: the controller and the body's Rust stream are let go (the body
    /// would keep them, and so the source, while the runtime keeps it: Node's `fetch` never
    /// cancels an aborted request's body, and a caller's source stayed locked, never
    /// cancelled, after `send()` was aborted).
    pub fn release(&self) {
        self.controller.borrow_mut().take();
        if let Some(d) = self.detach.borrow_mut().take() {
            d.detach();
        }
    }
}

/// `stream` as the request body of a streaming upload (pull-based, no queue: the source is
/// read only as the HTTP client asks), with its [`BodyStop`]; `abort` aborts the request. A
/// chunk error (the source failed, or the operation stopped) stops the upload.
pub fn upload_body(
    stream: ByteStream,
    order: StopOrder,
    abort: Rc<dyn Fn()>,
) -> Result<(ReadableStream, Rc<BodyStop>), JsValue> {
    let stop = Rc::new(BodyStop {
        controller: RefCell::new(None),
        detach: RefCell::new(None),
        order,
        abort,
    });
    let values = stream.map(|r| r.map(JsValue::from).map_err(|e| error_to_js(&e)));
    let (body, detach) = pumped_stream(values.boxed_local(), Rc::new(Upload(stop.clone())))?;
    *stop.detach.borrow_mut() = Some(detach);
    Ok((body, stop))
}

/// Where an upload body's chunks go: its controller, kept by its [`BodyStop`].
struct Upload(Rc<BodyStop>);

impl PumpSink for Upload {
    fn started(&self, controller: StreamController) {
        *self.0.controller.borrow_mut() = Some(controller);
    }

    /// A chunk error (the source failed, or the operation stopped) stops the upload
    /// ([`BodyStop::stop`]: after an abort the body errors a microtask later, as a rejected
    /// `pull` would).
    fn deliver(&self, item: Option<Result<JsValue, JsValue>>) {
        match item {
            Some(Ok(chunk)) => {
                if let Some(c) = self.0.controller.borrow().as_ref() {
                    let _ = c.enqueue(&chunk);
                }
            }
            Some(Err(e)) => self.0.stop(&e),
            None => {
                if let Some(c) = self.0.controller.borrow_mut().take() {
                    let _ = c.close();
                }
            }
        }
    }

    fn cancelled(&self) {
        self.0.release();
    }
}

/// The stream a resumed upload reads (§12.3): the window's kept bytes from the agreed
/// offset, what must be read again from the reopened source, then the rest of the source.
pub fn resumed(
    replay: Option<Replay<Kept>>,
    (reopen, enc, reading): (Option<&Function>, Option<&RefCell<Encryptor>>, Reading<'_>),
    source: &Rc<Shared>,
) -> ByteStream {
    let (kept, again) = match replay {
        Some(Replay::Reopen { kept, from, to }) => (kept, reopened(reopen, enc, from, to, reading)),
        Some(Replay::Kept(kept)) => (kept, futures::stream::empty().boxed_local()),
        None => (Vec::new(), futures::stream::empty().boxed_local()),
    };
    futures::stream::iter(kept.into_iter().map(|k| Ok(k.to_send())))
        .chain(again)
        .chain(source.reader())
        .boxed_local()
}

/// What reading the source again needs: the operation's stop, and where its failure goes.
pub type Reading<'a> = (&'a Abort, &'a SourceFailure);

/// Wire bytes `from..to` again from the reopened source: a plain source's own bytes, an
/// encrypted one's chunks sealed again (`Encryptor::reseal`: each sent only if its tag is the
/// one sent before).
fn reopened(
    reopen: Option<&Function>,
    enc: Option<&RefCell<Encryptor>>,
    from: u64,
    to: u64,
    reading: Reading<'_>,
) -> ByteStream {
    let Some(enc) = enc else {
        return read_again(reopen, from, to, reading);
    };
    let resealer = enc.borrow().reseal(from, to);
    match resealer {
        Ok(r) => {
            let (start, end) = r.plaintext();
            reseal_stream(read_again(reopen, start, end, reading), r)
        }
        Err(e) => futures::stream::once(async move { Err(e.into()) }).boxed_local(),
    }
}

/// Source bytes `from..to`, read again through the package's `reopen`.
fn read_again(
    reopen: Option<&Function>,
    from: u64,
    to: u64,
    (abort, failed): Reading<'_>,
) -> ByteStream {
    let opened = reopen
        .ok_or_else(|| Error::new(ErrorCode::Unsupported, "this source cannot be reopened"))
        .and_then(|f| {
            f.call2(&JsValue::NULL, &(from as f64).into(), &(to as f64).into())
                .and_then(|s| s.dyn_into::<ReadableStream>())
                .map_err(|e| {
                    from_js(
                        &e,
                        abort.reason(),
                        ErrorCode::Unsupported,
                        "reopening the source",
                    )
                })
        });
    match opened {
        Ok(s) => chunks::exactly(
            chunks::source(s, abort.reason_cell(), failed.clone()),
            to - from,
        ),
        Err(e) => futures::stream::once(async move { Err(e) }).boxed_local(),
    }
}
