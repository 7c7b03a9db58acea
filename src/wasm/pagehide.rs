//! A page that goes away (tab closed, reloaded, navigated elsewhere) stops its scripts before a
//! stream's cancel or a failed send can tell the other side, which would then wait out its
//! resume time (`docs/PROTOCOL.md` §12.3) for a peer that is gone. So, in a page only, the side
//! still transferring says its last word on `pagehide` with `fetch(…, { keepalive: true })`,
//! a request the browser finishes after the page is gone: the consumer its `cancelled` receipt
//! (§12.2), the producer its `failed=ABORTED` notice (§12.3).
//!
//! A last word already on its way when the page goes away (a receipt or a notice that the
//! page's own teardown provoked: the browser aborts the page's downloads first) is sent with
//! `keepalive` too (`Request::last_word`, `http.rs`), so it survives the page.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::EventTarget;

use std::cell::RefCell;
use std::rc::Rc;

use super::bindings::in_page;
use super::http::send_keepalive;
use crate::client::parts::ByteChunk;
use crate::client::producer::Producer;
use crate::client::request::Request;

/// The `pagehide` listener of one transfer, removed when this is dropped.
pub struct PageHide {
    target: EventTarget,
    listener: Closure<dyn FnMut()>,
}

impl PageHide {
    /// Calls `words` when the page goes away and sends the requests it returns (none:
    /// nothing to say). Outside a page (Node, Deno, workers: no `document`) registers nothing.
    /// (Boxed: one listener's code serves every caller, the module's weight, issue #27.)
    pub fn watch(words: Box<dyn Fn() -> Vec<Request>>) -> Option<PageHide> {
        if !in_page() {
            return None;
        }
        let target: EventTarget = js_sys::global().dyn_into().ok()?;
        let listener = Closure::<dyn FnMut()>::new(move || {
            for req in words() {
                send_keepalive(&req);
            }
        });
        target
            .add_event_listener_with_callback("pagehide", listener.as_ref().unchecked_ref())
            .ok()?;
        Some(PageHide { target, listener })
    }
}

impl Drop for PageHide {
    fn drop(&mut self) {
        let _ = self.target.remove_event_listener_with_callback(
            "pagehide",
            self.listener.as_ref().unchecked_ref(),
        );
    }
}

/// The producer's last words for `pagehide`: what the core's [`Producer::last_words`] would
/// say for an abort at that moment (§12.3's failure notice, §3.10's withdrawal, §4's
/// abandonment of a segmented upload; once the relay delivered every byte, §12.2's end, so that
/// a consumer that checks it is not left with a false cut), followed after each poll until the
/// transfer ends or fails with its own last words. Outside a page: nothing.
pub struct ProducerPageNotice {
    words: Rc<RefCell<Vec<Request>>>,
    _hide: Option<PageHide>,
    withdrawn: bool,
}

impl ProducerPageNotice {
    pub fn watch() -> Self {
        let words: Rc<RefCell<Vec<Request>>> = Rc::default();
        let hide = PageHide::watch({
            let words = words.clone();
            Box::new(move || std::mem::take(&mut *words.borrow_mut()))
        });
        let withdrawn = hide.is_none();
        ProducerPageNotice {
            words,
            _hide: hide,
            withdrawn,
        }
    }

    /// Follows the producer after each of its polls.
    pub fn update<T: ByteChunk>(&mut self, producer: &Producer<T>) {
        if self.withdrawn {
            return;
        }
        *self.words.borrow_mut() = producer
            .abandon_words("the sending page went away (closed, reloaded or navigated elsewhere)")
            .calls;
    }

    /// Nothing to say any more (the producer's own last words replace it).
    pub fn withdraw(&mut self) {
        self.words.borrow_mut().clear();
        self.withdrawn = true;
    }
}
