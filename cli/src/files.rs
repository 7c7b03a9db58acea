//! `send` and `receive`: files by path or short code (PROTOCOL.md §14), the command the other
//! side pastes, and where a received file goes (`-o`, renamed only after a complete stream).

use std::path::{Path, PathBuf};

use tokio::io::{AsyncWriteExt, BufWriter};

use crate::cli::{ReceiveArgs, SendArgs};
use crate::config::{self, Keys};
use crate::exit::{from_net, CliError, Role};
use crate::interrupt::{self, Stage};
use crate::keys;
use crate::pipe::{self, Copied, Sink};
use crate::progress::Progress;
use crate::spec::{after_break, format, recipients, target};
use crate::tarball;
use crate::transfer::{self, ReceiveSpec, SendSpec, StreamTarget};
use crate::verdict::{delivered, end_stream, settle};

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

pub(crate) async fn send(s: SendArgs, keys: Keys) -> Result<(), CliError> {
    interrupt::or_interrupted(Role::Producer, send_files(s, keys)).await
}

async fn send_files(s: SendArgs, mut keys: Keys) -> Result<(), CliError> {
    let entries = tarball::entries(&s.files)?;
    let recipients = recipients(&keys)?;
    let (filename, size, content_type) = files_offer(&entries);
    // Nothing agreed beforehand: a short code (PROTOCOL.md §14) carries the path and the key.
    let by_code = keys.stream_path.is_none() && keys.passphrase.is_none() && recipients.is_empty();
    let (target, recipients) = if by_code {
        send_target_by_code(&keys, &filename, size, content_type.clone()).await?
    } else {
        (send_target_by_path(&mut keys, &recipients)?, recipients)
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

/// What `send` offers the receiver (file name, size, content type): one file as itself,
/// several as one tar archive.
fn files_offer(entries: &[tarball::Entry]) -> (String, u64, Option<String>) {
    match entries {
        [one] => (one.name.clone(), one.size, None),
        many => (
            format!("httpipe-{}-files.tar", many.len()),
            tarball::archive_size(many),
            Some("application/x-tar".to_string()),
        ),
    }
}

/// `send` by short code: waits on the relay for a free code, shows it with the command the
/// other side runs, and waits for the receiver. The code's keys give the stream's target and
/// its one recipient.
async fn send_target_by_code(
    keys: &Keys,
    filename: &str,
    size: u64,
    content_type: Option<String>,
) -> Result<(StreamTarget, Vec<String>), CliError> {
    if format(keys)? != transfer::CodeKeys::FORMAT {
        return Err(CliError::usage(
            "a transfer by short code is age-rt (PROTOCOL.md §14.2)",
            "leave out --encryption-mode, or agree on -s and a passphrase instead",
        ));
    }
    let relay = target(keys, String::new())?; // the code chooses the path
    let offer = transfer::CodeOffer::new(Some(filename.to_string()), Some(size), content_type);
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
    Ok((target, vec![k.recipient.clone()]))
}

/// `send` to the agreed stream path (`-s`), else a random one, and shows the command the
/// other side runs. With neither recipients nor a passphrase, a generated passphrase goes
/// into `keys` (and into that command).
fn send_target_by_path(keys: &mut Keys, recipients: &[String]) -> Result<StreamTarget, CliError> {
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
    let target = target(keys, path)?;
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
    Ok(target)
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
    refuse_existing(&dest)?;
    Ok(Dest::File(dest))
}

/// Where a receive writes until the stream's clean end: `DEST.httpipe-part`.
fn part_path(dest: &Path) -> PathBuf {
    let mut part = dest.as_os_str().to_owned();
    part.push(".httpipe-part");
    PathBuf::from(part)
}

/// `dest` is refused when it exists (never overwritten) or when a receive that did not
/// finish (killed) left its part file: both before anything is received.
fn refuse_existing(dest: &Path) -> Result<(), CliError> {
    if dest.exists() {
        return Err(CliError::generic(
            format!("{} already exists", dest.display()),
            "it is never overwritten; choose another place with -o",
        ));
    }
    let part = part_path(dest);
    if part.exists() {
        return Err(CliError::generic(
            format!(
                "{} is left from an earlier receive of {} that did not finish",
                part.display(),
                dest.display()
            ),
            "delete it to receive into that name again, or choose another place with -o",
        ));
    }
    Ok(())
}

pub(crate) async fn receive(r: ReceiveArgs, keys: Keys) -> Result<(), CliError> {
    interrupt::or_interrupted(Role::Consumer, receive_files(r, keys)).await
}

async fn receive_files(r: ReceiveArgs, keys: Keys) -> Result<(), CliError> {
    // a named file is checked before the rendezvous (a sender's name only after it)
    if let Some(o) = r.output.as_deref() {
        if o != Path::new("-") && !o.is_dir() {
            refuse_existing(o)?;
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
                match copied {
                    Copied::OutputClosed(n) => Err(crate::stdio::output_closed(n)),
                    Copied::Complete(_) => Ok(true),
                }
            }
            Dest::File(dest) => receive_to_file(&mut rx, &dest, size).await.map(|()| true),
        }
    }
    .await;
    // Only a complete, saved transfer is confirmed (§12.2).
    settle(rx, matches!(saved, Ok(true))).await;
    saved.map(|_| ())
}

/// Writes to `DEST.httpipe-part` and renames it only after the stream's clean end.
async fn receive_to_file(
    rx: &mut transfer::Receiver,
    dest: &Path,
    size: Option<u64>,
) -> Result<(), CliError> {
    let part = part_path(dest);
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
    use crate::config::Endpoint;

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
}
