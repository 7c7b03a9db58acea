//! JavaScript `ReadableStream`s and Rust streams, both ways, at one promise or less per chunk
//! (issue #27): [`JsStreamReader`] reads a JavaScript stream from Rust (the source, each
//! response body), [`pumped_stream`] exposes a Rust stream to JavaScript (the released
//! stream, an upload's body).

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use futures::StreamExt;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// A `ReadableStreamDefaultReader`.
    #[wasm_bindgen(js_name = ReadableStreamDefaultReader)]
    type StreamReader;
    /// A `ReadableStream`, as far as reading it goes.
    type Readable;
    #[wasm_bindgen(method, catch, js_name = getReader)]
    fn get_reader(this: &Readable) -> Result<StreamReader, JsValue>;
    #[wasm_bindgen(method)]
    fn read(this: &StreamReader) -> Settling;
    #[wasm_bindgen(method)]
    fn cancel(this: &StreamReader) -> Settling;
    #[wasm_bindgen(method, js_name = releaseLock)]
    fn release_lock(this: &StreamReader);

    /// A promise settled through callbacks owned by JavaScript.
    type Settling;
    /// `promise.then(on_value, on_error)`.
    #[wasm_bindgen(method, js_name = then)]
    fn then_call(this: &Settling, on_value: &JsValue, on_error: &JsValue) -> JsValue;

    /// What `read()` resolves with.
    type ReadResult;
    #[wasm_bindgen(method, getter)]
    fn done(this: &ReadResult) -> bool;
    #[wasm_bindgen(method, getter)]
    fn value(this: &ReadResult) -> JsValue;
}

/// Where a [`JsStreamReader`]'s callbacks put a read's outcome.
#[derive(Default)]
struct ReadSlot {
    outcome: RefCell<Option<Result<JsValue, JsValue>>>,
    waker: RefCell<Option<Waker>>,
}

