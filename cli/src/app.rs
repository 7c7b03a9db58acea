//! The subcommands: settings from the layers, then one transfer (or a `--serve` loop).

use std::path::{Path, PathBuf};
use std::time::Duration;

use httpipe::crypto::Format;
use tokio::io::{AsyncWriteExt, BufWriter};

use crate::cli::{
    Cli, Command, ProducerArgs, ReadArgs, ReceiveArgs, SendArgs, StreamArgs, WriteArgs,
};
use crate::config::{self, Endpoint, Keys};
use crate::exit::{from_net, CliError, Exit, Role};
use crate::interrupt::{self, Stage};
use crate::keys;
use crate::pipe::{self, Copied, Sink};
use crate::progress::Progress;
use crate::tarball;
use crate::transfer::{self, AfterBreak, Delivery, ReceiveSpec, SendSpec, StreamTarget};

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
            send(s, keys).await
        }
        Command::Receive(r) => {
            let mut k = stream_keys(&r.stream);
            k.identities = paths(&r.identities);
            k.ciphertext = r.ciphertext.then_some(true);
            let keys = settings(k.or(global), file()?, "read")?;
            receive(r, keys).await
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

/// Receipts and resume (PROTOCOL.md §12) as the settings say; breaks are told on stderr.
fn after_break(keys: &Keys) -> Result<AfterBreak, CliError> {
    let lines = crate::progress::ResumeLines::stderr();
    let on_resume: transfer::OnResume =
        std::sync::Arc::new(move |reconnecting, resumed| lines.on_resume(reconnecting, resumed));
    Ok(AfterBreak {
        receipt: !keys.no_receipt.unwrap_or(false),
        ciphertext: keys.ciphertext.unwrap_or(false),
        ciphertext_receipt: keys.ciphertext_receipt.unwrap_or(false),
        resume: config::resume_time(keys)?,
        on_resume: Some(on_resume),
    })
}

/// The producer's last line: whether the receiver confirmed (§12.2).
fn delivered(d: &Delivery) {
    let resumed = match d.resumes {
        0 => String::new(),
        n => format!(" (after {n} reconnect{})", if n == 1 { "" } else { "s" }),
    };
    // §12.2: only a receipt made with the transfer's key is a proof
    let proof = match (d.encrypted, d.authenticated) {
        (true, true) => "authenticated: it decrypted them",
        (true, false) => "ciphertext, not authenticated: the receiver holds no key",
        (false, _) => "a plain transfer's receipt: a checksum, not a proof",
    };
    match d.confirmed {
        Some(n) => {
            eprintln!("httpipe: delivered: the receiver confirmed {n} bytes ({proof}){resumed}")
        }
        None => eprintln!(
            "httpipe: sent {} bytes{resumed}; the receiver did not confirm (it sends no receipts)",
            d.bytes
        ),
    }
}

/// The consumer's last word (§12.2): the `ok` receipt once the output is complete, else the
/// `cancelled` one (so the producer fails at once instead of waiting to resume).
async fn settle(rx: transfer::Receiver, complete: bool) {
    match rx.settle(complete).await {
        Ok(true) => {
            interrupt::enter(Stage::Confirmed);
            tracing::info!("the sender has our receipt")
        }
        Ok(false) => {}
        // The data is saved either way: the sender reports itself unconfirmed.
        Err(e) => tracing::warn!("the receipt did not reach the sender: {e}"),
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

fn target(keys: &Keys, path: String) -> Result<StreamTarget, CliError> {
    Ok(StreamTarget {
        endpoint: Endpoint::resolve(keys.relay.as_deref(), keys.connect_url.as_deref())?,
        path,
        token: keys.access_token.clone(),
        timeout: config::timeout(keys),
    })
}

fn format(keys: &Keys) -> Result<Format, CliError> {
    match keys.encryption_mode.as_deref() {
        None | Some("age-rt") => Ok(Format::AgeRt),
        Some("age") => Ok(Format::Age),
        Some(other) => Err(CliError::usage(
            format!("invalid encryption mode {other:?}"),
            "use --encryption-mode age-rt (default) or age",
        )),
    }
}

fn recipients(keys: &Keys) -> Result<Vec<String>, CliError> {
    let given = keys.recipients.clone().unwrap_or_default();
    let file = keys.recipients_file.as_ref().map(PathBuf::from);
    let r = keys::load_recipients(&given, file.as_deref())?;
    if !r.is_empty() && keys.passphrase.is_some() {
        return Err(CliError::usage(
            "both a passphrase and recipients were given",
            "age allows one or the other: drop -p/HTTPIPE_PASSPHRASE or -r/-R",
        ));
    }
    Ok(r)
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

/// Finishes the stream if `r` is Ok, else aborts it (the consumer sees it cut short).
async fn end_stream<T>(
    sender: transfer::Sender,
    r: Result<T, CliError>,
) -> Result<(T, Delivery), CliError> {
    match r {
        Ok(v) => {
            interrupt::enter(Stage::Sent);
            let d = sender
                .finish()
                .await
                .map_err(|e| from_net(&e, Role::Producer))?;
            Ok((v, d))
        }
        Err(e) => {
            sender.abort(&e.what).await;
            Err(e)
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
            if let Copied::OutputClosed(n) = copied {
                tracing::info!("stdout closed after {n} bytes; the rest of the stream was dropped");
            }
            Ok(())
        }
    })
    .await
}

/// A random stream path for `send`: `/s/` + 16 characters (80 bits).
fn random_token(n: usize) -> Result<String, CliError> {
    const ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| {
        CliError::generic(
            format!("no random numbers: {e}"),
            "the system's random source failed",
        )
    })?;
    Ok(bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b % 32)]))
        .collect())
}

