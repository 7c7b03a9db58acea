//! The I/O half of the core's stall watch (`PROTOCOL.md` §12.4, decided in
//! [`crate::client::stall`]): one timer set to the time the core names, and the one stall
//! call the core asks for. The driver asks the core when the timer fires and hands it the
//! call's answer; it decides nothing here.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::time::Sleep;

use super::http::{text_request, Answer};
use super::stop::Stop;
use crate::client::request::Request;

/// What woke the watch.
pub(crate) enum StallEvent {
    /// The time the core named came: ask it again.
    Due,
    /// The stall call came back (`None`: it failed below HTTP).
    Answered(Option<Answer>),
}

/// The timer and the call out, on the driver's clock (`clock`: its zero).
pub(crate) struct StallWatch {
    clock: Instant,
    timer: Option<Pin<Box<Sleep>>>,
    call: Option<BoxFuture<'static, Option<Answer>>>,
}

impl StallWatch {
    /// A watch due at once (the driver asks the core first thing).
    pub(crate) fn new(clock: Instant) -> Self {
        StallWatch {
            clock,
            timer: Some(Box::pin(tokio::time::sleep(Duration::ZERO))),
            call: None,
        }
    }

    /// Wakes at `at_ms` on the driver's clock, or earlier: a timer already set to fire
    /// before that is kept (the driver asks the core again when it fires; no timer is made
    /// per chunk).
    pub(crate) fn wake_at(&mut self, at_ms: f64) {
        let at = tokio::time::Instant::from(
            self.clock + Duration::from_secs_f64(at_ms.max(0.0) / 1000.0),
        );
        match self.timer.as_mut() {
            Some(t) if t.deadline() <= at => {}
            Some(t) => t.as_mut().reset(at),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// True while a timer is set.
    pub(crate) fn armed(&self) -> bool {
        self.timer.is_some()
    }

    /// Makes the stall call (stopped with `stop`); [`StallWatch::poll_event`] gives its answer.
    pub(crate) fn call(&mut self, http: &reqwest::Client, req: Request, stop: &Stop) {
        let (http, stop) = (http.clone(), stop.clone());
        self.timer = None;
        self.call = Some(async move { text_request(&http, &req, None, &stop).await.ok() }.boxed());
    }

    /// True while a call is out.
    pub(crate) fn calling(&self) -> bool {
        self.call.is_some()
    }

    /// The next event: the call's answer while one is out, else the timer; pending when
    /// neither is set.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<StallEvent> {
        if let Some(call) = self.call.as_mut() {
            let answer = ready!(call.as_mut().poll(cx));
            self.call = None;
            return Poll::Ready(StallEvent::Answered(answer));
        }
        if let Some(t) = self.timer.as_mut() {
            ready!(t.as_mut().poll(cx));
            self.timer = None;
            return Poll::Ready(StallEvent::Due);
        }
        Poll::Pending
    }

    /// [`StallWatch::poll_event`] as a future.
    pub(crate) async fn next(&mut self) -> StallEvent {
        futures_util::future::poll_fn(|cx| self.poll_event(cx)).await
    }
}
