//! Listeners and connections (`docs/PROTOCOL.md` §3.8, §9): the plain port speaks HTTP/1.1
//! and h2c (prior knowledge), the TLS port h2 and http/1.1 by ALPN; connection limits (§9:
//! header timeout, idle timeout, header size); hang-up watching (§3.6); graceful shutdown.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::Either;
use futures_util::FutureExt;
use http_body::{Body, Frame, SizeHint};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::auth::Auth;
use crate::config::Config;
use crate::data::{Limits, Phase, Plane};
use crate::metrics::Metrics;
use crate::state::{ConnInfo, Shared, State};
use crate::{hangup, router, static_files, tls};

/// After the grace period: how long aborted producers get to receive their `[ERROR]` line.
const ABORT_LINES_FLUSH: Duration = Duration::from_millis(250);
/// Largest HTTP/2 frame we accept (bigger frames cost fewer headers per byte).
const H2_MAX_FRAME: u32 = 256 * 1024;

/// A running relay.
pub struct Running {
    pub http_addr: SocketAddr,
    pub https_addr: Option<SocketAddr>,
    /// SHA-256 fingerprint of the TLS certificate (`AB:CD:...`).
    pub tls_fingerprint: Option<String>,
    pub tls_self_signed: bool,
    /// Tokens are required (auth mode, §6).
    pub auth_mode: bool,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, lets transfers run up to the configured grace period, then aborts
    /// the rest; returns when everything is closed.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Resolves when the relay stopped (after [`Running::shutdown`] or a signal).
    pub async fn wait(self) {
        let _ = self.task.await;
    }

    /// A handle that triggers shutdown (e.g. from a signal handler).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop.clone()
    }
}

/// Binds both ports and starts serving.
pub async fn start(config: Config) -> io::Result<Running> {
    let mut config = config;
    let keys = config.auth_keys.clone();
    find_static_dirs(&mut config);
    let plain = bind(
        &config.host,
        config.http_port,
        "--http-port",
        "HTTPIPE_HTTP_PORT",
    )
    .await?;
    let http_addr = plain.local_addr()?;
    let (tls_listener, tls) = if config.no_tls {
        (None, None)
    } else {
        let files = config.tls_cert.as_deref().zip(config.tls_key.as_deref());
        let tls = tls::load(files)?;
        let l = bind(
            &config.host,
            config.https_port,
            "--https-port",
            "HTTPIPE_HTTPS_PORT",
        )
        .await?;
        (Some(l), Some(tls))
    };
    let https_addr = match &tls_listener {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let auth = Auth::new(keys);
    let metrics = Arc::new(Metrics::default());
    let limits = Limits {
        max_part_bytes: config.max_part_bytes,
        upload_gap_timeout: config.upload_gap_timeout,
        crowd: config.crowd,
    };
    let cluster = match &config.cluster {
        None => None,
        Some(redis) => {
            let node_url = match &config.node_url {
                Some(u) => u.clone(),
                None => default_node_url(&config.host, http_addr.port())?,
            };
            let c = crate::cluster::Cluster::new(redis, &node_url)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            Some(c)
        }
    };
    let state: Shared = Arc::new(State {
        data: Plane::new(metrics.clone(), limits, auth.is_some()),
        metrics,
        auth,
        cluster,
        config,
    });
    crate::memory::spawn(&state.data); // give memory back after load (memory.rs)
    let builder = Arc::new(http_builder(&state.config));
    let (stop, stop_rx) = watch::channel(false);
    let tls_fingerprint = tls.as_ref().map(|t| t.fingerprint.clone());
    let tls_self_signed = tls.as_ref().is_some_and(|t| t.self_signed);
    let acceptor = tls.map(|t| TlsAcceptor::from(t.config));
    let hangups = hangup::Watcher::new();
    let task = tokio::spawn(accept_loop(
        plain,
        tls_listener.zip(acceptor),
        state.clone(),
        builder,
        hangups,
        stop_rx,
    ));
    Ok(Running {
        http_addr,
        https_addr,
        tls_fingerprint,
        tls_self_signed,
        auth_mode: state.auth.is_some(),
        stop,
        task,
    })
}

/// `http://HOST:PORT` of this node when `--node-url` isn't given (§13): its `--host` and plain
/// port; a wildcard host can't be reached by that name.
fn default_node_url(host: &str, port: u16) -> io::Result<String> {
    let wildcard = host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified());
    if wildcard {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--cluster with --host {host}: say how the other nodes reach this one with \
                 --node-url http://ADDRESS:{port} (or HTTPIPE_NODE_URL)"
            ),
        ));
    }
    Ok(if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    })
}

