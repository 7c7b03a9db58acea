//! A small `age`-like command line over the httpipe crypto core, stdin to stdout.
//!
//! ```text
//! age encrypt [--format age|age-rt] (-r RECIPIENT ... | --passphrase-env VAR) [--armor] [--work-factor LOG2N]
//! age decrypt (-i IDENTITY_FILE ... | --passphrase-env VAR) [--lenient] [--max-work-factor LOG2N]
//! age keygen [-pq]
//! ```
//! In age-rt mode every input line is flushed as one record, so `tail -f log | age encrypt
//! --format age-rt ...` is real-time. On failure: a one-line error on stderr and exit status 1;
//! plaintext that failed to authenticate is never written.

use httpipe::crypto::{
    generate_hybrid, generate_x25519, DecryptOptions, Decryptor, Encryptor, Error, Format,
    Identity, Recipient, DEFAULT_SCRYPT_LOG2_N,
};
use std::io::{BufRead, Read, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: age encrypt [--format age|age-rt] (-r RECIPIENT ... | --passphrase-env VAR) [--armor] [--work-factor LOG2N]
       age decrypt (-i IDENTITY_FILE ... | --passphrase-env VAR) [--lenient] [--max-work-factor LOG2N]
       age keygen [-pq]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("age: error: {}", msg.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

#[derive(Default)]
struct Opts {
    format: Option<Format>,
    recipients: Vec<Recipient>,
    identities: Vec<Identity>,
    passphrase: Option<String>,
    armor: bool,
    lenient: bool,
    work_factor: Option<u8>,
    max_work_factor: Option<u8>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--format" => o.format = Some(value()?.parse().map_err(|e: Error| e.to_string())?),
            "-r" | "--recipient" => o
                .recipients
                .push(value()?.parse().map_err(|e: Error| e.to_string())?),
            "-i" | "--identity" => {
                let path = value()?;
                let text =
                    std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
                o.identities
                    .extend(Identity::parse_file(&text).map_err(|e| format!("{path}: {e}"))?);
            }
            "--passphrase-env" => {
                let var = value()?;
                let p = std::env::var(var)
                    .map_err(|_| format!("environment variable {var} is not set"))?;
                if p.is_empty() {
                    return Err(format!("environment variable {var} is empty"));
                }
                o.passphrase = Some(p);
            }
            "-a" | "--armor" => o.armor = true,
            "--lenient" => o.lenient = true,
            "--work-factor" => {
                o.work_factor = Some(
                    value()?
                        .parse()
                        .map_err(|_| "--work-factor needs a number")?,
                )
            }
            "--max-work-factor" => {
                o.max_work_factor = Some(
                    value()?
                        .parse()
                        .map_err(|_| "--max-work-factor needs a number")?,
                )
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

fn run(args: &[String]) -> Result<(), String> {
    let (cmd, rest) = args.split_first().ok_or(USAGE)?;
    match cmd.as_str() {
        "encrypt" => encrypt(parse(rest)?),
        "decrypt" => decrypt(parse(rest)?),
        "keygen" => {
            let generate = match rest {
                [] => generate_x25519,
                [pq] if pq == "-pq" || pq == "--pq" => generate_hybrid,
                _ => return Err(USAGE.into()),
            };
            let (secret, recipient) = generate().map_err(|e| e.to_string())?;
            println!("# public key: {recipient}\n{}", secret.as_str());
            eprintln!("Public key: {recipient}");
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

fn write(out: &mut impl Write, buf: &mut Vec<u8>) -> Result<(), String> {
    out.write_all(buf)
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing stdout: {e}"))?;
    buf.clear();
    Ok(())
}

fn encrypt(o: Opts) -> Result<(), String> {
    let format = o.format.unwrap_or(Format::Age);
    let recipients = match (o.passphrase, o.recipients.is_empty()) {
        (Some(p), true) => {
            vec![Recipient::passphrase_with_work_factor(
                &p,
                o.work_factor.unwrap_or(DEFAULT_SCRYPT_LOG2_N),
            )]
        }
        (None, false) => o.recipients,
        _ => return Err("encrypt needs either -r RECIPIENT ... or --passphrase-env VAR".into()),
    };
    let mut enc = Encryptor::new(format, &recipients).map_err(|e| e.to_string())?;
    if o.armor {
        enc = enc.armored();
    }
    // 64 KiB of read-ahead: an age-rt record is one line, or at most what one read gave
    // (so a long line, or input without newlines, never piles up in memory).
    let mut input = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut stdout = std::io::stdout().lock();
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut block = vec![0u8; 64 * 1024];
    loop {
        let n = if format == Format::AgeRt {
            line.clear();
            let buf = input
                .fill_buf()
                .map_err(|e| format!("reading stdin: {e}"))?;
            let take = buf
                .iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| i + 1);
            line.extend_from_slice(&buf[..take]);
            input.consume(take);
            take
        } else {
            input
                .read(&mut block)
                .map_err(|e| format!("reading stdin: {e}"))?
        };
        if n == 0 {
            break;
        }
        let data = if format == Format::AgeRt {
            &line[..]
        } else {
            &block[..n]
        };
        enc.update(data, &mut out).map_err(|e| e.to_string())?;
        if format == Format::AgeRt {
            enc.flush(&mut out).map_err(|e| e.to_string())?;
        }
        write(&mut stdout, &mut out)?;
    }
    enc.finish(&mut out).map_err(|e| e.to_string())?;
    write(&mut stdout, &mut out)
}

fn decrypt(o: Opts) -> Result<(), String> {
    let mut ids = o.identities;
    if let Some(p) = o.passphrase {
        ids.push(Identity::passphrase(&p));
    }
    if ids.is_empty() {
        return Err("decrypt needs -i IDENTITY_FILE ... or --passphrase-env VAR".into());
    }
    let defaults = DecryptOptions::default();
    let options = DecryptOptions {
        lenient_empty_final_chunk: o.lenient,
        max_scrypt_log2_n: o.max_work_factor.unwrap_or(defaults.max_scrypt_log2_n),
        ..defaults
    };
    let mut dec = Decryptor::new(&ids, options).map_err(|e| e.to_string())?;
    let mut input = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut out = Vec::new();
    let mut block = vec![0u8; 64 * 1024];
    loop {
        let n = input
            .read(&mut block)
            .map_err(|e| format!("reading stdin: {e}"))?;
        if n == 0 {
            break;
        }
        let r = dec.update(&block[..n], &mut out);
        write(&mut stdout, &mut out)?; // only authenticated plaintext is ever in `out`
        r.map_err(|e| e.to_string())?;
    }
    let r = dec.finish(&mut out);
    write(&mut stdout, &mut out)?;
    r.map_err(|e| e.to_string())
}
