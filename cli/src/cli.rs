//! The command line (clap derive). Option names, short forms and meanings follow
//! `zebrastream` 0.5.4 (see `ZEBRASTREAM_NOTES.md`); values left out here come from the
//! environment or the config file (`config.rs`), so nothing has a clap default.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const ENV_HELP: &str = "\
There is no default relay: name it with --relay URL (an httpipe relay) or -U URL (a Connect
API, e.g. ZebraStream's https://connect.zebrastream.io/v0/), HTTPIPE_RELAY, or `relay:` in the
config file.

Environment (after the command line, before the config file): HTTPIPE_<KEY> or
ZEBRASTREAM_<KEY> for every config key, e.g. HTTPIPE_ACCESS_TOKEN, HTTPIPE_PASSPHRASE,
HTTPIPE_STREAM_PATH, HTTPIPE_CONNECT_URL, HTTPIPE_RELAY, HTTPIPE_CONNECT_TIMEOUT.

Delivery receipts and resume (PROTOCOL.md §12) are on by default between httpipe peers: the
producer succeeds only once the consumer confirmed what it saved (\"delivered: the receiver
confirmed N bytes\"), and a broken connection is resumed (\"reconnecting…\") from the producer's
replay window. ZebraStream peers and curl send no receipts (\"sent; the receiver did not
confirm\") and don't resume.

Exit codes: 0 ok, 1 error, 2 usage, 3 auth, 4 connect timeout, 5 peer disconnected (also: the
receiver did not confirm, or a break could not be resumed), 6 producer command failed,
7 consumer command failed.";

#[derive(Debug, Parser)]
#[command(
    name = "httpipe",
    version,
    about = "Stream bytes between Unix pipelines through an httpipe (or ZebraStream) relay",
    after_help = ENV_HELP
)]
pub struct Cli {
    /// Named configuration: ~/.config/httpipe/streams/NAME.yaml (or zebrastream's)
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub config_name: Option<String>,

    /// Explicit path to a config file (takes precedence over --config-name)
    #[arg(short = 'f', long, global = true, value_name = "PATH")]
    pub config_file: Option<PathBuf>,

    /// Log level: error (default), warn, info, debug, trace
    #[arg(short = 'l', long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send stdin (or a producer command's stdout) to a stream
    Write(WriteArgs),
    /// Receive a stream to stdout (or into a consumer command's stdin)
    Read(ReadArgs),
    /// Send files: prints a short code (7-guitarist-revenge) for `httpipe receive CODE`
    Send(SendArgs),
    /// Receive what `httpipe send` sends (by its code, or -s PATH), to a file
    Receive(ReceiveArgs),
    /// Make an age key pair: X25519, or post-quantum with --pq (like age-keygen [-pq])
    Keygen(KeygenArgs),
}

/// Where the stream is and how to get in: shared by all transfer subcommands.
#[derive(Debug, Args, Default, Clone)]
pub struct StreamArgs {
    /// Stream path (e.g. /org/team/feed); optional if in the config
    #[arg(short = 's', long, value_name = "PATH")]
    pub stream_path: Option<String>,

    /// Connect API base URL, e.g. ZebraStream's https://connect.zebrastream.io/v0/ (no default:
    /// give this, --relay, HTTPIPE_RELAY or `relay:` in the config file)
    #[arg(short = 'U', long, value_name = "URL")]
    pub connect_url: Option<String>,

    /// httpipe relay base URL: Connect API at URL/connect/v0/, data at URL/PATH
    #[arg(long, value_name = "URL")]
    pub relay: Option<String>,

    /// Seconds to wait for the other side on the Connect API (default: forever)
    #[arg(short = 't', long, value_name = "SECONDS")]
    pub connect_timeout: Option<u64>,

    /// Access token (better: HTTPIPE_ACCESS_TOKEN or the config file)
    #[arg(short = 'a', long, value_name = "TOKEN")]
    pub access_token: Option<String>,

    /// Passphrase for encryption (better: HTTPIPE_PASSPHRASE or the config file)
    #[arg(short = 'p', long, value_name = "PASSPHRASE")]
    pub passphrase: Option<String>,

    /// Seconds to keep trying to resume after a broken connection (default 60), or off
    #[arg(long, value_name = "SECONDS|off")]
    pub resume: Option<String>,

    /// Don't use delivery receipts (the producer then reports the relay's verdict, unconfirmed)
    #[arg(long)]
    pub no_receipt: bool,
}

/// The producer's side of receipts and resume (`write`, `send`).
#[derive(Debug, Args, Default, Clone)]
pub struct ProducerArgs {
    /// Bytes kept to resend after a break (default 32MiB, at most 1GiB; suffixes KiB MiB GiB)
    #[arg(long, value_name = "BYTES")]
    pub resume_window: Option<String>,

    /// Seconds to wait for the receiver's receipt after the relay delivered (default 120)
    #[arg(long, value_name = "SECONDS")]
    pub receipt_timeout: Option<u64>,

    /// Count an encrypted stream delivered on the receipt of a receiver without the key,
    /// for the ciphertext it stored (not authenticated: anyone who knows the path could send it)
    #[arg(long)]
    pub ciphertext_receipt: bool,
}

#[derive(Debug, Args, Default, Clone)]
pub struct WriteArgs {
    #[command(flatten)]
    pub stream: StreamArgs,

    #[command(flatten)]
    pub producer: ProducerArgs,

    /// Content-Type of the stream
    #[arg(short = 'c', long, value_name = "TYPE")]
    pub content_type: Option<String>,

    /// Automatic flush delay in seconds (0 = every read goes out at once; omit to disable)
    #[arg(short = 'd', long, value_name = "SECONDS")]
    pub auto_flush_delay: Option<u64>,

    /// Encryption format with a passphrase or recipients: age-rt (default) or age
    #[arg(long, value_name = "MODE")]
    pub encryption_mode: Option<String>,

    /// Read stdin without waiting for full 64 KiB blocks (for real-time streams)
    #[arg(short = 'u', long)]
    pub unbuffered_input: bool,

    /// Encrypt to this age recipient (age1...); repeatable
    #[arg(short = 'r', long = "recipient", value_name = "RECIPIENT")]
    pub recipients: Vec<String>,

    /// Encrypt to the recipients listed in FILE (one per line, # comments)
    #[arg(short = 'R', long, value_name = "FILE")]
    pub recipients_file: Option<PathBuf>,

    /// After a transfer, wait for the next consumer and run COMMAND again (until SIGINT/SIGTERM)
    #[arg(long)]
    pub serve: bool,

    /// Producer command (after --): its stdout is sent, once a consumer is there
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args, Default, Clone)]
pub struct ReadArgs {
    #[command(flatten)]
    pub stream: StreamArgs,

