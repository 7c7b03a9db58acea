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
use crate::client::error::{Error, ErrorCode};
use crate::client::parts::ByteChunk;
use crate::client::producer::Producer;
use crate::client::request::Request;

/// The `pagehide` listener of one transfer, removed when this is dropped.
pub struct PageHide {
    target: EventTarget,
    listener: Closure<dyn FnMut()>,
}

impl PageHide {
    /// Calls `notice` when the page goes away and sends the request it returns (`None`:
    /// nothing to say). Outside a page (Node, Deno, workers: no `document`) registers nothing.
    pub fn watch(notice: impl Fn() -> Option<Request> + 'static) -> Option<PageHide> {
        if !in_page() {
            return None;
        }
        let target: EventTarget = js_sys::global().dyn_into().ok()?;
        let listener = Closure::<dyn FnMut()>::new(move || {
            if let Some(req) = notice() {
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

/// The producer's last word for `pagehide` (§12.3): unarmed → armed (once the core has a
/// failure notice to give, right after the step that starts the stream) → withdrawn
/// (delivered, or failed with its own notice on the way). Outside a page: nothing.
pub struct ProducerPageNotice {
    notice: Rc<RefCell<Option<Request>>>,
    _hide: Option<PageHide>,
    armed: bool,
    withdrawn: bool,
}

impl ProducerPageNotice {
    pub fn watch() -> Self {
        let notice: Rc<RefCell<Option<Request>>> = Rc::default();
        let hide = PageHide::watch({
            let notice = notice.clone();
            move || notice.borrow_mut().take()
        });
        let idle = hide.is_none();
        ProducerPageNotice {
            notice,
            _hide: hide,
            armed: idle,
            withdrawn: idle,
        }
    }

    /// Follows the producer after each of its polls.
    pub fn update<T: ByteChunk>(&mut self, producer: &Producer<T>) {
        if !self.armed {
            if let Some(n) = producer.failure_notice(&Error::new(
                ErrorCode::Aborted,
                "the sending page went away (closed, reloaded or navigated elsewhere)",
            )) {
                *self.notice.borrow_mut() = Some(n);
                self.armed = true;
            }
        } else if !self.withdrawn && producer.delivered() {
            self.withdraw();
        }
    }

    /// Nothing to say any more (delivered, or the producer's own last words replace it).
    pub fn withdraw(&mut self) {
        self.notice.borrow_mut().take();
        self.withdrawn = true;
    }
}