/// Listens on `host:port`; an error names the address and the flag that changes it (the
/// binary prints it as is: `error: ...`).
async fn bind(host: &str, port: u16, flag: &str, env: &str) -> io::Result<TcpListener> {
    TcpListener::bind((host, port)).await.map_err(|e| {
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let msg = match e.kind() {
            io::ErrorKind::AddrInUse => format!(
                "port {port} is already in use ({addr}: another relay or server is listening \
                 there); stop it, or choose another port with {flag} PORT (or {env}=PORT; \
                 0 picks a free one; with npm start: npm start -- {flag} PORT)"
            ),
            io::ErrorKind::PermissionDenied => format!(
                "not allowed to listen on {addr} ({e}); ports below 1024 need privileges: \
                 choose another with {flag} PORT"
            ),
            _ => format!("cannot listen on {addr} ({flag}, --host): {e}"),
        };
        io::Error::new(e.kind(), msg)
    })
}

/// `--www` and `--sdk-dir` when not given: the demo next to the binary or in the project
/// (§2); says at start-up where it is, or that there is none.
fn find_static_dirs(config: &mut Config) {
    if config.www.is_none() {
        config.www = static_files::find_demo("www");
        match &config.www {
            Some(d) => tracing::info!(dir = %d.display(), "serving the demo"),
            None => tracing::warn!(
                "no demo found (a www directory with index.html in the working directory, next \
                 to the binary or in its project): / answers 404; pass --www DIR"
            ),
        }
    }
    if config.sdk_dir.is_none() {
        config.sdk_dir = static_files::find_demo("pkg");
        if let Some(d) = &config.sdk_dir {
            tracing::info!(dir = %d.display(), "serving the SDK package at /assets/pkg/");
        }
    }
}

/// HTTP/1.1's largest read (and write queue) in bytes. hyper grows a connection's read
/// buffer from 8 KiB while reads fill it, so only a connection that streams gets this much;
/// a relayed upload then arrives in blocks of up to this size, handed on without a copy.
/// 408 KiB is hyper 0.14's default (piping-server-rust's blocks): against 128 KiB, 0.75–0.82×
/// the relay's CPU per GiB (three runs, medians of 5–9 alternating rounds); 1 MiB measured
/// the same as 408 KiB. The blocks come from the heap, not from `mmap`
/// (`memory::configure`). docs/benchmarks-native.md has the runs.
const H1_BUF_BYTES: usize = 8192 + 4096 * 100;
const _: () = assert!(H1_BUF_BYTES <= crate::memory::MMAP_THRESHOLD as usize);

/// HTTP/1.1 + HTTP/2 settings: the HTTP/2 windows of §3.8, the header limits of §9.
fn http_builder(config: &Config) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    // hyper-util's HTTP/1.1 builder has no header size limit of its own: the read buffer's
    // is the hard one (a head that doesn't fit is answered 431 by hyper), `max_header_bytes`
    // below it is checked per request (`head_too_large`).
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(H1_BUF_BYTES.max(config.max_header_bytes))
        .keep_alive(true)
        .half_close(false);
    b.http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
        .initial_stream_window_size(config.h2_stream_window)
        .initial_connection_window_size(config.h2_connection_window)
        .max_frame_size(H2_MAX_FRAME)
        .max_concurrent_streams(4096)
        .keep_alive_interval(None);
    b
}