    /// Write each piece to stdout at once (for real-time streams)
    #[arg(short = 'u', long)]
    pub unbuffered_output: bool,

    /// Decrypt with the age identities in FILE (AGE-SECRET-KEY-1 lines); repeatable
    #[arg(short = 'i', long = "identity", value_name = "FILE")]
    pub identities: Vec<PathBuf>,

    /// Without a passphrase or identity, write an encrypted stream's ciphertext as it is
    /// (to decrypt later); otherwise it fails with WRONG_KEY
    #[arg(long)]
    pub ciphertext: bool,

    /// After a transfer, wait for the next producer and run COMMAND again (until SIGINT/SIGTERM)
    #[arg(long)]
    pub serve: bool,

    /// Consumer command (after --): the stream is its stdin, once a producer is there
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args, Default, Clone)]
pub struct SendArgs {
    #[command(flatten)]
    pub stream: StreamArgs,

    #[command(flatten)]
    pub producer: ProducerArgs,

    /// Encrypt to this age recipient (age1...) instead of a passphrase; repeatable
    #[arg(short = 'r', long = "recipient", value_name = "RECIPIENT")]
    pub recipients: Vec<String>,

    /// Encrypt to the recipients listed in FILE
    #[arg(short = 'R', long, value_name = "FILE")]
    pub recipients_file: Option<PathBuf>,

    /// Encryption format: age-rt (default) or age
    #[arg(long, value_name = "MODE")]
    pub encryption_mode: Option<String>,

    /// Files to send (several go as one tar archive). With no -s, passphrase or recipient,
    /// the other side receives them by a short code (PROTOCOL.md §14), printed here
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args, Default, Clone)]
pub struct ReceiveArgs {
    #[command(flatten)]
    pub stream: StreamArgs,

    /// Decrypt with the age identities in FILE; repeatable
    #[arg(short = 'i', long = "identity", value_name = "FILE")]
    pub identities: Vec<PathBuf>,

    /// Without a passphrase or identity, save an encrypted stream's ciphertext as it is
    /// (to decrypt later); otherwise it fails with WRONG_KEY
    #[arg(long)]
    pub ciphertext: bool,

    /// Where to save: a file, a directory, or - for stdout (default: the sent name, here)
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// The short code `httpipe send` printed (e.g. 7-guitarist-revenge): it carries the stream
    /// path and the key, so leave out -s, the passphrase and -i
    #[arg(value_name = "CODE")]
    pub code: Option<String>,
}