fn random_passphrase() -> Result<String, CliError> {
    let s = random_token(20)?; // 100 bits
    Ok(s.as_bytes()
        .chunks(5)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("-"))
}

/// The command the other side pastes: with `-s PATH`, or with the short `code`.
fn receive_hint(
    target: &StreamTarget,
    generated_passphrase: Option<&str>,
    recipients: bool,
    code: Option<&str>,
) -> String {
    let mut parts = Vec::new();
    if let Some(p) = generated_passphrase {
        parts.push(format!("HTTPIPE_PASSPHRASE={p}"));
    }
    parts.push("httpipe receive".to_string());
    match &target.endpoint.relay {
        Some(r)
            if target.endpoint.connect_base
                == format!("{r}{}", httpipe::protocol::paths::CONNECT_PREFIX) =>
        {
            parts.push(format!("--relay {}", shell_word(r)));
        }
        _ => parts.push(format!("-U {}", shell_word(&target.endpoint.connect_base))),
    }
    match code {
        Some(c) => parts.push(c.to_string()),
        None => parts.push(format!("-s {}", shell_word(&target.path))),
    }
    if recipients {
        parts.push("-i YOUR_KEY_FILE".to_string());
    }
    parts.join(" ")
}

fn shell_word(s: &str) -> String {
    shlex::try_quote(s)
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| s.to_string())
}

async fn send(s: SendArgs, keys: Keys) -> Result<(), CliError> {
    interrupt::or_interrupted(Role::Producer, send_files(s, keys)).await
}

