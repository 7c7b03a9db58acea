//! age keys: identity files (`-i`), recipients (`-r`, `-R`), and `httpipe keygen [--pq]`:
//! X25519 (`age1...` / `AGE-SECRET-KEY-1...`) and hybrid post-quantum (`age1pq1...` /
//! `AGE-SECRET-KEY-PQ-1...`, PROTOCOL.md §7.1) keys.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::str::FromStr;

use httpipe::crypto::{Identity, Recipient};

use crate::exit::CliError;

/// Parses an identity file like age does: one `AGE-SECRET-KEY-1...` or
/// `AGE-SECRET-KEY-PQ-1...` per line, empty lines and `#` comments ignored. Returns the identity strings (checked). `source` names the
/// file in errors (never the key itself).
pub fn parse_identity_file(text: &str, source: &str) -> Result<Vec<String>, CliError> {
    if text.starts_with("age-encryption.org/") || text.starts_with("-----BEGIN AGE ENCRYPTED FILE")
    {
        return Err(CliError::usage(
            format!("identity file {source} is itself encrypted"),
            "decrypt it first (age -d), or use a plain identity file",
        ));
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        Identity::from_str(line).map_err(|e| {
            CliError::usage(
                format!("identity file {source}, line {}: {e}", i + 1),
                "each line must be an AGE-SECRET-KEY-1... or AGE-SECRET-KEY-PQ-1... key or a # comment",
            )
        })?;
        out.push(line.to_string());
    }
    if out.is_empty() {
        return Err(CliError::usage(
            format!("identity file {source} has no AGE-SECRET-KEY-1 or AGE-SECRET-KEY-PQ-1 line"),
            "make one with `httpipe keygen -o key.txt` (post-quantum: `httpipe keygen --pq -o key.txt`)",
        ));
    }
    Ok(out)
}

/// Parses a recipients file: one `age1...` / `age1pq1...` per line, empty lines and `#`
/// comments ignored.
pub fn parse_recipients_file(text: &str, source: &str) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(check_recipient(line).map_err(|e| {
            CliError::usage(
                format!("recipients file {source}, line {}: {}", i + 1, e.what),
                e.fix,
            )
        })?);
    }
    if out.is_empty() {
        return Err(CliError::usage(
            format!("recipients file {source} has no age1... line"),
            "put one recipient (public key) per line",
        ));
    }
    Ok(out)
}

/// Checks one recipient string.
pub fn check_recipient(s: &str) -> Result<String, CliError> {
    let s = s.trim();
    Recipient::from_str(s).map(|_| s.to_string()).map_err(|e| {
        CliError::usage(
            format!("bad recipient {s:?}: {e}"),
            "give an age1... or age1pq1... public key",
        )
    })
}

pub fn read_key_file(path: &Path, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        CliError::generic(
            format!("can't read {what} {}: {e}", path.display()),
            "check the path and its permissions",
        )
    })
}

/// All identities from the `-i` files.
pub fn load_identities(paths: &[impl AsRef<Path>]) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let text = read_key_file(p, "identity file")?;
        out.extend(parse_identity_file(&text, &p.display().to_string())?);
    }
    Ok(out)
}

/// `-r` values plus the `-R` file's lines, all checked; post-quantum and X25519 recipients
/// can't be mixed (PROTOCOL.md §7.1).
pub fn load_recipients(given: &[String], file: Option<&Path>) -> Result<Vec<String>, CliError> {
    let mut out = given
        .iter()
        .map(|r| check_recipient(r))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(f) = file {
        let text = read_key_file(f, "recipients file")?;
        out.extend(parse_recipients_file(&text, &f.display().to_string())?);
    }
    let pq = out.iter().filter(|r| r.starts_with("age1pq1")).count();
    if pq > 0 && pq < out.len() {
        return Err(CliError::usage(
            "post-quantum (age1pq1...) and X25519 (age1...) recipients were mixed",
            "encrypt to one kind: the X25519 recipients would give up the post-quantum \
             protection (age refuses this too)",
        ));
    }
    Ok(out)
}

/// The text of a key file as age-keygen writes it.
pub fn key_file_text(secret: &str, public: &str, created: std::time::SystemTime) -> String {
    let created = humantime::format_rfc3339_seconds(created);
    format!("# created: {created}\n# public key: {public}\n{secret}\n")
}

