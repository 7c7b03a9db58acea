//! The producer: drives [`Producer`] (every protocol decision) with reqwest, for
//! [`super::Client::send`] and (through [`super::writer`]) [`super::Client::open_writer`].

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::body::{self, Source};
use super::chunks::{self, Meter, WIRE_CHANNEL};
use super::crypto::{Encoder, Sealed};
use super::http::{self, failure, text_request, HeaderView};
use super::presence;
use super::stall::{StallEvent, StallWatch};
use super::stop::Stop;
use super::{lock, resume_option, SendOptions, SendReport};
use crate::client::error::{Error, Failure, StopReason};
use crate::client::keys;
use crate::client::ledger;
use crate::client::options::{receipt_config, resume_seconds, ReceiptOption};
use crate::client::parts;
use crate::client::producer::{self, Metadata, Producer, SendConfig, Step, StreamFailure};
use crate::client::receipt;
use crate::client::request::{Headers, Request};
use crate::client::resume::MAX_WINDOW;
use crate::client::stall::StallStep;
use crate::client::status::Verdict;
use crate::client::transport::OriginMemory;
use crate::client::transport::{RuntimeStreams, UploadCut};
use zeroize::Zeroizing;

/// What is known per relay origin about streaming uploads, for the whole process (§10).
fn memory() -> std::sync::MutexGuard<'static, OriginMemory> {
    static MEMORY: OnceLock<Mutex<OriginMemory>> = OnceLock::new();
    MEMORY
        .get_or_init(|| Mutex::new(OriginMemory::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

pub(super) struct Prepared {
    pub(super) driver: Driver,
    pub(super) encoder: Encoder,
    pub(super) meter: std::sync::Arc<Meter>,
    pub(super) tx: mpsc::Sender<body::Item>,
    pub(super) stop: Stop,
}

/// Validates the options and builds everything before anything waits on the relay.
pub(super) async fn prepare(http: &reqwest::Client, o: &SendOptions) -> Result<Prepared, Error> {
    let relay = o.target.relay_base()?;
    let part_size = parts::part_size(o.part_size.map(|n| n as f64))?;
    if o.auto_flush.is_some_and(|d| d.is_zero()) {
        return Err(Error::usage("`auto_flush` must be longer than zero"));
    }
    // a passphrase's scrypt runs at the start of the upload, beside the consumer's
    // (`Encoder::start`)
    // natively an empty list is the default: no recipients given
    let recipients = (!o.recipients.is_empty()).then_some(o.recipients.as_slice());
    let enc = keys::encryptor(o.passphrase.as_deref(), recipients, o.format)?;
    if o.resume_window > MAX_WINDOW {
        return Err(Error::usage(format!(
            "`resume_window` must be at most {MAX_WINDOW} bytes (1 GiB), got {}",
            o.resume_window
        )));
    }
    let receipt = match (o.receipt, o.ciphertext_receipt) {
        (false, _) => ReceiptOption::Off,
        (true, false) => ReceiptOption::Auto,
        (true, true) => ReceiptOption::Ciphertext,
    };
    let resume_s = resume_seconds(Some(resume_option(o.resume)))?;
    let receipt_timeout = ("receipt_timeout", Some(o.receipt_timeout.as_secs_f64()));
    let cfg = SendConfig {
        relay,
        path: o.target.path.clone(),
        token: o.target.token.clone(),
        rendezvous: o.rendezvous,
        timeout_s: o.timeout.map(|d| d.as_secs_f64()),
        upload: o.upload,
        part_size,
        meta: Metadata {
            content_type: o.content_type.clone(),
            filename: o.filename.clone(),
            size: o.size,
        },
        encrypted: enc.is_some(),
        runtime_streams: RuntimeStreams::Yes,
        // hyper resets (HTTP/2) or closes (HTTP/1.1) a request whose body stream fails: the
        // upload's cancel fails its body (§11.2 step 5)
        upload_cut: UploadCut::BodyError,
        receipt: receipt_config(receipt, receipt_timeout, resume_s)?,
        resume_s,
    };
    let producer = Producer::new(cfg)?;
    let stop = Stop::new();
    let (tx, rx) = mpsc::channel(WIRE_CHANNEL);
    let source = Source::new(rx, stop.clone());
    let sealed = Arc::new(Mutex::new(Sealed::default()));
    let meter = Meter::new(o.size, o.on_progress.clone());
    Ok(Prepared {
        driver: Driver {
            http: http.clone(),
            producer,
            source,
            stop: stop.clone(),
            window: o.resume_window,
            sealed: sealed.clone(),
            meter: meter.clone(),
            clock: Instant::now(),
            reconnecting: false,
            ended: false,
            presence: None,
            peer_left: presence::PeerLeft::default(),
        },
        encoder: Encoder::new(enc, sealed),
        meter,
        tx,
        stop,
    })
}

/// Stops the operation when dropped (a send future dropped midway: the upload is cut, never
/// ended cleanly).
pub(super) struct StopOnDrop(pub(super) Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop(StopReason::Internal, None);
    }
}

/// Runs the pump and the driver together; the driver's outcome decides (the pump is dropped
/// with it).
pub(super) async fn with_pump<T>(
    pump: impl Future<Output = ()>,
    drive: impl Future<Output = T>,
) -> T {
    tokio::pin!(pump);
    tokio::pin!(drive);
    let mut pumping = true;
    loop {
        tokio::select! {
            _ = &mut pump, if pumping => pumping = false,
            r = &mut drive => return r,
        }
    }
}

pub(super) fn report(
    r: Result<producer::SendReport, Error>,
    started: Instant,
    meter: &Meter,
) -> Result<SendReport, Error> {
    let rep = r?;
    meter.finish();
    Ok(SendReport {
        bytes: meter.bytes(),
        duration: started.elapsed(),
        transport: rep.transport,
        relay_state: rep.relay_state,
        receipt: rep.receipt,
        resumes: rep.resumes,
    })
}

/// `Client::send`.
pub(crate) async fn send<R: AsyncRead + Send + Unpin + 'static>(
    http: &reqwest::Client,
    source: R,
    opts: SendOptions,
) -> Result<SendReport, Error> {
    let started = Instant::now();
    let mut p = prepare(http, &opts).await?;
    let _guard = StopOnDrop(p.stop);
    let pump = chunks::pump_reader(source, p.encoder, p.tx, p.meter.clone());
    let r = with_pump(pump, p.driver.run(None)).await;
    p.driver.source.close();
    report(r, started, &p.meter)
}

