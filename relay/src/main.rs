//! `httpipe-relay`: run the relay, or mint an access token (`docs/PROTOCOL.md` §6).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use httpipe_relay::auth::{mint_token, MintError};
use httpipe_relay::config::{Cli, Command, ServeArgs, TokenArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Token(args)) => token(args),
        None => serve(cli.serve),
    }
}

fn token(args: TokenArgs) -> ExitCode {
    let keys = match args.keys.load() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let now = httpipe_relay::auth::now();
    let expires = now.saturating_add(args.ttl.as_secs());
    let path = args.path.as_deref();
    match mint_token(&keys, path, &args.mode, args.recursive, expires, now) {
        Ok((_, token)) => {
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let why = match e {
                MintError::NoKey => {
                    "no key: pass --auth-key-file FILE or --auth-key KEY (or set HTTPIPE_AUTH_KEY)"
                        .to_string()
                }
                MintError::Path => match path {
                    Some(p) => format!("--path must be a path starting with '/' (got {p:?})"),
                    None => "--path is needed for a read or write token".to_string(),
                },
                MintError::CodePath => {
                    "a code token's path is /code/v1: leave out --path".to_string()
                }
                MintError::Mode => "--mode must be read, write or code".to_string(),
                MintError::Expiry => "--ttl must be at least 1s".to_string(),
            };
            eprintln!("error: {why}");
            ExitCode::from(2)
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    httpipe_relay::memory::configure(); // before any thread allocates (memory.rs)
                                        // Kept until exit: flushes the log lines still queued (for at most a second).
    let _logs = init_logs(&args.log_format);
    let config = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln_quiet(&format!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln_quiet(&format!("error: starting the runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let host = config.host.clone();
        let running = match httpipe_relay::start(config).await {
            Ok(r) => r,
            Err(e) => {
                eprintln_quiet(&format!("error: {e}"));
                return ExitCode::FAILURE;
            }
        };
        // Write errors are ignored: a closed stdout must not stop the relay.
        let mut out = std::io::stdout().lock();
        let show = |a: std::net::SocketAddr| {
            if a.is_ipv6() {
                format!("[{host}]:{}", a.port())
            } else {
                format!("{host}:{}", a.port())
            }
        };
        let _ = writeln!(out, "listening http://{}", show(running.http_addr));
        if let Some(a) = running.https_addr {
            let _ = writeln!(out, "listening https://{}", show(a));
        }
        if let Some(fp) = &running.tls_fingerprint {
            let kind = if running.tls_self_signed {
                "self-signed certificate for localhost"
            } else {
                "certificate"
            };
            let _ = writeln!(out, "tls {kind}, SHA-256 fingerprint {fp}");
        }
        let _ = out.flush();
        drop(out);
        let auth = if running.auth_mode {
            "auth (tokens required)"
        } else {
            "open (no tokens)"
        };
        tracing::info!(mode = auth, "relay started");
        let stopper = running.stopper();
        tokio::spawn(async move {
            wait_for_signal().await;
            // Stop first, log after: nothing about logging may keep the relay running.
            let _ = stopper.send(true);
            tracing::info!("signal received");
        });
        running.wait().await;
        ExitCode::SUCCESS
    })
}

/// Like `eprintln!`, without its panic when stderr is closed.
fn eprintln_quiet(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Logs to stderr through a lossy background writer: a closed stderr (EPIPE) or one nobody
/// reads (a full pipe) drops log lines but never blocks or panics a relay task. (The default
/// writer panics: tracing-subscriber reports a failed write with `eprintln!`, which panics on a
/// closed stderr; in the signal task that left SIGTERM without effect.)
fn init_logs(format: &str) -> tracing_appender::non_blocking::WorkerGuard {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .finish(std::io::stderr());
    // Colours only for a terminal (not for a pipe, a file or a log collector) and without NO_COLOR.
    use std::io::IsTerminal;
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_ansi(ansi)
        .with_env_filter(filter)
        .with_writer(writer)
        .log_internal_errors(false);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    guard
}