async fn send_files(s: SendArgs, mut keys: Keys) -> Result<(), CliError> {
    let entries = tarball::entries(&s.files)?;
    let recipients = recipients(&keys)?;
    let (filename, size, content_type) = match entries.as_slice() {
        [one] => (one.name.clone(), one.size, None),
        many => (
            format!("httpipe-{}-files.tar", many.len()),
            tarball::archive_size(many),
            Some("application/x-tar".to_string()),
        ),
    };
    // Nothing agreed beforehand: a short code (PROTOCOL.md §14) carries the path and the key.
    let by_code = keys.stream_path.is_none() && keys.passphrase.is_none() && recipients.is_empty();
    let (target, recipients) = if by_code {
        if format(&keys)? != Format::AgeRt {
            return Err(CliError::usage(
                "a transfer by short code is age-rt (PROTOCOL.md §14.2)",
                "leave out --encryption-mode, or agree on -s and a passphrase instead",
            ));
        }
        let relay = target(&keys, String::new())?; // the code chooses the path
        let offer =
            transfer::CodeOffer::new(Some(filename.clone()), Some(size), content_type.clone());
        eprintln!("waiting for a free code on the relay…");
        let show = |code: &str| {
            eprintln!("Code: {code}");
            eprintln!("On the other side, run:");
            eprintln!("  {}", receive_hint(&relay, None, false, Some(code)));
            if relay.token.is_some() {
                // a relay in auth mode: the receiver needs a code token too (PROTOCOL.md §6)
                eprintln!("  (with a code token for this relay in HTTPIPE_ACCESS_TOKEN)");
            }
            eprintln!("(the code works once; waiting for the receiver)");
        };
        let k = transfer::code_send(&relay, offer, show)
            .await
            .map_err(|e| from_net(&e, Role::Producer))?;
        let target = StreamTarget {
            path: k.path.clone(),
            ..relay
        };
        (target, vec![k.recipient.clone()])
    } else {
        let path = match keys.stream_path.clone() {
            Some(p) => config::check_stream_path(Some(p))?,
            None => format!("/s/{}", random_token(16)?),
        };
        let mut generated = None;
        if recipients.is_empty() && keys.passphrase.is_none() {
            let p = random_passphrase()?;
            keys.passphrase = Some(p.clone());
            generated = Some(p);
        }
        let target = target(&keys, path)?;
        eprintln!("On the other side, run:");
        eprintln!(
            "  {}",
            receive_hint(&target, generated.as_deref(), !recipients.is_empty(), None)
        );
        if generated.is_none() && recipients.is_empty() {
            eprintln!("  (with the same passphrase in HTTPIPE_PASSPHRASE)");
        }
        if keys.access_token.is_some() {
            eprintln!("  (with a read token for this path in HTTPIPE_ACCESS_TOKEN)");
        }
        (target, recipients)
    };
    let spec = SendSpec {
        target,
        content_type,
        filename: Some(filename.clone()),
        size: Some(size),
        passphrase: keys.passphrase.clone(),
        recipients,
        format: format(&keys)?,
        auto_flush: None,
        after_break: after_break(&keys)?,
        resume_window: config::resume_window(&keys)?,
        receipt_timeout: config::receipt_timeout(&keys)?,
    };
    let progress = Progress::new(true, Some(size), "waiting for the receiver");
    let mut sender = transfer::open_sender(spec)
        .await
        .map_err(|e| from_net(&e, Role::Producer))?;
    interrupt::enter(Stage::Streaming);
    progress.set_message(&filename);
    let r = send_entries(&entries, &mut sender, &progress).await;
    let ((), d) = end_stream(sender, r).await?;
    progress.finish();
    delivered(&d);
    Ok(())
}

async fn send_entries<S: Sink>(
    entries: &[tarball::Entry],
    sink: &mut S,
    progress: &Progress,
) -> Result<(), CliError> {
    let archive = entries.len() > 1;
    for e in entries {
        if archive {
            sink.write(&tarball::header(e)?)
                .await
                .map_err(|err| from_net(&err, Role::Producer))?;
        }
        let f = tokio::fs::File::open(&e.path).await.map_err(|err| {
            CliError::generic(
                format!("can't open {}: {err}", e.path.display()),
                "check the file",
            )
        })?;
        let n = pipe::copy_to_sink(f, sink, true, progress, &e.path.display().to_string()).await?;
        if n != e.size {
            return Err(CliError::generic(
                format!(
                    "{} changed size while it was sent ({} → {n} bytes)",
                    e.path.display(),
                    e.size
                ),
                "send it again when nothing writes to it",
            ));
        }
        if archive {
            let pad = vec![0u8; tarball::padding(e.size)];
            sink.write(&pad)
                .await
                .map_err(|err| from_net(&err, Role::Producer))?;
        }
    }
    if archive {
        sink.write(&[0u8; 1024])
            .await
            .map_err(|err| from_net(&err, Role::Producer))?;
    }
    Ok(())
}

/// Where `receive` saves: `-o -` stdout; `-o DIR` DIR/NAME; `-o FILE`; default ./NAME, or
/// stdout when the sender gave no name.
#[derive(Debug, PartialEq, Eq)]
enum Dest {
    Stdout,
    File(PathBuf),
}

