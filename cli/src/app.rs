//! The subcommands: settings from the layers, then one transfer (or a `--serve` loop).

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{Cli, Command, ProducerArgs, ReadArgs, StreamArgs, WriteArgs};
use crate::config::{self, Keys};
use crate::exit::{from_net, CliError, Exit, Role};
use crate::files;
use crate::interrupt::{self, Stage};
use crate::keys;
use crate::pipe::{self, Copied};
use crate::progress::Progress;
use crate::spec::{after_break, format, recipients, target};
use crate::transfer::{self, ReceiveSpec, SendSpec};
use crate::verdict::{delivered, end_stream, settle};

fn env_get(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

pub async fn run(cli: Cli) -> Result<(), CliError> {
    let Some(command) = cli.command else {
        return Ok(()); // main prints the help
    };
    let global = Keys {
        log_level: cli.log_level.clone(),
        ..Keys::default()
    };
    let file = || {
        config::load_file_layer(
            cli.config_file.as_deref(),
            cli.config_name.as_deref(),
            &env_get,
        )
    };
    match command {
        Command::Keygen(k) => {
            init_logging(global.log_level.as_deref())?;
            keys::keygen(k.output.as_deref(), k.pq)
        }
        Command::Write(w) => {
            let keys = settings(write_keys(&w).or(global), file()?, "write")?;
            write(w, keys).await
        }
        Command::Read(r) => {
            let keys = settings(read_keys(&r).or(global), file()?, "read")?;
            read(r, keys).await
        }
        Command::Send(s) => {
            let mut k = stream_keys(&s.stream);
            k.recipients = non_empty(&s.recipients);
            k.recipients_file = s.recipients_file.as_ref().map(|p| p.display().to_string());
            k.encryption_mode = s.encryption_mode.clone();
            let k = producer_keys(&s.producer, k);
            let keys = settings(k.or(global), file()?, "write")?;
            files::send(s, keys).await
        }
        Command::Receive(r) => {
            let mut k = stream_keys(&r.stream);
            k.identities = paths(&r.identities);
            k.ciphertext = r.ciphertext.then_some(true);
            let keys = settings(k.or(global), file()?, "read")?;
            files::receive(r, keys).await
        }
    }
}

/// Merges the layers, prints the secret warnings, starts logging.
fn settings(cli: Keys, file: Option<config::FileLayer>, mode: &str) -> Result<Keys, CliError> {
    let env = config::keys_from_env(&env_get)?;
    let r = config::resolve(cli, env, file, mode)?;
    for w in &r.warnings {
        eprintln!("{w}");
    }
    init_logging(r.keys.log_level.as_deref())?;
    Ok(r.keys)
}

fn init_logging(level: Option<&str>) -> Result<(), CliError> {
    use tracing::Level;
    let level = match level.map(str::to_ascii_lowercase).as_deref() {
        None | Some("error") => Level::ERROR,
        Some("warn" | "warning") => Level::WARN,
        Some("info") => Level::INFO,
        Some("debug") => Level::DEBUG,
        Some("trace") => Level::TRACE,
        Some(other) => {
            return Err(CliError::usage(
                format!("unknown log level {other:?}"),
                "use error, warn, info, debug or trace",
            ))
        }
    };
    // Colours only when stderr is a terminal (not in a pipe or a log file) and without NO_COLOR.
    use std::io::IsTerminal;
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_max_level(level)
        .try_init();
    Ok(())
}

fn non_empty(v: &[String]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.to_vec())
}

fn paths(v: &[PathBuf]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.iter().map(|p| p.display().to_string()).collect())
}

fn stream_keys(s: &StreamArgs) -> Keys {
    Keys {
        stream_path: s.stream_path.clone(),
        connect_url: s.connect_url.clone(),
        relay: s.relay.clone(),
        connect_timeout: s.connect_timeout,
        access_token: s.access_token.clone(),
        passphrase: s.passphrase.clone(),
        resume: s.resume.clone().map(config::ResumeSpec::Text),
        no_receipt: s.no_receipt.then_some(true),
        ..Keys::default()
    }
}