async fn accept_loop(
    plain: TcpListener,
    tls: Option<(TcpListener, TlsAcceptor)>,
    state: Shared,
    builder: Arc<auto::Builder<TokioExecutor>>,
    hangups: hangup::Watcher,
    mut stop: watch::Receiver<bool>,
) {
    let hangup_task = tokio::spawn(hangups.clone().run());
    let cluster_task = state.cluster.clone().map(|c| tokio::spawn(c.run()));
    let linger_task = tokio::spawn(sweep_lingering(state.clone()));
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    let accept_tls = async |tls: &Option<(TcpListener, TlsAcceptor)>| match tls {
        Some((l, _)) => l.accept().await,
        None => std::future::pending().await,
    };
    loop {
        tokio::select! {
            r = plain.accept() => match r {
                Ok((tcp, peer)) => {
                    serve(tcp, peer, None, &state, &builder, graceful.watcher(), &hangups, &mut conns);
                }
                Err(e) => accept_error(e).await,
            },
            r = accept_tls(&tls) => match (r, &tls) {
                (Ok((tcp, peer)), Some((_, acceptor))) => {
                    serve(tcp, peer, Some(acceptor.clone()), &state, &builder, graceful.watcher(), &hangups, &mut conns);
                }
                (Err(e), _) => accept_error(e).await,
                _ => {}
            },
            Some(_) = conns.join_next() => {}
            _ = stop.changed() => break,
        }
    }
    drop(plain);
    drop(tls);
    let grace = state.config.shutdown_grace;
    tracing::info!(
        grace_s = grace.as_secs_f64(),
        "shutting down: no new connections, finishing transfers"
    );
    // Waiting peers are sent away at once (503, or an `[ERROR]` line for a waiting
    // producer); transfers may finish within the grace period (§9).
    state.data.enter(Phase::Draining);
    let mut drained = std::pin::pin!(graceful.shutdown());
    if tokio::time::timeout(grace, &mut drained).await.is_err() {
        tracing::warn!("grace period over: aborting the remaining transfers");
        // Producers get their `[ERROR]` line before their connections close.
        state.data.enter(Phase::Aborting);
        let _ = tokio::time::timeout(ABORT_LINES_FLUSH, &mut drained).await;
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
    hangup_task.abort();
    linger_task.abort();
    if let Some(task) = cluster_task {
        task.abort();
    }
    if let Some(c) = &state.cluster {
        // out of the cluster now rather than when the keys expire (§13.4)
        let _ = tokio::time::timeout(Duration::from_secs(1), c.leave()).await;
    }
}

/// Drops the lingering last words (§5.1 `linger`) whose time is over, every few seconds (a
/// caller never meets one after its time; this frees the memory).
async fn sweep_lingering(state: Shared) {
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        every.tick().await;
        state.data.hub.sweep_lingering();
    }
}

/// Too many open files etc.: log, back off a little, keep accepting.
async fn accept_error(e: io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Serves one connection (TLS handshake first on the TLS port), spawned into `conns`.
///
/// Every waiting peer holds its connection's task, so the task is kept small (idle memory per
/// waiting peer, README): the setup runs here, before spawning, and a plain connection's task
/// is only hyper's connection inside [`Served`] (no `async` state machine around it, which
/// would hold the connection future twice: the moved-from local and the awaited one). The
/// TLS path lives in its own boxed future so plain connections don't carry its size.
#[allow(clippy::too_many_arguments)]
fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    state: &Shared,
    builder: &Arc<auto::Builder<TokioExecutor>>,
    watcher: hyper_util::server::graceful::Watcher,
    hangups: &hangup::Watcher,
    conns: &mut JoinSet<()>,
) {
    // Registered here, at accept, where the socket is at hand (§3.6).
    let (hangup, registration) = hangups.watch(&tcp);
    let _ = tcp.set_nodelay(true);
    let local = match tcp.local_addr() {
        Ok(a) => a,
        Err(_) => return,
    };
    let info = ConnInfo {
        tls: tls.is_some(),
        local,
        peer: peer.ip(),
    };
    let conn_fd = crate::conn::ConnFd::new(&tcp);
    let limits = (state.config.header_timeout, state.config.idle_timeout);
    let activity = Arc::new(Activity::new());
    let act = activity.clone();
    let state = state.clone();
    let req_conn_fd = conn_fd.clone();
    let svc = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        let state = state.clone();
        req.extensions_mut().insert(info);
        req.extensions_mut().insert(hangup.clone());
        req.extensions_mut().insert(req_conn_fd.clone());
        let req = req.map(crate::request_body::RequestBody::new);
        let busy = Busy::start(&act);
        let handled = if head_too_large(&req, state.config.max_header_bytes) {
            Either::Left(std::future::ready(crate::respond::head_too_large()))
        } else {
            Either::Right(router::handle(state, req))
        };
        // Not an `async` block around the handler: that would hold its future twice.
        handled
            .map(move |resp| Ok::<_, Infallible>(resp.map(|inner| BusyBody { inner, _busy: busy })))
    });
    match tls {
        None => {
            let tcp = crate::conn::Tracked::new(tcp, conn_fd);
            let conn = watcher.watch(
                builder
                    .serve_connection(TokioIo::new(tcp), svc)
                    .into_owned(),
            );
            conns.spawn(Served::new(conn, activity, limits, peer, registration));
        }
        Some(acceptor) => {
            let builder = builder.clone();
            let tls_conn = async move {
                let stream = match acceptor.accept(tcp).await {
                    Ok(s) => crate::conn::Tracked::new(s, conn_fd),
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return Ok(());
                    }
                };
                watcher
                    .watch(
                        builder
                            .serve_connection(TokioIo::new(stream), svc)
                            .into_owned(),
                    )
                    .await
            };
            // The handshake counts towards the header timeout.
            let served = Served::new(tls_conn, activity, limits, peer, registration);
            conns.spawn(Box::pin(served));
        }
    }
}