fn safe_name(name: &str) -> Option<String> {
    let base = Path::new(name).file_name()?.to_str()?;
    (!base.is_empty() && base != "." && base != ".." && !base.starts_with('.'))
        .then(|| base.to_string())
}

fn destination(output: Option<&Path>, sent_name: Option<&str>) -> Result<Dest, CliError> {
    let name = sent_name.and_then(safe_name);
    let dest = match output {
        Some(p) if p == Path::new("-") => return Ok(Dest::Stdout),
        Some(p) if p.is_dir() => p.join(name.unwrap_or_else(|| "httpipe-received".to_string())),
        Some(p) => p.to_path_buf(),
        None => match name {
            Some(n) => PathBuf::from(n),
            None => return Ok(Dest::Stdout),
        },
    };
    if dest.exists() {
        return Err(CliError::generic(
            format!("{} already exists", dest.display()),
            "it is never overwritten; choose another place with -o",
        ));
    }
    Ok(Dest::File(dest))
}

async fn receive(r: ReceiveArgs, keys: Keys) -> Result<(), CliError> {
    interrupt::or_interrupted(Role::Consumer, receive_files(r, keys)).await
}

async fn receive_files(r: ReceiveArgs, keys: Keys) -> Result<(), CliError> {
    if let Some(o) = r.output.as_deref() {
        if o != Path::new("-") && !o.is_dir() && o.exists() {
            return Err(CliError::generic(
                format!("{} already exists", o.display()),
                "it is never overwritten; choose another place with -o",
            ));
        }
    }
    let (spec, offer) = match r.code.as_deref() {
        Some(code) => {
            if r.stream.stream_path.is_some()
                || r.stream.passphrase.is_some()
                || !r.identities.is_empty()
            {
                return Err(CliError::usage(
                    "a short code carries the stream path and the key",
                    "leave out -s, -p and -i when you give a code",
                ));
            }
            let relay = target(&keys, String::new())?;
            let (k, offer) = transfer::code_receive(&relay, code)
                .await
                .map_err(|e| from_net(&e, Role::Consumer))?;
            let spec = ReceiveSpec {
                target: StreamTarget {
                    path: k.path.clone(),
                    ..relay
                },
                passphrase: None,
                identities: vec![k.identity.to_string()],
                after_break: after_break(&keys)?,
            };
            (spec, Some(offer))
        }
        None => {
            let path = config::check_stream_path(keys.stream_path.clone())?;
            let spec = ReceiveSpec {
                target: target(&keys, path)?,
                passphrase: keys.passphrase.clone(),
                identities: keys::load_identities(&keys.identities.clone().unwrap_or_default())?,
                after_break: after_break(&keys)?,
            };
            (spec, None)
        }
    };
    let work = async {
        let (info, mut rx) = transfer::open_receiver(spec)
            .await
            .map_err(|e| from_net(&e, Role::Consumer))?;
        interrupt::enter(Stage::Streaming);
        // a code's offer names the file (an encrypted stream carries no name, §11.1, §14.3)
        let (name, size) = match offer {
            Some(o) => (info.filename.or(o.name), info.size.or(o.size)),
            None => (info.filename, info.size),
        };
        let saved = async {
            match destination(r.output.as_deref(), name.as_deref())? {
                Dest::Stdout => {
                    let progress = Progress::new(true, size, "received");
                    let copied = crate::stdio::copy_to_stdout(&mut rx, &progress).await?;
                    progress.finish();
                    Ok(matches!(copied, Copied::Complete(_)))
                }
                Dest::File(dest) => receive_to_file(&mut rx, &dest, size).await.map(|()| true),
            }
        }
        .await;
        // Only a complete, saved transfer is confirmed (§12.2).
        settle(rx, matches!(saved, Ok(true))).await;
        saved.map(|_| ())
    };
    work.await
}