/// Runs the producer's steps.
pub(super) struct Driver {
    http: reqwest::Client,
    producer: Producer<Bytes>,
    pub(super) source: Source,
    stop: Stop,
    /// The replay window's size, once both sides resume (§12.3).
    window: usize,
    /// The encoder's plaintext count and encryptor, once it finished (§12.2).
    sealed: Arc<Mutex<Sealed>>,
    meter: Arc<Meter>,
    /// The core's clock (resume times).
    clock: Instant,
    /// Progress said "reconnecting".
    reconnecting: bool,
    /// [`Driver::run`] returned (its failure notice, if any, was sent).
    ended: bool,
    /// The producer's presence calls (§12.5), from the rendezvous until the verdict.
    presence: Option<tokio::task::JoinHandle<()>>,
    /// What the presence calls learned: the consumer gave up before its stream started.
    peer_left: presence::PeerLeft,
}

impl Drop for Driver {
    /// Dropped midway (a send future dropped, a task aborted): like a page that goes away
    /// (§12.3), tell a consumer that may be resuming that nothing more comes, in the
    /// background while the runtime runs.
    fn drop(&mut self) {
        if let Some(p) = self.presence.take() {
            p.abort();
        }
        if self.ended {
            return;
        }
        let words =
            (self.producer).abandon_words("the sender stopped midway (its task was dropped)");
        for req in words.calls {
            http::spawn_finishing(http::say(self.http.clone(), req));
        }
    }
}

impl Driver {
    /// The verdict: no more presence calls (§12.5; an open one is cancelled).
    fn end_presence(&mut self) {
        self.ended = true;
        if let Some(p) = self.presence.take() {
            p.abort();
        }
    }

    /// The clock and the replay window, for the core (§12.3); once the source ended, what was
    /// sent (the producer's end, §12.2).
    fn observe(&mut self) {
        let (low, high) = self.source.window();
        let now = self.clock.elapsed().as_secs_f64() * 1000.0;
        self.producer.observe(now, low, high);
        if self.producer.needs_end() && self.source.ended() {
            let (sent, _) = self.sent();
            self.producer.attest(sent);
        }
    }

    pub(super) fn poll(&mut self) -> Step {
        self.observe();
        let step = {
            let mut mem = memory();
            self.producer.poll(&mut mem)
        };
        if self.producer.is_reconnecting() != self.reconnecting {
            // "reconnecting…" and back (§12.3)
            self.reconnecting = !self.reconnecting;
            self.meter
                .set_resume(self.reconnecting, self.producer.resumed());
        }
        step
    }