/// `keys` with the producer's receipt and resume options.
fn producer_keys(p: &ProducerArgs, keys: Keys) -> Keys {
    Keys {
        resume_window: p.resume_window.clone().map(config::SizeSpec::Text),
        receipt_timeout: p.receipt_timeout,
        ciphertext_receipt: p.ciphertext_receipt.then_some(true),
        ..keys
    }
}

fn write_keys(w: &WriteArgs) -> Keys {
    let keys = Keys {
        content_type: w.content_type.clone(),
        auto_flush_delay: w.auto_flush_delay,
        encryption_mode: w.encryption_mode.clone(),
        unbuffered_input: w.unbuffered_input.then_some(true),
        recipients: non_empty(&w.recipients),
        recipients_file: w.recipients_file.as_ref().map(|p| p.display().to_string()),
        serve: w.serve.then_some(true),
        command: non_empty(&w.command).map(config::CommandSpec::Argv),
        ..stream_keys(&w.stream)
    };
    producer_keys(&w.producer, keys)
}

fn read_keys(r: &ReadArgs) -> Keys {
    Keys {
        unbuffered_output: r.unbuffered_output.then_some(true),
        identities: paths(&r.identities),
        ciphertext: r.ciphertext.then_some(true),
        serve: r.serve.then_some(true),
        command: non_empty(&r.command).map(config::CommandSpec::Argv),
        ..stream_keys(&r.stream)
    }
}

/// The command to run, checked before any connection (`crate::command::check`).
fn command(keys: &Keys, role: Role) -> Result<Vec<String>, CliError> {
    let argv = match &keys.command {
        None => return Ok(Vec::new()),
        Some(c) => c.argv("config 'command'")?,
    };
    crate::command::check(&argv, role)?;
    Ok(argv)
}