/// Writes to `DEST.httpipe-part` and renames it only after the stream's clean end.
async fn receive_to_file(
    rx: &mut transfer::Receiver,
    dest: &Path,
    size: Option<u64>,
) -> Result<(), CliError> {
    let mut part = dest.as_os_str().to_owned();
    part.push(".httpipe-part");
    let part = PathBuf::from(part);
    let file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&part)
        .await
        .map_err(|e| {
            CliError::generic(
                format!("can't create {}: {e}", part.display()),
                "check the directory",
            )
        })?;
    let guard = PartGuard(Some(part.clone()));
    let progress = Progress::new(true, size, &dest.display().to_string());
    let mut out = BufWriter::with_capacity(pipe::CHUNK, file);
    let copied =
        pipe::copy_from_source(rx, &mut out, false, &progress, &part.display().to_string()).await?;
    out.shutdown().await.map_err(|e| {
        CliError::generic(
            format!("writing {} failed: {e}", part.display()),
            "check free space",
        )
    })?;
    if let Copied::OutputClosed(_) = copied {
        return Err(CliError::generic(
            format!("writing {} stopped", part.display()),
            "check free space",
        ));
    }
    std::fs::rename(&part, dest).map_err(|e| {
        CliError::generic(
            format!("can't rename {} to {}: {e}", part.display(), dest.display()),
            "check the directory",
        )
    })?;
    guard.keep();
    progress.finish();
    eprintln!("saved {}", dest.display());
    Ok(())
}

/// Removes a partial file unless kept.
struct PartGuard(Option<PathBuf>);

impl PartGuard {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for PartGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passphrases_and_paths_are_random() {
        let a = random_passphrase().expect("rand");
        assert_eq!(a.len(), 23);
        assert_ne!(a, random_passphrase().expect("rand"));
        assert_eq!(random_token(16).expect("rand").len(), 16);
    }

    #[test]
    fn hint_for_relay_and_connect_url() {
        let t = StreamTarget {
            endpoint: Endpoint::resolve(Some("http://127.0.0.1:8080"), None).expect("ep"),
            path: "/s/abc".into(),
            token: None,
            timeout: None,
        };
        assert_eq!(
            receive_hint(&t, Some("aaaaa-bbbbb"), false, None),
            "HTTPIPE_PASSPHRASE=aaaaa-bbbbb httpipe receive --relay http://127.0.0.1:8080 -s /s/abc"
        );
        let t = StreamTarget {
            endpoint: Endpoint::resolve(None, Some(config::ZEBRASTREAM_CONNECT_URL)).expect("ep"),
            ..t
        };
        assert_eq!(
            receive_hint(&t, None, true, None),
            "httpipe receive -U https://connect.zebrastream.io/v0/ -s /s/abc -i YOUR_KEY_FILE"
        );
        let t = StreamTarget {
            endpoint: Endpoint::resolve(Some("http://127.0.0.1:8080"), None).expect("ep"),
            ..t
        };
        assert_eq!(
            receive_hint(&t, None, false, Some("7-guitarist-revenge")),
            "httpipe receive --relay http://127.0.0.1:8080 7-guitarist-revenge"
        );
    }

    #[test]
    fn receive_destinations() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            destination(Some(Path::new("-")), Some("a")).expect("d"),
            Dest::Stdout
        );
        assert_eq!(destination(None, None).expect("d"), Dest::Stdout);
        assert_eq!(
            destination(Some(dir.path()), Some("../../etc/passwd")).expect("d"),
            Dest::File(dir.path().join("passwd"))
        );
        assert_eq!(
            destination(Some(dir.path()), Some(".bashrc")).expect("d"),
            Dest::File(dir.path().join("httpipe-received"))
        );
        std::fs::write(dir.path().join("x"), b"").expect("write");
        assert!(destination(Some(dir.path()), Some("x")).is_err());
    }

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

    #[test]
    fn passphrase_and_recipients_conflict() {
        let (_, p) = httpipe::crypto::generate_x25519().expect("keygen");
        let k = Keys {
            passphrase: Some("x".into()),
            recipients: Some(vec![p]),
            ..Keys::default()
        };
        assert_eq!(recipients(&k).expect_err("conflict").exit, Exit::Usage);
        assert!(format(&Keys {
            encryption_mode: Some("rot13".into()),
            ..Keys::default()
        })
        .is_err());
    }
}