    pub(super) async fn rendezvous(&mut self, req: &Request) {
        match text_request(&self.http, req, None, &self.stop).await {
            Ok(a) => self
                .producer
                .on_response(a.status, &HeaderView(&a.headers), &a.body),
            Err(f) => self.producer.on_failure(f),
        }
        if self.presence.is_none() {
            if let Some(keeper) = self.producer.presence() {
                let (http, stop, left) = (self.http.clone(), self.stop.clone(), &self.peer_left);
                self.presence = Some(tokio::spawn(presence::keep(
                    http,
                    keeper,
                    stop,
                    left.clone(),
                )));
            }
        }
        // What the consumer's hello said (§12.1, §12.3).
        // a native source is never read again: the window keeps its bytes
        if let Some(w) = self.producer.replay_window(None, self.window) {
            self.source.keep_window(w);
        }
        self.source.hash_wire(self.producer.hashes_wire());
    }

    /// What was sent and the receipt key (§12.2), as a receipt is checked against.
    fn sent(&self) -> (receipt::Commitment, Option<Zeroizing<[u8; 32]>>) {
        let transfer = self.producer.transfer_id().unwrap_or_default().to_string();
        let sealed = lock(&self.sealed);
        self.source.with_wire(|wire| {
            ledger::producer_commitment(
                &sealed.plain,
                wire,
                sealed.enc.as_ref(),
                self.producer.receipt_commits_to_plaintext(),
                &transfer,
            )
        })
    }

    /// A receipt call (§12.2), or a resume call on the transfer's channel (§12.3).
    async fn receipt(&mut self, req: &Request) {
        match text_request(&self.http, req, None, &self.stop).await {
            Ok(a) => {
                let (ours, key) = self.sent();
                self.producer.on_receipt(
                    a.status,
                    &HeaderView(&a.headers),
                    &a.body,
                    &ours,
                    key.as_deref(),
                );
            }
            Err(f) => self.producer.on_failure(f),
        }
    }

    /// The transfer failed with `e`: if the consumer may be resuming, tell it (§12.3); if it
    /// may be waiting for an upload that never reached the relay, withdraw (§3.10).
    async fn last_words(&self, e: &Error) {
        http::say_last_words(&self.http, self.producer.last_words(e)).await;
    }

    pub(super) async fn run(
        &mut self,
        mut first: Option<Step>,
    ) -> Result<producer::SendReport, Error> {
        loop {
            // the consumer gave up before its stream started: the stop that followed is not
            // what the core reports (§12.5)
            if let Some(e) = self.peer_left.take() {
                self.producer.on_peer_left(e);
            }
            let step = match first.take() {
                Some(s) => s,
                None => self.poll(),
            };
            match step {
                Step::Rendezvous(req) => self.rendezvous(&req).await,
                Step::Stream(req) => self.stream(&req).await,
                Step::NeedSource => match self.source.next().await {
                    Ok(Some(b)) => self.producer.on_chunk(b),
                    Ok(None) => self.producer.on_source_end(),
                    Err(e) => self.producer.on_source_error(e),
                },
                Step::Part(req) => {
                    let body = concat(self.producer.part_body());
                    match text_request(&self.http, &req, Some(body), &self.stop).await {
                        Ok(a) => {
                            self.producer
                                .on_response(a.status, &HeaderView(&a.headers), &a.body)
                        }
                        Err(f) => self.producer.on_failure(f),
                    }
                }
                Step::Sleep(ms) => {
                    tokio::select! {
                        _ = tokio::time::sleep(http::duration_of_ms(ms)) => self.producer.on_slept(),
                        // the consumer's leaving, if that stopped it, is taken at the loop's top
                        _ = self.stop.stopped() => self.producer.on_stopped(self.stop.reason()),
                    }
                }
                Step::Receipt(req) => self.receipt(&req).await,
                // The core checked the offset against the window (§12.3).
                Step::ResumeFrom(offset) => self.source.resume_from(offset),
                Step::Probe(req) => match text_request(&self.http, &req, None, &self.stop).await {
                    Ok(a) => self
                        .producer
                        .on_response(a.status, &HeaderView(&a.headers), &a.body),
                    Err(f) => self.producer.on_failure(f),
                },
                Step::Done(r) => {
                    self.end_presence();
                    return Ok(r);
                }
                Step::Failed(e) => {
                    self.end_presence();
                    self.last_words(&e).await;
                    return Err(e);
                }
            }
        }
    }