impl ReadSlot {
    fn settle(&self, outcome: Result<JsValue, JsValue>) {
        *self.outcome.borrow_mut() = Some(outcome);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// A JavaScript `ReadableStream` read from Rust, chunk by chunk (errors are JavaScript
/// exceptions). Every read settles through the same two callbacks, made once per stream:
/// `JsFuture` makes a pair per promise, each registered with the runtime's
/// `FinalizationRegistry` (issue #27: two per chunk, on every side of a transfer; a plain
/// Node transfer costs each side ~5 % less CPU without them). At its end the stream's lock is
/// released; dropped before, it cancels the stream.
pub struct JsStreamReader {
    reader: Option<StreamReader>,
    slot: Rc<ReadSlot>,
    on_value: JsValue,
    on_error: JsValue,
    reading: bool,
}

impl JsStreamReader {
    /// Locks `stream` to a new reader; a stream already locked is an error.
    pub fn new(stream: &web_sys::ReadableStream) -> Result<JsStreamReader, JsValue> {
        let reader = stream.unchecked_ref::<Readable>().get_reader()?;
        let slot = Rc::new(ReadSlot::default());
        let settle = |ok: bool| {
            let slot = slot.clone();
            // owned by JavaScript from here: a read still pending when this reader is
            // dropped settles into a slot nobody polls
            Closure::<dyn FnMut(JsValue)>::new(move |v| {
                slot.settle(if ok { Ok(v) } else { Err(v) })
            })
            .into_js_value()
        };
        Ok(JsStreamReader {
            reader: Some(reader),
            on_value: settle(true),
            on_error: settle(false),
            slot,
            reading: false,
        })
    }
}

impl futures::Stream for JsStreamReader {
    type Item = Result<JsValue, JsValue>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(reader) = &this.reader else {
            return Poll::Ready(None);
        };
        let outcome = this.slot.outcome.borrow_mut().take();
        match outcome {
            Some(Ok(v)) => {
                this.reading = false;
                let result: ReadResult = v.unchecked_into();
                if result.done() {
                    reader.release_lock(); // the end: nothing to cancel
                    this.reader = None;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Ok(result.value())))
            }
            Some(Err(e)) => {
                this.reading = false;
                reader.release_lock();
                this.reader = None;
                Poll::Ready(Some(Err(e)))
            }
            None => {
                *this.slot.waker.borrow_mut() = Some(cx.waker().clone());
                if !this.reading {
                    this.reading = true;
                    reader.read().then_call(&this.on_value, &this.on_error);
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for JsStreamReader {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            // a rejection of the cancel (a stream that errored meanwhile) concerns nobody
            let ignore = Closure::once_into_js(|_: JsValue| {});
            reader.cancel().then_call(&JsValue::UNDEFINED, &ignore);
        }
    }
}

#[wasm_bindgen]
extern "C" {
    /// A `ReadableStreamDefaultController` (the methods used here).
    #[derive(Clone)]
    pub(crate) type StreamController;
    #[wasm_bindgen(method, catch)]
    pub(crate) fn enqueue(this: &StreamController, chunk: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    pub(crate) fn close(this: &StreamController) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    pub(crate) fn error(this: &StreamController, e: &JsValue) -> Result<(), JsValue>;
}

/// A `ReadableStream` built on `underlying` (`start`, `pull`, `cancel`), pull-based: a
/// `highWaterMark` of 0, so nothing is taken from the source before a reader asks.
pub(crate) fn pulled_stream(
    underlying: &js_sys::Object,
) -> Result<web_sys::ReadableStream, JsValue> {
    let strategy = js_sys::Object::new();
    Reflect::set(&strategy, &"highWaterMark".into(), &0.into())?;
    let ctor: Function =
        Reflect::get(&js_sys::global(), &"ReadableStream".into())?.unchecked_into();
    let args = js_sys::Array::of2(underlying, &strategy);
    Ok(Reflect::construct(&ctor, &args)?.unchecked_into())
}

/// A stream of JavaScript values made in Rust (chunks, errors as JavaScript exceptions).
pub(crate) type JsValueStream = futures::stream::LocalBoxStream<'static, Result<JsValue, JsValue>>;

/// Where a [`pumped_stream`]'s items go: its controller, or an upload's stop.
pub(crate) trait PumpSink {
    /// The stream's controller (the source's `start`).
    fn started(&self, controller: StreamController);
    /// The next item; `None` at the end. After an error or the end the Rust stream is dropped.
    fn deliver(&self, item: Option<Result<JsValue, JsValue>>);
    /// The reader cancelled (the Rust stream is dropped).
    fn cancelled(&self);
}

/// What a [`pumped_stream`]'s source and its pump share.
struct Pumped {
    /// The Rust stream; `None` once it ended or failed, or the reader cancelled.
    stream: Option<JsValueStream>,
    /// A reader asked for a chunk (`pull`) that is not delivered yet.
    wanted: bool,
    cancelled: bool,
    /// The pump, waiting for `pull`.
    waker: Option<Waker>,
}

impl Pumped {
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// `stream` as a JavaScript `ReadableStream` whose items go to `sink`, pull-based (no chunk
/// is taken before a reader asks). One task per stream pumps it: `pull` only marks that a
/// chunk is wanted and the pump delivers it, with no promise per chunk (`wasm_streams`'
/// source, used before, made a `future_to_promise` per `pull`: issue #27). The reader's
/// `cancel` drops the Rust stream at once, as do its end and its first error.
pub(crate) fn pumped_stream(
    stream: JsValueStream,
    sink: Rc<dyn PumpSink>,
) -> Result<(web_sys::ReadableStream, Detach), JsValue> {
    let shared = Rc::new(RefCell::new(Pumped {
        stream: Some(stream),
        wanted: false,
        cancelled: false,
        waker: None,
    }));
    let underlying = js_sys::Object::new();
    let to = sink.clone();
    let start = Closure::once_into_js(move |c: JsValue| to.started(c.unchecked_into()));
    Reflect::set(&underlying, &"start".into(), &start)?;
    let s = shared.clone();
    let pull = Closure::<dyn FnMut(JsValue)>::new(move |_| {
        let mut st = s.borrow_mut();
        st.wanted = true;
        st.wake();
    });
    Reflect::set(&underlying, &"pull".into(), &pull.into_js_value())?;
    let (s, to) = (Detach(Rc::downgrade(&shared)), sink.clone());
    let cancel = Closure::<dyn FnMut(JsValue)>::new(move |_| {
        s.detach();
        to.cancelled();
    });
    Reflect::set(&underlying, &"cancel".into(), &cancel.into_js_value())?;
    let readable = pulled_stream(&underlying)?;
    // The pump holds the state weakly: a stream the garbage collector takes before its end
    // (its source's closures freed) takes the pump's waker, and so the pump, with it.
    wasm_bindgen_futures::spawn_local(pump(Rc::downgrade(&shared), sink));
    Ok((readable, Detach(Rc::downgrade(&shared))))
}

/// Lets a [`pumped_stream`]'s Rust stream go (the reader's cancel does, and the owner when it
/// is done with the stream: a runtime that never cancels an aborted request's body, as Node's
/// `fetch`, would otherwise keep it, and what it reads from, for as long as it keeps the body).
pub(crate) struct Detach(Weak<RefCell<Pumped>>);

impl Detach {
    pub(crate) fn detach(&self) {
        let Some(shared) = self.0.upgrade() else {
            return;
        };
        let stream = {
            let mut st = shared.borrow_mut();
            st.cancelled = true;
            st.wake();
            st.stream.take()
        };
        drop(stream); // outside the borrow: its drop may call into JavaScript
    }
}

/// Delivers the stream's items as `pull` asks for them, until the stream ends, fails or is
/// cancelled. No borrow of the state is held across a poll of the stream or a call into
/// JavaScript: `enqueue` may call `pull` again at once.
async fn pump(shared: Weak<RefCell<Pumped>>, sink: Rc<dyn PumpSink>) {
    loop {
        let step = futures::future::poll_fn(|cx| {
            let Some(shared) = shared.upgrade() else {
                return Poll::Ready(None);
            };
            let mut stream = {
                let mut st = shared.borrow_mut();
                if st.cancelled {
                    return Poll::Ready(None);
                }
                if !st.wanted {
                    st.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                match st.stream.take() {
                    Some(stream) => stream,
                    None => return Poll::Ready(None),
                }
            };
            let next = stream.poll_next_unpin(cx);
            let mut st = shared.borrow_mut();
            if st.cancelled {
                drop(st);
                drop(stream);
                return Poll::Ready(None);
            }
            match next {
                Poll::Pending => {
                    st.stream = Some(stream);
                    Poll::Pending
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    st.wanted = false;
                    st.stream = Some(stream);
                    Poll::Ready(Some((Some(Ok(chunk)), None)))
                }
                Poll::Ready(last) => Poll::Ready(Some((last, Some(stream)))),
            }
        })
        .await;
        let Some((item, finished)) = step else {
            return;
        };
        sink.deliver(item);
        if finished.is_some() {
            return;
        }
    }
}

/// A [`pumped_stream`] sink that hands everything to the stream's own controller.
#[derive(Default)]
struct ToController(RefCell<Option<StreamController>>);

impl PumpSink for ToController {
    fn started(&self, controller: StreamController) {
        *self.0.borrow_mut() = Some(controller);
    }

    fn deliver(&self, item: Option<Result<JsValue, JsValue>>) {
        let c = match item {
            Some(Ok(_)) => self.0.borrow().clone(),
            _ => self.0.borrow_mut().take(),
        };
        let Some(c) = c else { return };
        let _ = match item {
            Some(Ok(chunk)) => c.enqueue(&chunk),
            Some(Err(e)) => c.error(&e),
            None => c.close(),
        };
    }

    fn cancelled(&self) {
        self.0.borrow_mut().take();
    }
}

/// `stream` as a JavaScript `ReadableStream` ([`pumped_stream`]): its chunks enqueued, its
/// error the stream's error, its end the stream's end.
pub(crate) fn readable_from(stream: JsValueStream) -> Result<web_sys::ReadableStream, JsValue> {
    Ok(pumped_stream(stream, Rc::new(ToController::default()))?.0)
}