/// Runs `round` once, or again and again with `--serve`, until SIGINT/SIGTERM.
async fn run_rounds<F, Fut>(
    role: Role,
    serve: bool,
    has_command: bool,
    mut round: F,
) -> Result<(), CliError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), CliError>>,
{
    if serve && !has_command {
        return Err(CliError::usage(
            "--serve needs a command to run for each peer",
            "add -- COMMAND ARGS..., or `command:` in the config file",
        ));
    }
    if !serve {
        return interrupt::or_interrupted(role, round()).await;
    }
    loop {
        interrupt::enter(Stage::Meeting);
        match interrupt::until_interrupted(role, round()).await {
            Ok(Ok(())) => tracing::info!("transfer done; waiting for the next peer"),
            Ok(Err(e)) if matches!(e.exit, Exit::Auth | Exit::Usage) => return Err(e),
            Ok(Err(e)) => {
                eprintln!("{e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            // waiting for the next peer: a clean stop
            Err(stopped) if stopped.idle => {
                tracing::info!("{}; stopping", stopped.error.what);
                return Ok(());
            }
            // a transfer was under way: what it stopped, as without --serve
            Err(stopped) => return Err(stopped.error),
        }
    }
}

async fn write(w: WriteArgs, keys: Keys) -> Result<(), CliError> {
    // First: `httpipe write notes.txt` gets its hint before -s or the relay is asked for.
    let argv = command(&keys, Role::Producer)?;
    let path = config::check_stream_path(keys.stream_path.clone())?;
    let recipients = recipients(&keys)?;
    let spec = SendSpec {
        target: target(&keys, path.clone())?,
        content_type: keys.content_type.clone(),
        filename: None,
        size: None,
        passphrase: keys.passphrase.clone(),
        recipients,
        format: format(&keys)?,
        auto_flush: keys.auto_flush_delay.map(Duration::from_secs),
        after_break: after_break(&keys)?,
        resume_window: config::resume_window(&keys)?,
        receipt_timeout: config::receipt_timeout(&keys)?,
    };
    let whole_blocks = !keys.unbuffered_input.unwrap_or(false);
    let serve = keys.serve.unwrap_or(w.serve);
    tracing::info!("opening stream for writing: {path}");
    tracing::debug!(
        "connect URL: {}",
        spec.target.endpoint.connect_url_for(&path)
    );
    run_rounds(Role::Producer, serve, !argv.is_empty(), || {
        let spec = spec.clone();
        let argv = argv.clone();
        async move {
            let mut sender = transfer::open_sender(spec)
                .await
                .map_err(|e| from_net(&e, Role::Producer))?;
            interrupt::enter(Stage::Streaming);
            tracing::info!("consumer connected");
            let r = if argv.is_empty() {
                let progress = Progress::new(true, None, "sent");
                #[cfg(unix)]
                pipe::enlarge_pipe(0);
                #[cfg(unix)]
                let r =
                    crate::stdio::copy_stdin_to_sink(&mut sender, whole_blocks, &progress).await;
                #[cfg(not(unix))]
                let r = pipe::copy_to_sink(
                    tokio::io::stdin(),
                    &mut sender,
                    whole_blocks,
                    &progress,
                    "stdin",
                )
                .await;
                progress.finish();
                r
            } else {
                pipe::run_producer(&argv, &mut sender, &Progress::hidden()).await
            };
            end_stream(sender, r).await.map(|(_, d)| delivered(&d))
        }
    })
    .await
}

async fn read(r: ReadArgs, keys: Keys) -> Result<(), CliError> {
    let argv = command(&keys, Role::Consumer)?;
    let path = config::check_stream_path(keys.stream_path.clone())?;
    let identities = keys::load_identities(&keys.identities.clone().unwrap_or_default())?;
    let spec = ReceiveSpec {
        target: target(&keys, path.clone())?,
        passphrase: keys.passphrase.clone(),
        identities,
        after_break: after_break(&keys)?,
    };
    let serve = keys.serve.unwrap_or(r.serve);
    tracing::info!("opening stream for reading: {path}");
    tracing::debug!(
        "connect URL: {}",
        spec.target.endpoint.connect_url_for(&path)
    );
    run_rounds(Role::Consumer, serve, !argv.is_empty(), || {
        let spec = spec.clone();
        let argv = argv.clone();
        async move {
            let (info, mut rx) = transfer::open_receiver(spec)
                .await
                .map_err(|e| from_net(&e, Role::Consumer))?;
            interrupt::enter(Stage::Streaming);
            tracing::info!(
                "producer connected (content type {})",
                info.content_type.as_deref().unwrap_or("not given")
            );
            if !argv.is_empty() {
                let r = pipe::run_consumer(&argv, &mut rx, &Progress::hidden()).await;
                settle(rx, r.is_ok()).await;
                return r.map(|_| ());
            }
            use std::io::IsTerminal;
            let progress = Progress::new(!std::io::stdout().is_terminal(), info.size, "received");
            #[cfg(unix)]
            pipe::enlarge_pipe(1);
            // each chunk is written as it comes: `-u` (unbuffered) needs nothing more
            let copied = crate::stdio::copy_to_stdout(&mut rx, &progress).await;
            let complete = matches!(copied, Ok(Copied::Complete(_)));
            settle(rx, complete).await;
            let copied = copied?;
            progress.finish();
            match copied {
                Copied::OutputClosed(n) => Err(crate::stdio::output_closed(n)),
                Copied::Complete(_) => Ok(()),
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_from_write_args() {
        let w = WriteArgs {
            unbuffered_input: false,
            command: vec!["cat".into()],
            ..WriteArgs::default()
        };
        let k = write_keys(&w);
        // An unset flag stays unset so the env or file can turn it on.
        assert_eq!(k.unbuffered_input, None);
        assert_eq!(
            k.command,
            Some(config::CommandSpec::Argv(vec!["cat".into()]))
        );
    }
}
