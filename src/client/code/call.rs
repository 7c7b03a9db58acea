//! What a short-code machine asks its driver ([`CodeStep`]), the inputs every machine takes
//! ([`CodeMachine`]), the loop both machines share ([`Machine`] over one side's [`Steps`]),
//! and one request's life from the step that asks for it to its whole answer: sent, its
//! head, the code announced (if the relay holds the sender's channel), its body read.

use super::channel::Code;
use super::relay::Answer;
use crate::client::error::{Error, ErrorCode, Failure};
use crate::client::request::{Headers, Request};

/// Largest answer body kept, in bytes (pipe `c` carries the offer: a file name and a type;
/// status logs and error bodies are a few lines).
pub const BODY_LIMIT: usize = 64 * 1024;

/// What a short-code machine asks its driver to do now.
#[derive(Debug)]
pub enum CodeStep<T> {
    /// Make `req`, with `body` as its complete body when given (`Content-Length`); answer
    /// with [`CodeMachine::on_head`] once the status and headers arrive, or
    /// [`CodeMachine::on_failure`]. `req.timeout_ms` covers the request through the end of
    /// its body (the [`CodeStep::ReadBody`] that follows); a timeout that runs out is a
    /// stop ([`crate::client::error::StopReason::Timeout`]).
    Send { req: Request, body: Option<Vec<u8>> },
    /// The relay holds the sender's channel: show the user this code (once per exchange),
    /// then poll again.
    Announce(Code),
    /// Read the answer's body to its end, keeping at most `limit` bytes; answer with
    /// [`CodeMachine::on_body`] or [`CodeMachine::on_failure`].
    ReadBody { limit: usize },
    /// The exchange succeeded.
    Done(T),
    /// The exchange failed (the verdict to report).
    Failed(Error),
}

impl<T> CodeStep<T> {
    fn end(r: Result<T, Error>) -> Self {
        match r {
            Ok(t) => CodeStep::Done(t),
            Err(e) => CodeStep::Failed(e),
        }
    }
}

/// The short-code machines as their drivers see them ([`super::CodeSend`],
/// [`super::CodeReceive`]): one loop drives either. Poll, perform the step, feed its answer
/// back, until [`CodeStep::Done`] or [`CodeStep::Failed`].
pub trait CodeMachine {
    /// What the exchange gives when it succeeds.
    type Done;
    /// What to do now.
    fn poll(&mut self) -> CodeStep<Self::Done>;
    /// The status and headers of the answer to [`CodeStep::Send`].
    fn on_head(&mut self, status: u16, headers: &dyn Headers);
    /// The answer's body, read as [`CodeStep::ReadBody`] asked.
    fn on_body(&mut self, body: Vec<u8>);
    /// The request failed below HTTP, before its head or in its body (or was stopped).
    fn on_failure(&mut self, f: Failure);
}

/// One side's steps (§14.2): what it asks for next, given the whole answer to what it asked
/// last.
pub trait Steps {
    /// What the exchange gives when it succeeds.
    type Done;
    /// The next request into `call`, from `got` (the answer to the last one; `None` before
    /// the first); `Some` when the exchange is over.
    fn next(&mut self, call: &mut Call, got: Got) -> Result<Option<Self::Done>, Error>;
}

/// The answer a side waits on (`None`: it asked nothing yet).
pub type Got = Option<Result<Answer, Error>>;

/// A short-code machine: one side's [`Steps`] and the request in flight.
pub struct Machine<S: Steps> {
    steps: S,
    call: Call,
    end: End<S::Done>,
}

enum End<T> {
    Running,
    Over(Result<T, Error>),
    Told,
}

impl<S: Steps> Machine<S> {
    pub(super) fn of(steps: S) -> Self {
        Machine {
            steps,
            call: Call::Idle,
            end: End::Running,
        }
    }
}

impl<S: Steps> CodeMachine for Machine<S> {
    type Done = S::Done;

