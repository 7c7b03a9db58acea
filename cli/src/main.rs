//! `httpipe`: stream bytes between Unix pipelines through an httpipe relay (or ZebraStream),
//! command-line compatible with `zebrastream` 0.5.4 (see `ZEBRASTREAM_NOTES.md`).

mod app;
mod cli;
mod command;
mod config;
mod exit;
mod files;
mod interrupt;
mod keys;
mod pipe;
mod progress;
mod spec;
mod stdio;
mod tarball;
mod transfer;
mod verdict;

use clap::{CommandFactory, Parser};

use crate::exit::Exit;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!("httpipe: internal error: {msg}{at}; please report this bug");
        std::process::exit(Exit::Generic.code());
    }));

    let cli = match cli::Cli::try_parse_from(cli::age_keygen_flags(std::env::args_os().collect())) {
        Ok(c) => c,
        Err(e) => std::process::exit(clap_error(&e)),
    };
    if cli.command.is_none() {
        // Like zebrastream: no subcommand prints the help and succeeds.
        let _ = cli::Cli::command().print_help();
        std::process::exit(Exit::Ok.code());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("httpipe: can't start the async runtime: {e}; check the system's limits");
            std::process::exit(Exit::Generic.code());
        }
    };
    let code = match runtime.block_on(app::run(cli)) {
        Ok(()) => Exit::Ok,
        Err(e) => {
            eprintln!("{e}");
            e.exit
        }
    };
    // Don't wait for blocking stdin reads still parked in the runtime's pool.
    runtime.shutdown_background();
    std::process::exit(code.code());
}

/// Prints a clap error as one line (help and version as they are); returns the exit code.
fn clap_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            Exit::Ok.code()
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            Exit::Usage.code()
        }
        _ => {
            // the message up to clap's usage block: its first line and the lines that
            // complete it (the missing arguments' names), as one line
            let rendered = e.render().to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let message = message.join(" ");
            let what = message.strip_prefix("error: ").unwrap_or(&message);
            let what = if what.is_empty() {
                "invalid arguments"
            } else {
                what
            };
            eprintln!("httpipe: {what}; see `httpipe --help`");
            Exit::Usage.code()
        }
    }
}
