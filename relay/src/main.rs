//! `httpipe-relay`: run the relay, or mint an access token (`docs/PROTOCOL.md` §6).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use httpipe::protocol::token::{Claims, Mode};
use httpipe_relay::config::{Cli, Command, TokenArgs};
use httpipe_relay::Config;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Token(args)) => token(args),
        None => serve(cli.serve),
    }
}

fn token(args: TokenArgs) -> ExitCode {
    let keys = match args.keys.load() {
        Ok(k) if !k.is_empty() => k,
        Ok(_) => {
            eprintln!("error: no key: pass --auth-key-file FILE or set HTTPIPE_AUTH_KEY");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: reading the key file: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.path.starts_with('/') {
        eprintln!(
            "error: --path must be a path starting with '/' (got {:?})",
            args.path
        );
        return ExitCode::from(2);
    }
    if args.ttl.as_secs() == 0 {
        eprintln!("error: --ttl must be at least 1s");
        return ExitCode::from(2);
    }
    let Some(mode) = Mode::parse(&args.mode) else {
        eprintln!("error: --mode must be read or write");
        return ExitCode::from(2);
    };
    let claims = Claims {
        path: args.path,
        mode,
        recursive: args.recursive,
        expires: httpipe_relay::auth::now().saturating_add(args.ttl.as_secs()),
    };
    println!("{}", httpipe::protocol::token::sign(&keys[0], &claims));
    ExitCode::SUCCESS
}

fn serve(config: Config) -> ExitCode {
    init_logs(&config.log_format);
    httpipe_relay::memory::configure(); // before any thread allocates (memory.rs)
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let host = config.host.clone();
        let running = match httpipe_relay::start(config).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
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
        let auth = if running.state.auth.is_some() {
            "auth (tokens required)"
        } else {
            "open (no tokens)"
        };
        tracing::info!(mode = auth, "relay started");
        let stopper = running.stopper();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("signal received");
            let _ = stopper.send(true);
        });
        running.wait().await;
        ExitCode::SUCCESS
    })
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

fn init_logs(format: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}