    /// One streaming upload: the source as the request body, the status log read while the
    /// upload runs (full duplex: the relay answers 200 at once, §3.2). Meanwhile the core's
    /// stall watch runs (§12.4) and stops the upload when the core says so.
    async fn stream(&mut self, req: &Request) {
        let cancel = self.stop.child();
        let rb = match http::build(&self.http, req) {
            Ok(rb) => rb,
            Err(f) => return self.stream_failed(f, false),
        };
        let body = reqwest::Body::wrap_stream(self.source.body(cancel.clone()));
        let stop = self.stop.clone();
        let mut stall = StallWatch::new(self.clock);
        let send = rb.body(body).send();
        tokio::pin!(send);
        let sent = loop {
            tokio::select! {
                r = &mut send => break r.map_err(|e| failure(e, &stop)),
                _ = stop.stopped() => break Err(Failure::stopped(stop.reason(), None)),
                ev = stall.next() => if self.on_stall_event(ev, &mut stall) {
                    return self.end_upload(&cancel);
                },
            }
        };
        let mut resp = match sent {
            Ok(r) => r,
            Err(f) => {
                cancel.cancel();
                return self.stream_failed(f, false);
            }
        };
        let status = resp.status().as_u16();
        if status != 200 {
            self.end_upload(&cancel);
            let headers = resp.headers().clone();
            let body = tokio::select! {
                b = http::read_text(resp) => b.unwrap_or_default(),
                _ = stop.stopped() => String::new(),
            };
            let headers = HeaderView(&headers);
            return self.producer.on_stream_refused(status, &headers, &body);
        }
        loop {
            let piece = tokio::select! {
                c = resp.chunk() => c.map_err(|e| failure(e, &stop)),
                _ = stop.stopped() => Err(Failure::stopped(stop.reason(), None)),
                ev = stall.next() => {
                    if self.on_stall_event(ev, &mut stall) {
                        return self.end_upload(&cancel);
                    }
                    continue;
                }
            };
            match piece {
                Ok(Some(b)) => {
                    if self.producer.on_stream_log(&b) == Verdict::PeerDisconnected {
                        break;
                    }
                }
                Ok(None) => {
                    let source_error = self.source.source_error();
                    self.producer.on_stream_end(source_error, stop.reason());
                    break;
                }
                Err(f) => {
                    cancel.cancel();
                    return self.stream_failed(f, true);
                }
            }
        }
        self.end_upload(&cancel);
        // A stall call still out may have met the consumer (its receipt, or its ask to
        // resume): the relay handed that to this call alone, so its answer goes to the core,
        // whatever the upload's end made of the transfer.
        if stall.calling() {
            if let StallEvent::Answered(a) = stall.next().await {
                self.on_stall_answer(a);
            }
        }
    }

    /// The streaming attempt failed with `f`: the core gets what it pulled.
    fn stream_failed(&mut self, failure: Failure, response_started: bool) {
        let (replay, source_error) = self.source.end_attempt();
        self.producer.on_stream_failed(StreamFailure {
            failure,
            replay,
            response_started,
            source_error,
        });
    }

    /// Stops the upload: its body fails (so the request is cut, never ended) and pulls no more.
    fn end_upload(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        cancel.cancel();
        self.source.end_attempt();
        self.source.release();
    }

    /// Does what the core's stall watch says (§12.4); true when the upload is to stop (the
    /// transfer resumes, or the consumer's receipt ended it).
    fn on_stall_event(&mut self, ev: StallEvent, stall: &mut StallWatch) -> bool {
        match ev {
            StallEvent::Due => {
                self.observe();
                let blocked_ms = self.source.blocked().as_secs_f64() * 1000.0;
                match self.producer.poll_stall(blocked_ms) {
                    StallStep::Off => {}
                    StallStep::WakeAt(t) => stall.wake_at(t),
                    StallStep::Call(req) => {
                        self.source.hold();
                        stall.call(&self.http, req, &self.stop);
                    }
                }
                false
            }
            StallEvent::Answered(a) => {
                let stop = self.on_stall_answer(a);
                self.source.release();
                stall.wake_at(0.0);
                stop
            }
        }
    }

    fn on_stall_answer(&mut self, answer: Option<http::Answer>) -> bool {
        let (ours, key) = self.sent();
        let view = answer.as_ref().map(|a| (a.status, HeaderView(&a.headers)));
        let answer = view.as_ref().map(|(s, h)| (*s, h as &dyn Headers));
        self.producer.on_stall_answer(answer, &ours, key.as_deref())
    }
}

/// A part's body as one buffer (parts are at most 16 MiB; usually one chunk already).
fn concat(chunks: &[Bytes]) -> Bytes {
    match chunks {
        [] => Bytes::new(),
        [one] => one.clone(),
        many => {
            let mut b = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
            for c in many {
                b.extend_from_slice(c);
            }
            b.freeze()
        }
    }
}