/// `httpipe keygen [--pq] [-o FILE]`: an X25519 key pair, or a hybrid post-quantum one.
pub fn keygen(output: Option<&Path>, pq: bool) -> Result<(), CliError> {
    let generate = if pq {
        httpipe::crypto::generate_hybrid
    } else {
        httpipe::crypto::generate_x25519
    };
    let (secret, public) = generate().map_err(|e| {
        CliError::generic(
            format!("can't make a key: {e}"),
            "the system's random source failed; try again",
        )
    })?;
    let text = key_file_text(&secret, &public, std::time::SystemTime::now());
    match output {
        Some(path) => {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            let mut f = opts.open(path).map_err(|e| {
                let fix = if e.kind() == std::io::ErrorKind::AlreadyExists {
                    "it is never overwritten; choose another name or remove it"
                } else {
                    "check the directory exists and is writable"
                };
                CliError::generic(format!("can't create {}: {e}", path.display()), fix)
            })?;
            f.write_all(text.as_bytes()).map_err(|e| {
                CliError::generic(
                    format!("can't write {}: {e}", path.display()),
                    "check free space",
                )
            })?;
            eprintln!("Public key: {public}");
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .map_err(|e| {
                    CliError::generic(format!("can't write the key: {e}"), "check stdout")
                })?;
            if !std::io::stdout().is_terminal() {
                eprintln!("Public key: {public}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (String, String) {
        let (s, p) = httpipe::crypto::generate_x25519().expect("keygen");
        (s.to_string(), p)
    }

    #[test]
    fn identity_file_like_age() {
        let (s1, p1) = pair();
        let (s2, _) = pair();
        let text = key_file_text(&s1, &p1, std::time::SystemTime::UNIX_EPOCH)
            + "\n# another\n   \n"
            + &s2
            + "\n";
        assert!(text.starts_with("# created: 1970-01-01T00:00:00Z\n# public key: age1"));
        let ids = parse_identity_file(&text, "k.txt").expect("parse");
        assert_eq!(ids, [s1, s2]);
    }

    #[test]
    fn identity_file_errors_name_the_line_not_the_key() {
        let (s1, _) = pair();
        let text = format!("{s1}\nnot-a-key\n");
        let e = parse_identity_file(&text, "k.txt").expect_err("bad line");
        assert!(e.what.contains("k.txt, line 2"), "{}", e.what);
        assert!(!e.to_string().contains(&s1));
        let e = parse_identity_file("# only comments\n", "k.txt").expect_err("empty");
        assert!(e.what.contains("no AGE-SECRET-KEY-1"));
        let e = parse_identity_file("age-encryption.org/v1\n...", "k.age").expect_err("encrypted");
        assert!(e.what.contains("encrypted"));
    }

    #[test]
    fn recipients_file_and_flags() {
        let (_, p1) = pair();
        let (_, p2) = pair();
        let text = format!("# team\n{p1}\n\n{p2}\n");
        assert_eq!(
            parse_recipients_file(&text, "r.txt").expect("parse"),
            [p1.clone(), p2]
        );
        let e = parse_recipients_file("age1nope\n", "r.txt").expect_err("bad");
        assert!(e.what.contains("r.txt, line 1"));
        assert!(load_recipients(&[p1], None).is_ok());
        assert!(load_recipients(&["nope".into()], None).is_err());
    }

    #[test]
    fn post_quantum_keys_in_files_and_flags_but_not_mixed() {
        let (s1, p1) = httpipe::crypto::generate_hybrid().expect("keygen");
        let (s2, p2) = pair();
        let text = key_file_text(&s1, &p1, std::time::SystemTime::UNIX_EPOCH) + &s2 + "\n";
        assert!(text.contains("# public key: age1pq1"));
        let ids = parse_identity_file(&text, "k.txt").expect("parse");
        assert_eq!(ids, [s1.to_string(), s2]);
        let pq2 = httpipe::crypto::generate_hybrid().expect("keygen").1;
        assert_eq!(
            parse_recipients_file(&format!("{p1}\n{pq2}\n"), "r.txt").expect("parse"),
            [p1.clone(), pq2]
        );
        assert!(load_recipients(std::slice::from_ref(&p1), None).is_ok());
        let e = load_recipients(&[p1.clone(), p2.clone()], None).expect_err("mixed");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert!(e.what.contains("mixed"), "{}", e.what);
        // A broken post-quantum line names the line, never the key.
        let e =
            parse_identity_file(&format!("{}\n", &s1[..s1.len() - 1]), "k.txt").expect_err("bad");
        assert!(e.what.contains("k.txt, line 1"), "{}", e.what);
        assert!(!e.to_string().contains(&s1[19..40]));
    }
}