    fn poll(&mut self) -> CodeStep<S::Done> {
        loop {
            if let Some(step) = self.call.poll() {
                return step;
            }
            match std::mem::replace(&mut self.end, End::Told) {
                End::Running => {
                    let got = self.call.take();
                    self.end = match self.steps.next(&mut self.call, got) {
                        Ok(None) => End::Running,
                        Ok(Some(done)) => End::Over(Ok(done)),
                        Err(e) => End::Over(Err(e)),
                    };
                }
                End::Over(r) => return CodeStep::end(r),
                End::Told => return CodeStep::Failed(misuse("poll after the end")),
            }
        }
    }

    fn on_head(&mut self, status: u16, headers: &dyn Headers) {
        self.call.on_head(status, headers);
    }

    fn on_body(&mut self, body: Vec<u8>) {
        self.call.on_body(body);
    }

    fn on_failure(&mut self, f: Failure) {
        self.call.on_failure(f);
    }
}

pub(super) fn misuse(what: &str) -> Error {
    Error::new(
        ErrorCode::Unsupported,
        format!("internal error in the short-code exchange: {what}"),
    )
}

/// One request of the exchange.
pub enum Call {
    /// Nothing asked, or the answer was taken.
    Idle,
    /// To send; `announce`: the code to show once the relay holds this POST.
    Ask {
        req: Request,
        body: Option<Vec<u8>>,
        announce: Option<Code>,
    },
    AwaitHead {
        what: String,
        announce: Option<Code>,
    },
    Announce(Code, Answer),
    Read(Answer),
    AwaitBody(Answer),
    Answered(Result<Answer, Error>),
}

impl Call {
    pub fn ask(req: Request, body: Option<Vec<u8>>, announce: Option<Code>) -> Call {
        Call::Ask {
            req,
            body,
            announce,
        }
    }

    /// The driver's next step for this request; `None` when there is none (idle, or
    /// answered: [`Call::take`] the answer).
    pub fn poll<T>(&mut self) -> Option<CodeStep<T>> {
        match std::mem::replace(self, Call::Idle) {
            Call::Ask {
                req,
                body,
                announce,
            } => {
                *self = Call::AwaitHead {
                    what: req.describe(),
                    announce,
                };
                Some(CodeStep::Send { req, body })
            }
            Call::Announce(code, answer) => {
                *self = Call::Read(answer);
                Some(CodeStep::Announce(code))
            }
            Call::Read(answer) => {
                *self = Call::AwaitBody(answer);
                Some(CodeStep::ReadBody { limit: BODY_LIMIT })
            }
            waiting @ (Call::AwaitHead { .. } | Call::AwaitBody(_)) => {
                *self = waiting;
                Some(CodeStep::Failed(misuse("poll while waiting for an answer")))
            }
            other @ (Call::Idle | Call::Answered(_)) => {
                *self = other;
                None
            }
        }
    }

    /// The whole answer, once there is one.
    pub fn take(&mut self) -> Option<Result<Answer, Error>> {
        match std::mem::replace(self, Call::Idle) {
            Call::Answered(r) => Some(r),
            other => {
                *self = other;
                None
            }
        }
    }

    pub fn on_head(&mut self, status: u16, headers: &dyn Headers) {
        *self = match std::mem::replace(self, Call::Idle) {
            Call::AwaitHead { what, announce } => {
                let answer = Answer::head(what, status, headers);
                match announce {
                    Some(code) if answer.held() => Call::Announce(code, answer),
                    _ => Call::Read(answer),
                }
            }
            _ => Call::Answered(Err(misuse("an answer nobody asked for"))),
        };
    }

    pub fn on_body(&mut self, body: Vec<u8>) {
        *self = match std::mem::replace(self, Call::Idle) {
            Call::AwaitBody(mut answer) => {
                answer.body = body;
                answer.body.truncate(BODY_LIMIT);
                Call::Answered(Ok(answer))
            }
            _ => Call::Answered(Err(misuse("a body nobody asked for"))),
        };
    }

    pub fn on_failure(&mut self, f: Failure) {
        *self = Call::Answered(Err(match std::mem::replace(self, Call::Idle) {
            Call::AwaitHead { what, .. } => f.into_error(ErrorCode::Network, &what),
            Call::AwaitBody(answer) => f.into_error(ErrorCode::Network, &answer.what),
            _ => misuse("a failure nobody asked for"),
        }));
    }
}
