//! Listeners and connections (`docs/PROTOCOL.md` §3.8, §9): the plain port speaks HTTP/1.1
//! and h2c (prior knowledge), the TLS port h2 and http/1.1 by ALPN; graceful shutdown.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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
use crate::metrics::Metrics;
use crate::pairing::Hub;
use crate::segmented::Uploads;
use crate::state::{ConnInfo, Shared, State};
use crate::{router, tls};

/// How long a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a client may take to send a request head (HTTP/1.1; not a transfer timeout).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest HTTP/2 frame we accept (bigger frames cost fewer headers per byte).
const H2_MAX_FRAME: u32 = 256 * 1024;

/// A running relay.
pub struct Running {
    pub http_addr: SocketAddr,
    pub https_addr: Option<SocketAddr>,
    /// SHA-256 fingerprint of the TLS certificate (`AB:CD:...`).
    pub tls_fingerprint: Option<String>,
    pub tls_self_signed: bool,
    pub state: Shared,
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
    let keys = config.keys.load()?;
    let plain = TcpListener::bind((config.host.as_str(), config.http_port)).await?;
    let http_addr = plain.local_addr()?;
    let (tls_listener, tls) = if config.no_tls {
        (None, None)
    } else {
        let files = config.tls_cert.as_deref().zip(config.tls_key.as_deref());
        let tls = tls::load(files)?;
        let l = TcpListener::bind((config.host.as_str(), config.https_port)).await?;
        (Some(l), Some(tls))
    };
    let https_addr = match &tls_listener {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let state: Shared = Arc::new(State {
        hub: Hub::new(),
        metrics: Metrics::default(),
        auth: Auth::new(keys),
        uploads: Uploads::default(),
        config,
    });
    crate::memory::spawn(&state); // give memory back after load (memory.rs)
    let builder = Arc::new(http_builder(&state.config));
    let (stop, stop_rx) = watch::channel(false);
    let tls_fingerprint = tls.as_ref().map(|t| t.fingerprint.clone());
    let tls_self_signed = tls.as_ref().is_some_and(|t| t.self_signed);
    let acceptor = tls.map(|t| TlsAcceptor::from(t.config));
    let task = tokio::spawn(accept_loop(
        plain,
        tls_listener.zip(acceptor),
        state.clone(),
        builder,
        stop_rx,
    ));
    Ok(Running {
        http_addr,
        https_addr,
        tls_fingerprint,
        tls_self_signed,
        state,
        stop,
        task,
    })
}

/// HTTP/1.1 + HTTP/2 settings, including the HTTP/2 windows of §3.8.
fn http_builder(config: &Config) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        .half_close(false);
    b.http2()
        .timer(TokioTimer::new())
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
    mut stop: watch::Receiver<bool>,
) {
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
                    let conn = serve(tcp, peer, None, state.clone(), builder.clone(), graceful.watcher());
                    conns.spawn(conn);
                }
                Err(e) => accept_error(e).await,
            },
            r = accept_tls(&tls) => match (r, &tls) {
                (Ok((tcp, peer)), Some((_, acceptor))) => {
                    let conn = serve(tcp, peer, Some(acceptor.clone()), state.clone(), builder.clone(), graceful.watcher());
                    conns.spawn(conn);
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
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over: aborting the remaining connections");
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// Too many open files etc.: log, back off a little, keep accepting.
async fn accept_error(e: io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Serves one connection (TLS handshake first on the TLS port). The TLS path lives in its
/// own boxed future so plain connections don't carry its size (idle memory per waiting peer).
async fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    state: Shared,
    builder: Arc<auto::Builder<TokioExecutor>>,
    watcher: hyper_util::server::graceful::Watcher,
) {
    let _ = tcp.set_nodelay(true);
    let local = match tcp.local_addr() {
        Ok(a) => a,
        Err(_) => return,
    };
    let info = ConnInfo {
        tls: tls.is_some(),
        peer,
        local,
    };
    let svc = service_fn(move |mut req| {
        let state = state.clone();
        req.extensions_mut().insert(info);
        async move { Ok::<_, Infallible>(router::handle(state, req).await) }
    });
    let result = match tls {
        None => {
            watcher
                .watch(
                    builder
                        .serve_connection(TokioIo::new(tcp), svc)
                        .into_owned(),
                )
                .await
        }
        Some(acceptor) => {
            let tls_conn = async move {
                let stream =
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return Ok(());
                        }
                        Err(_) => return Ok(()),
                    };
                watcher
                    .watch(
                        builder
                            .serve_connection(TokioIo::new(stream), svc)
                            .into_owned(),
                    )
                    .await
            };
            Box::pin(tls_conn).await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