#[derive(Debug, Args, Default, Clone)]
pub struct KeygenArgs {
    /// Write the key to FILE (created with mode 0600; never overwritten)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Make a hybrid post-quantum key (ML-KEM-768 + X25519, age 1.3: AGE-SECRET-KEY-PQ-1... /
    /// age1pq1...) instead of an X25519 one; age-keygen's `-pq` works too
    #[arg(long)]
    pub pq: bool,
}

/// age-keygen spells its post-quantum flag `-pq` (Go flags take one dash): `httpipe keygen -pq`
/// means `--pq`. Only for keygen: elsewhere `-pq` is `-p q` (a passphrase "q"), so the
/// rewrite needs `keygen` before it and no other subcommand or `--` in between.
pub fn age_keygen_flags(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(at) = args.iter().position(|a| a == "-pq") else {
        return args;
    };
    let before = &args[1.min(at)..at];
    let keygen = before.iter().any(|a| a == "keygen");
    let other = before.iter().any(|a| {
        ["write", "read", "send", "receive", "--"]
            .iter()
            .any(|c| a == c)
    });
    if !keygen || other {
        return args;
    }
    let mut args = args;
    args[at] = "--pq".into();
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        Cli::command().debug_assert();
    }

    fn argv(s: &str) -> Vec<std::ffi::OsString> {
        s.split(' ').map(Into::into).collect()
    }

    fn keygen_of(s: &str) -> KeygenArgs {
        match Cli::try_parse_from(age_keygen_flags(argv(s)))
            .expect("parse")
            .command
        {
            Some(Command::Keygen(k)) => k,
            other => panic!("not keygen: {other:?}"),
        }
    }

    #[test]
    fn keygen_pq_in_both_spellings_and_only_for_keygen() {
        assert!(!keygen_of("httpipe keygen").pq);
        assert!(keygen_of("httpipe keygen --pq").pq);
        let k = keygen_of("httpipe keygen -pq -o k.txt");
        assert!(k.pq);
        assert_eq!(k.output.as_deref(), Some(std::path::Path::new("k.txt")));
        assert!(keygen_of("httpipe -l debug keygen -o k.txt -pq").pq);
        // Elsewhere -pq stays -p q: a passphrase "q".
        let args = argv("httpipe write -s /x -pq");
        assert_eq!(age_keygen_flags(args.clone()), args);
        let args = argv("httpipe write -p keygen -pq");
        assert_eq!(age_keygen_flags(args.clone()), args);
    }

    #[test]
    fn global_options_before_and_after_the_subcommand() {
        let a = Cli::try_parse_from(["httpipe", "-n", "cfg", "write", "-s", "/x"]).expect("parse");
        assert_eq!(a.config_name.as_deref(), Some("cfg"));
        let b = Cli::try_parse_from(["httpipe", "write", "-f", "c.yaml", "-l", "debug"])
            .expect("parse");
        assert_eq!(b.config_file, Some(PathBuf::from("c.yaml")));
        assert_eq!(b.log_level.as_deref(), Some("debug"));
    }

    #[test]
    fn command_after_double_dash_keeps_its_options() {
        let a = Cli::try_parse_from([
            "httpipe", "write", "-s", "/x", "-d", "0", "--", "tail", "-f", "log",
        ])
        .expect("parse");
        let Some(Command::Write(w)) = a.command else {
            panic!("not write")
        };
        assert_eq!(w.command, ["tail", "-f", "log"]);
        assert_eq!(w.auto_flush_delay, Some(0));
        assert_eq!(w.stream.stream_path.as_deref(), Some("/x"));
    }

    #[test]
    fn read_has_no_write_options() {
        let e =
            Cli::try_parse_from(["httpipe", "read", "-c", "text/plain"]).expect_err("must fail");
        assert_eq!(e.exit_code(), 2);
        let e = Cli::try_parse_from(["httpipe", "read", "--encryption-mode", "age"])
            .expect_err("must fail");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn repeatable_recipients_and_identities() {
        let a =
            Cli::try_parse_from(["httpipe", "write", "-r", "age1a", "-r", "age1b"]).expect("parse");
        let Some(Command::Write(w)) = a.command else {
            panic!("not write")
        };
        assert_eq!(w.recipients, ["age1a", "age1b"]);
        let a = Cli::try_parse_from(["httpipe", "read", "-i", "k1", "--identity", "k2"])
            .expect("parse");
        let Some(Command::Read(r)) = a.command else {
            panic!("not read")
        };
        assert_eq!(r.identities, [PathBuf::from("k1"), PathBuf::from("k2")]);
    }
}