pin_project_lite::pin_project! {
    /// A connection run within the limits of §9: closed (dropped) if no complete request head
    /// arrived within `header_timeout` of accepting it, or when no request has been in
    /// progress for `idle_timeout`. (Later request heads on HTTP/1.1 are bounded by hyper's
    /// `header_read_timeout`.) Logs how it ended; keeps the hang-up registration meanwhile.
    struct Served<F> {
        #[pin]
        conn: F,
        #[pin]
        timer: tokio::time::Sleep,
        activity: Arc<Activity>,
        idle_timeout: Duration,
        peer: SocketAddr,
        _registration: Option<hangup::Registration>,
    }
}

impl<F> Served<F> {
    fn new(
        conn: F,
        activity: Arc<Activity>,
        (header_timeout, idle_timeout): (Duration, Duration),
        peer: SocketAddr,
        registration: Option<hangup::Registration>,
    ) -> Served<F> {
        Served {
            conn,
            timer: tokio::time::sleep(header_timeout),
            activity,
            idle_timeout,
            peer,
            _registration: registration,
        }
    }
}

impl<F, E> std::future::Future for Served<F>
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        if let Poll::Ready(r) = this.conn.poll(cx) {
            if let Err(e) = r {
                tracing::debug!(peer = %this.peer, error = %e, "connection ended with an error");
            }
            return Poll::Ready(());
        }
        while this.timer.as_mut().poll(cx).is_ready() {
            let activity = &**this.activity;
            let idle_timeout = *this.idle_timeout;
            let next = if activity.requests.load(Ordering::Acquire) == 0 {
                None
            } else if activity.inflight.load(Ordering::Acquire) > 0 {
                Some(Instant::now() + idle_timeout)
            } else {
                let idle_since = activity.last_change();
                (idle_since.elapsed() < idle_timeout).then_some(idle_since + idle_timeout)
            };
            let Some(next) = next else {
                tracing::debug!(peer = %this.peer, "connection closed: header or idle timeout (§9)");
                return Poll::Ready(());
            };
            this.timer.as_mut().reset(next.into());
        }
        Poll::Pending
    }
}

/// What a connection is doing, for the idle timeout.
struct Activity {
    start: Instant,
    /// Requests received (heads complete).
    requests: AtomicU64,
    /// Requests whose response hasn't ended yet.
    inflight: AtomicUsize,
    /// Milliseconds after `start` when the last request ended.
    last_end_ms: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            requests: AtomicU64::new(0),
            inflight: AtomicUsize::new(0),
            last_end_ms: AtomicU64::new(0),
        }
    }

    fn last_change(&self) -> Instant {
        self.start + Duration::from_millis(self.last_end_ms.load(Ordering::Acquire))
    }
}

/// One request in progress (from its head to the end of its response).
struct Busy(Arc<Activity>);

impl Busy {
    fn start(a: &Arc<Activity>) -> Busy {
        a.requests.fetch_add(1, Ordering::AcqRel);
        a.inflight.fetch_add(1, Ordering::AcqRel);
        Busy(a.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_end_ms.store(ms, Ordering::Release);
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in progress until it is dropped.
struct BusyBody {
    inner: crate::respond::Body,
    _busy: Busy,
}

impl Body for BusyBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An HTTP/1.1 request head (start line and header lines, as sent) larger than `limit` bytes
/// (§9). HTTP/2 heads are bounded by `SETTINGS_MAX_HEADER_LIST_SIZE` instead.
fn head_too_large<B>(req: &hyper::Request<B>, limit: usize) -> bool {
    if req.version() >= http::Version::HTTP_2 {
        return false;
    }
    // "METHOD URI HTTP/1.1\r\n", each "name: value\r\n", the final "\r\n"
    let uri = match req.uri().path_and_query() {
        Some(pq) if req.uri().authority().is_none() => pq.as_str().len(),
        _ => req.uri().to_string().len(), // absolute form: rare, allocates
    };
    let start = req.method().as_str().len() + uri + 12;
    let fields: usize = req
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum();
    start + fields + 2 > limit
}
