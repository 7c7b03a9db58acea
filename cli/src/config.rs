//! Settings from three layers, highest first: the command line, the environment
//! (`HTTPIPE_<KEY>`, then `ZEBRASTREAM_<KEY>`), and a YAML config file (`-f PATH` or
//! `-n NAME`), as in `zebrastream` 0.5.4. The file has the same keys as the long options.

use httpipe::protocol::paths::CONNECT_PREFIX;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::exit::CliError;

/// ZebraStream's hosted Connect API: never a default (a user's data goes only to a relay she
/// named), only the example the "no relay" error gives for `-U`.
pub const ZEBRASTREAM_CONNECT_URL: &str = "https://connect.zebrastream.io/v0/";

/// The "no relay" error: how to name one, on every layer.
fn no_relay() -> CliError {
    CliError::usage(
        "no relay given (httpipe has no default relay, so nothing leaves for a service you didn't choose)",
        format!(
            "name one with --relay URL (an httpipe relay, e.g. http://127.0.0.1:8080) or \
             -U/--connect-url URL (a Connect API, e.g. ZebraStream's {ZEBRASTREAM_CONNECT_URL}), \
             or set HTTPIPE_RELAY / HTTPIPE_CONNECT_URL, or `relay:` / `connect_url:` in the config file"
        ),
    )
}

/// A config file's `command`: a shell-like string (ZebraStream) or an argv list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CommandSpec {
    Line(String),
    Argv(Vec<String>),
}

impl CommandSpec {
    pub fn argv(&self, source: &str) -> Result<Vec<String>, CliError> {
        match self {
            CommandSpec::Argv(v) => Ok(v.clone()),
            CommandSpec::Line(s) => shlex::split(s).ok_or_else(|| {
                CliError::usage(
                    format!("{source}: can't split 'command' into words (unbalanced quotes?)"),
                    "fix the quoting, or give the command as a YAML list",
                )
            }),
        }
    }
}

/// Every setting, each optional. One value of this per layer.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    pub mode: Option<String>,
    pub stream_path: Option<String>,
    pub connect_url: Option<String>,
    pub relay: Option<String>,
    pub connect_timeout: Option<u64>,
    pub access_token: Option<String>,
    pub passphrase: Option<String>,
    pub content_type: Option<String>,
    pub auto_flush_delay: Option<u64>,
    pub encryption_mode: Option<String>,
    pub unbuffered_input: Option<bool>,
    pub unbuffered_output: Option<bool>,
    pub command: Option<CommandSpec>,
    pub log_level: Option<String>,
    pub recipients: Option<Vec<String>>,
    pub recipients_file: Option<String>,
    pub identities: Option<Vec<String>>,
    pub serve: Option<bool>,
    /// Seconds to keep trying to resume after a break, or `off` / `false` (§12.3).
    pub resume: Option<ResumeSpec>,
    /// The producer's replay window: bytes, or a size like `64MiB` (§12.3).
    pub resume_window: Option<SizeSpec>,
    /// No delivery receipts (§12).
    pub no_receipt: Option<bool>,
    /// Seconds the producer waits for the receipt (§12.2).
    pub receipt_timeout: Option<u64>,
    /// (consumer) Without keys, write an encrypted stream's ciphertext as it is (§11.3).
    pub ciphertext: Option<bool>,
    /// (producer) Accept a receipt for the ciphertext from a receiver without the key (§12.2).
    pub ciphertext_receipt: Option<bool>,
}

/// The `resume` key: seconds, or off (`off`, `false`, `0`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ResumeSpec {
    Flag(bool),
    Seconds(u64),
    Text(String),
}

/// The `resume_window` key: bytes, or a size with a binary suffix.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SizeSpec {
    Bytes(u64),
    Text(String),
}

/// The default resume time in seconds (the SDK's, PROTOCOL.md §12.3).
pub const DEFAULT_RESUME_S: u64 = httpipe::protocol::hello::RESUME_TIME_S as u64;

/// How long to keep trying to resume (§12.3): `None` when turned off.
pub fn resume_time(keys: &Keys) -> Result<Option<Duration>, CliError> {
    let bad = |v: &str| {
        CliError::usage(
            format!("invalid resume time {v:?}"),
            "give --resume a number of seconds (e.g. 300), or off",
        )
    };
    let seconds = match &keys.resume {
        None | Some(ResumeSpec::Flag(true)) => DEFAULT_RESUME_S,
        Some(ResumeSpec::Flag(false)) => 0,
        Some(ResumeSpec::Seconds(n)) => *n,
        Some(ResumeSpec::Text(t)) => match parse_bool(t) {
            Some(true) if t.trim() != "1" => DEFAULT_RESUME_S,
            Some(false) => 0,
            _ => t.trim().parse::<u64>().map_err(|_| bad(t))?,
        },
    };
    let seconds = at_most_max_wait("--resume", seconds)?;
    Ok((seconds > 0).then(|| Duration::from_secs(seconds)))
}

/// `seconds` if the core takes it (at most [`httpipe::client::MAX_WAIT_S`], 23 days), else a
/// usage error naming `flag` (the core would refuse it only later, as UNSUPPORTED).
fn at_most_max_wait(flag: &str, seconds: u64) -> Result<u64, CliError> {
    let max = httpipe::client::MAX_WAIT_S as u64;
    if seconds > max {
        return Err(CliError::usage(
            format!("{flag} {seconds} is more than the {max} seconds (23 days) a wait can last"),
            format!("give {flag} at most {max}"),
        ));
    }
    Ok(seconds)
}

/// How long the producer waits for the receipt (§12.2), when given: at least a second.
pub fn receipt_timeout(keys: &Keys) -> Result<Option<Duration>, CliError> {
    match keys.receipt_timeout {
        Some(0) => Err(CliError::usage(
            "--receipt-timeout 0 would never wait for the receipt",
            "give a number of seconds (default 120), or turn receipts off with --no-receipt",
        )),
        Some(t) => Ok(Some(Duration::from_secs(at_most_max_wait(
            "--receipt-timeout",
            t,
        )?))),
        None => Ok(None),
    }
}

/// A size in bytes: `1048576`, `64MiB`, `512KiB`, `1GiB` (also `K`, `M`, `G`: binary).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits].parse().ok()?;
    let unit = match t[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(unit)
}

/// The producer's replay window in bytes (§12.3), when given.
pub fn resume_window(keys: &Keys) -> Result<Option<usize>, CliError> {
    let max = httpipe::client::MAX_WINDOW as u64;
    let n = match &keys.resume_window {
        None => return Ok(None),
        Some(SizeSpec::Bytes(n)) => Some(*n),
        Some(SizeSpec::Text(t)) => parse_size(t),
    };
    match n {
        Some(n) if n <= max => Ok(Some(n as usize)),
        _ => Err(CliError::usage(
            "invalid replay window size",
            "give --resume-window a size of at most 1GiB, e.g. 64MiB or 134217728",
        )),
    }
}

/// The keys a config file may have (the fields of [`Keys`]).
pub const KNOWN_KEYS: &[&str] = &[
    "mode",
    "stream_path",
    "connect_url",
    "relay",
    "connect_timeout",
    "access_token",
    "passphrase",
    "content_type",
    "auto_flush_delay",
    "encryption_mode",
    "unbuffered_input",
    "unbuffered_output",
    "command",
    "log_level",
    "recipients",
    "recipients_file",
    "identities",
    "serve",
    "resume",
    "resume_window",
    "no_receipt",
    "receipt_timeout",
    "ciphertext",
    "ciphertext_receipt",
];

impl Keys {
    /// Field by field: `self` where set, else `lower`.
    pub fn or(self, lower: Keys) -> Keys {
        Keys {
            mode: self.mode.or(lower.mode),
            stream_path: self.stream_path.or(lower.stream_path),
            connect_url: self.connect_url.or(lower.connect_url),
            relay: self.relay.or(lower.relay),
            connect_timeout: self.connect_timeout.or(lower.connect_timeout),
            access_token: self.access_token.or(lower.access_token),
            passphrase: self.passphrase.or(lower.passphrase),
            content_type: self.content_type.or(lower.content_type),
            auto_flush_delay: self.auto_flush_delay.or(lower.auto_flush_delay),
            encryption_mode: self.encryption_mode.or(lower.encryption_mode),
            unbuffered_input: self.unbuffered_input.or(lower.unbuffered_input),
            unbuffered_output: self.unbuffered_output.or(lower.unbuffered_output),
            command: self.command.or(lower.command),
            log_level: self.log_level.or(lower.log_level),
            recipients: self.recipients.or(lower.recipients),
            recipients_file: self.recipients_file.or(lower.recipients_file),
            identities: self.identities.or(lower.identities),
            serve: self.serve.or(lower.serve),
            resume: self.resume.or(lower.resume),
            resume_window: self.resume_window.or(lower.resume_window),
            no_receipt: self.no_receipt.or(lower.no_receipt),
            receipt_timeout: self.receipt_timeout.or(lower.receipt_timeout),
            ciphertext: self.ciphertext.or(lower.ciphertext),
            ciphertext_receipt: self.ciphertext_receipt.or(lower.ciphertext_receipt),
        }
    }
}

/// Parses a config file's text. `source` names the file in errors.
pub fn parse_config(text: &str, source: &str) -> Result<Keys, CliError> {
    let value: serde_norway::Value = serde_norway::from_str(text).map_err(|e| {
        CliError::usage(
            format!("config file {source} is not valid YAML: {e}"),
            "fix the YAML syntax",
        )
    })?;
    let map = match value {
        serde_norway::Value::Null => return Ok(Keys::default()),
        serde_norway::Value::Mapping(m) => m,
        _ => {
            return Err(CliError::usage(
                format!("config file {source} is not a mapping of keys to values"),
                "write one `key: value` per line, e.g. `mode: write`",
            ))
        }
    };
    for key in map.keys() {
        let name = match key {
            serde_norway::Value::String(s) => s.clone(),
            other => format!("{other:?}"),
        };
        if !KNOWN_KEYS.contains(&name.as_str()) {
            return Err(CliError::usage(
                format!("config file {source}: unknown key '{name}'"),
                format!("remove it or use one of: {}", KNOWN_KEYS.join(", ")),
            ));
        }
    }
    serde_norway::from_value(serde_norway::Value::Mapping(map)).map_err(|e| {
        CliError::usage(
            format!("config file {source}: {e}"),
            "fix the value (numbers are seconds, flags are true/false)",
        )
    })
}

/// `mode` must be present in a config file and equal the subcommand's mode.
pub fn check_mode(file: &Keys, expected: &str, source: &str) -> Result<(), CliError> {
    match file.mode.as_deref() {
        None => Err(CliError::usage(
            format!("config ({source}) is missing the required 'mode' key"),
            format!("add 'mode: {expected}' to it"),
        )),
        Some(m) if m == expected => Ok(()),
        Some(m) => Err(CliError::usage(
            format!("subcommand '{expected}' conflicts with config mode '{m}' ({source})"),
            format!("use 'httpipe {m}', or a config with 'mode: {expected}'"),
        )),
    }
}

/// Reads `HTTPIPE_<KEY>`, else `ZEBRASTREAM_<KEY>`, for every key but `mode`.
/// Empty values count as unset.
pub fn keys_from_env(get: &dyn Fn(&str) -> Option<String>) -> Result<Keys, CliError> {
    reject_empty_env_passphrase(get)?;
    let env = EnvKeys { get };
    Ok(Keys {
        mode: None,
        stream_path: env.string("stream_path"),
        connect_url: env.string("connect_url"),
        relay: env.string("relay"),
        connect_timeout: env.number("connect_timeout")?,
        access_token: env.string("access_token"),
        passphrase: env.string("passphrase"),
        content_type: env.string("content_type"),
        auto_flush_delay: env.number("auto_flush_delay")?,
        encryption_mode: env.string("encryption_mode"),
        unbuffered_input: env.flag("unbuffered_input")?,
        unbuffered_output: env.flag("unbuffered_output")?,
        command: env.string("command").map(CommandSpec::Line),
        log_level: env.string("log_level"),
        recipients: env.list("recipients"),
        recipients_file: env.string("recipients_file"),
        identities: env.paths("identities"),
        serve: env.flag("serve")?,
        resume: env.string("resume").map(ResumeSpec::Text),
        resume_window: env.string("resume_window").map(SizeSpec::Text),
        no_receipt: env.flag("no_receipt")?,
        receipt_timeout: env.number("receipt_timeout")?,
        ciphertext: env.flag("ciphertext")?,
        ciphertext_receipt: env.flag("ciphertext_receipt")?,
    })
}

/// A set but empty passphrase variable is an error, not an unset one.
fn reject_empty_env_passphrase(get: &dyn Fn(&str) -> Option<String>) -> Result<(), CliError> {
    // Empty means unset for every key but the passphrase: an empty one set by mistake
    // (`HTTPIPE_PASSPHRASE="$UNSET_VAR"`) would silently send unencrypted (PROTOCOL.md §11.3).
    for var in ["HTTPIPE_PASSPHRASE", "ZEBRASTREAM_PASSPHRASE"] {
        if get(var).is_some_and(|v| v.is_empty()) {
            return Err(CliError::usage(
                format!("{var} is set but empty"),
                format!("set {var} to the passphrase, or unset it for an unencrypted transfer"),
            ));
        }
    }
    Ok(())
}

/// The settings in the environment, key by key, for [`keys_from_env`]: `HTTPIPE_<KEY>`,
/// else `ZEBRASTREAM_<KEY>`; empty values count as unset.
struct EnvKeys<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl EnvKeys<'_> {
    /// The variable that sets `key`, and its value.
    fn lookup(&self, key: &str) -> Option<(String, String)> {
        let upper = key.to_ascii_uppercase();
        ["HTTPIPE_", "ZEBRASTREAM_"].iter().find_map(|prefix| {
            let var = format!("{prefix}{upper}");
            (self.get)(&var).filter(|v| !v.is_empty()).map(|v| (var, v))
        })
    }

    fn string(&self, key: &str) -> Option<String> {
        self.lookup(key).map(|(_, v)| v)
    }

    /// Whole seconds.
    fn number(&self, key: &str) -> Result<Option<u64>, CliError> {
        match self.lookup(key) {
            None => Ok(None),
            Some((var, v)) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                CliError::usage(
                    format!("{var}={v:?} is not a whole number of seconds"),
                    format!("set {var} to e.g. 30, or unset it"),
                )
            }),
        }
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, CliError> {
        match self.lookup(key) {
            None => Ok(None),
            Some((var, v)) => parse_bool(&v).map(Some).ok_or_else(|| {
                CliError::usage(
                    format!("{var}={v:?} is not true or false"),
                    format!("set {var} to true or false"),
                )
            }),
        }
    }

    /// Separated by commas or whitespace.
    fn list(&self, key: &str) -> Option<Vec<String>> {
        self.string(key).map(|v| {
            v.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
    }

    /// Separated as in `PATH`.
    fn paths(&self, key: &str) -> Option<Vec<String>> {
        self.lookup(key).map(|(_, v)| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Warnings for secrets given on the command line (visible in `ps`, shell history).
pub fn secret_warnings(cli: &Keys) -> Vec<String> {
    let mut out = Vec::new();
    if cli.access_token.is_some() {
        out.push(
            "httpipe: warning: --access-token on the command line is visible to other users \
             (ps, shell history); use HTTPIPE_ACCESS_TOKEN or access_token in a config file"
                .to_string(),
        );
    }
    if cli.passphrase.is_some() {
        out.push(
            "httpipe: warning: --passphrase on the command line is visible to other users \
             (ps, shell history); use HTTPIPE_PASSPHRASE or passphrase in a config file"
                .to_string(),
        );
    }
    out
}

/// Where `-n NAME` looks: `$HTTPIPE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/httpipe`, else
/// `~/.config/httpipe`; then zebrastream's (`$ZEBRASTREAMDIR`, `~/.config/zebrastream`,
/// `$XDG_CONFIG_HOME/zebrastream`). Each + `streams/NAME.yaml`. First one that exists wins.
pub fn named_config_candidates(name: &str, get: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let home = get("HOME").map(PathBuf::from);
    let xdg = get("XDG_CONFIG_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = get("HTTPIPE_CONFIG_DIR").filter(|s| !s.is_empty()) {
        dirs.push(PathBuf::from(d));
    } else if let Some(x) = &xdg {
        dirs.push(x.join("httpipe"));
    } else if let Some(h) = &home {
        dirs.push(h.join(".config").join("httpipe"));
    }
    if let Some(d) = get("ZEBRASTREAMDIR").filter(|s| !s.is_empty()) {
        dirs.push(PathBuf::from(d));
    } else {
        if let Some(h) = &home {
            dirs.push(h.join(".config").join("zebrastream"));
        }
        if let Some(x) = &xdg {
            dirs.push(x.join("zebrastream"));
        }
    }
    let file = format!("{name}.yaml");
    dirs.into_iter()
        .map(|d| d.join("streams").join(&file))
        .collect()
}

/// The config file in use, if any: its keys and how to name it in messages.
pub struct FileLayer {
    pub keys: Keys,
    pub source: String,
}

/// Loads `-f PATH` (wins) or `-n NAME`; `None` when neither is given.
pub fn load_file_layer(
    config_file: Option<&Path>,
    config_name: Option<&str>,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<FileLayer>, CliError> {
    let (path, source) = if let Some(p) = config_file {
        if !p.exists() {
            // A usage error (2), like a missing `-n` config; zebrastream exits 1 here.
            return Err(CliError::usage(
                format!("config file not found: {}", p.display()),
                "check the path given to -f/--config-file",
            ));
        }
        (p.to_path_buf(), format!("--config-file {}", p.display()))
    } else if let Some(name) = config_name {
        let candidates = named_config_candidates(name, get);
        match candidates.iter().find(|p| p.exists()) {
            Some(p) => (p.clone(), format!("--config-name {name}")),
            None => {
                let expected = candidates
                    .first()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("~/.config/httpipe/streams/{name}.yaml"));
                return Err(CliError::usage(
                    format!("config '{name}' not found"),
                    format!("create {expected} (with 'mode: read' or 'mode: write')"),
                ));
            }
        }
    } else {
        return Ok(None);
    };
    // a config file that can't be read is a usage error (exit 2), as a missing one is
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let fix = match e.kind() {
            std::io::ErrorKind::InvalidData => "a config file is YAML text in UTF-8",
            _ => "check that it exists and is readable",
        };
        CliError::usage(
            format!("can't read config file {}: {e}", path.display()),
            fix,
        )
    })?;
    let keys = parse_config(&text, &path.display().to_string())?;
    Ok(Some(FileLayer { keys, source }))
}

/// All layers merged (CLI > env > file), after the file's `mode` was checked.
pub struct Resolved {
    pub keys: Keys,
    pub warnings: Vec<String>,
}

pub fn resolve(
    cli: Keys,
    env: Keys,
    file: Option<FileLayer>,
    mode: &str,
) -> Result<Resolved, CliError> {
    let warnings = secret_warnings(&cli);
    let file_keys = match file {
        Some(f) => {
            check_mode(&f.keys, mode, &f.source)?;
            f.keys
        }
        None => Keys::default(),
    };
    let keys = cli.or(env).or(file_keys);
    // PROTOCOL.md §11.3 step 6 (the SDK refuses it too, as UNSUPPORTED): a usage error here
    if keys.passphrase.as_deref() == Some("") {
        return Err(CliError::usage(
            "the passphrase is empty (-p or the config file's passphrase)",
            "give a passphrase, or none for an unencrypted transfer",
        ));
    }
    Ok(Resolved { keys, warnings })
}

/// How to reach a stream: where the Connect API is, and (for an httpipe relay) the data
/// base URL, which the Connect API's answer also gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Connect API base, e.g. `http://127.0.0.1:8080/connect/v0/`.
    pub connect_base: String,
    /// Relay base URL for the Data API, e.g. `http://127.0.0.1:8080`, when known.
    pub relay: Option<String>,
}

impl Endpoint {
    /// `-U` and `--relay` (either may come from env or file). `-U` names the Connect API;
    /// `--relay URL` stands for Connect `URL/connect/v0/` and data `URL/PATH`. Neither is a
    /// usage error: there is no default relay.
    pub fn resolve(relay: Option<&str>, connect_url: Option<&str>) -> Result<Endpoint, CliError> {
        for (what, v) in [("--relay", relay), ("-U/--connect-url", connect_url)] {
            if let Some(u) = v {
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(CliError::usage(
                        format!("{what} {u:?} is not an http:// or https:// URL"),
                        "give a full URL, e.g. https://relay.example",
                    ));
                }
            }
        }
        let relay = relay.map(|r| r.trim_end_matches('/').to_string());
        match (connect_url, relay) {
            (Some(c), relay) => {
                let derived = c
                    .trim_end_matches('/')
                    .strip_suffix(CONNECT_PREFIX.trim_end_matches('/'))
                    .map(str::to_string);
                Ok(Endpoint {
                    connect_base: c.to_string(),
                    relay: relay.or(derived),
                })
            }
            (None, Some(r)) => Ok(Endpoint {
                connect_base: format!("{r}{CONNECT_PREFIX}"),
                relay: Some(r),
            }),
            (None, None) => Err(no_relay()),
        }
    }

    /// ZebraStream's rule: `connect_url.rstrip("/") + stream_path`.
    pub fn connect_url_for(&self, path: &str) -> String {
        format!("{}{}", self.connect_base.trim_end_matches('/'), path)
    }
}

/// Checks a stream path: starts with `/`, at most 1024 bytes (PROTOCOL.md §2).
pub fn check_stream_path(path: Option<String>) -> Result<String, CliError> {
    let Some(p) = path else {
        return Err(CliError::usage(
            "no stream path",
            "give -s/--stream-path /some/path, HTTPIPE_STREAM_PATH, or stream_path in the config file",
        ));
    };
    // the rule for a path as sent (PROTOCOL.md §11.6) is the core's; here a usage error
    if let Err(e) = httpipe::client::stream_path(&p) {
        let what = e.message.replacen("`path`", "the stream path", 1);
        return Err(CliError::usage(
            what,
            "give -s a path such as /team/reports",
        ));
    }
    if p.chars().any(char::is_whitespace) {
        return Err(CliError::usage(
            format!("stream path {p:?} has spaces"),
            "use a path without spaces, such as /team/reports",
        ));
    }
    if !p.starts_with('/') {
        return Err(CliError::usage(
            format!("stream path {p:?} doesn't start with /"),
            format!("use -s /{p}"),
        ));
    }
    Ok(p)
}

pub fn timeout(keys: &Keys) -> Option<Duration> {
    keys.connect_timeout.map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| m.get(k).cloned()
    }

    #[test]
    fn resume_and_receipt_keys() {
        let k = |resume: Option<ResumeSpec>| Keys {
            resume,
            ..Keys::default()
        };
        let secs = |s: u64| Ok(Some(Duration::from_secs(s)));
        assert_eq!(resume_time(&k(None)), secs(DEFAULT_RESUME_S));
        assert_eq!(resume_time(&k(Some(ResumeSpec::Seconds(300)))), secs(300));
        assert_eq!(resume_time(&k(Some(ResumeSpec::Text("1".into())))), secs(1));
        assert_eq!(
            resume_time(&k(Some(ResumeSpec::Text("true".into())))),
            secs(DEFAULT_RESUME_S)
        );
        for off in [
            ResumeSpec::Flag(false),
            ResumeSpec::Seconds(0),
            ResumeSpec::Text("off".into()),
            ResumeSpec::Text("0".into()),
        ] {
            assert_eq!(resume_time(&k(Some(off.clone()))), Ok(None), "{off:?}");
        }
        let e = resume_time(&k(Some(ResumeSpec::Text("soon".into())))).expect_err("bad");
        assert_eq!(e.exit, crate::exit::Exit::Usage);

        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("512 KiB"), Some(512 << 10));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("12 parsecs"), None);
        assert_eq!(parse_size(""), None);
        let w = |t: &str| {
            resume_window(&Keys {
                resume_window: Some(SizeSpec::Text(t.into())),
                ..Keys::default()
            })
        };
        assert_eq!(w("0"), Ok(Some(0)));
        assert_eq!(w("1GiB"), Ok(Some(1 << 30)));
        assert!(w("2GiB").is_err() && w("lots").is_err());
        assert_eq!(resume_window(&Keys::default()), Ok(None));
        let t = |n| {
            receipt_timeout(&Keys {
                receipt_timeout: Some(n),
                ..Keys::default()
            })
        };
        assert_eq!(t(30), Ok(Some(Duration::from_secs(30))));
        assert_eq!(t(0).expect_err("0").exit, crate::exit::Exit::Usage);

        // From a config file and the environment.
        let f = parse_config(
            "mode: write\nresume: off\nresume_window: 128MiB\nno_receipt: true\nreceipt_timeout: 30\n",
            "t",
        )
        .expect("parse");
        assert_eq!(resume_time(&f), Ok(None));
        assert_eq!(resume_window(&f), Ok(Some(128 << 20)));
        assert_eq!((f.no_receipt, f.receipt_timeout), (Some(true), Some(30)));
        let f = parse_config("mode: read\nresume: 90\n", "t").expect("parse");
        assert_eq!(resume_time(&f), secs(90));
        let e = keys_from_env(&env(&[
            ("HTTPIPE_RESUME", "120"),
            ("HTTPIPE_NO_RECEIPT", "1"),
        ]))
        .expect("env");
        assert_eq!(resume_time(&e), secs(120));
        assert_eq!(e.no_receipt, Some(true));
    }

    #[test]
    fn precedence_cli_over_env_over_file() {
        let file = parse_config(
            "mode: write\nstream_path: /file\nconnect_timeout: 30\naccess_token: file-token\ncontent_type: text/plain\n",
            "f.yaml",
        )
        .expect("parse");
        let env_keys = keys_from_env(&env(&[
            ("HTTPIPE_STREAM_PATH", "/env"),
            ("ZEBRASTREAM_CONNECT_TIMEOUT", "10"),
        ]))
        .expect("env");
        let cli = Keys {
            stream_path: Some("/cli".into()),
            ..Keys::default()
        };
        let r = resolve(
            cli,
            env_keys,
            Some(FileLayer {
                keys: file,
                source: "--config-file f.yaml".into(),
            }),
            "write",
        )
        .expect("resolve");
        assert_eq!(r.keys.stream_path.as_deref(), Some("/cli"));
        assert_eq!(r.keys.connect_timeout, Some(10));
        assert_eq!(r.keys.access_token.as_deref(), Some("file-token"));
        assert_eq!(r.keys.content_type.as_deref(), Some("text/plain"));
        assert!(r.warnings.is_empty());
    }

    /// Regression (#26): `HTTPIPE_PASSPHRASE=` meant "no passphrase" (a plain transfer).
    #[test]
    fn an_empty_passphrase_variable_is_a_usage_error() {
        for var in ["HTTPIPE_PASSPHRASE", "ZEBRASTREAM_PASSPHRASE"] {
            let Err(e) = keys_from_env(&env(&[(var, "")])) else {
                panic!("{var}= was accepted");
            };
            assert!(e.to_string().contains("set but empty"), "{e}");
        }
    }

    #[test]
    fn httpipe_env_wins_over_zebrastream_env_and_empty_is_unset() {
        let k = keys_from_env(&env(&[
            ("HTTPIPE_ACCESS_TOKEN", "h"),
            ("ZEBRASTREAM_ACCESS_TOKEN", "z"),
            ("HTTPIPE_CONTENT_TYPE", ""),
            ("ZEBRASTREAM_CONTENT_TYPE", "text/csv"),
            ("ZEBRASTREAM_PASSPHRASE", "zp"),
            ("ZEBRASTREAM_UNBUFFERED_INPUT", "true"),
            ("HTTPIPE_RECIPIENTS", "age1a, age1b"),
        ]))
        .expect("env");
        assert_eq!(k.access_token.as_deref(), Some("h"));
        assert_eq!(k.passphrase.as_deref(), Some("zp"));
        assert_eq!(k.content_type.as_deref(), Some("text/csv"));
        assert_eq!(k.unbuffered_input, Some(true));
        assert_eq!(
            k.recipients,
            Some(vec!["age1a".to_string(), "age1b".to_string()])
        );
        assert_eq!(k.mode, None);
    }

    #[test]
    fn bad_env_numbers_name_the_variable() {
        let e = keys_from_env(&env(&[("HTTPIPE_CONNECT_TIMEOUT", "soon")])).expect_err("bad");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert!(e.what.contains("HTTPIPE_CONNECT_TIMEOUT"), "{}", e.what);
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let e = parse_config("mode: read\nstreampath: /x\n", "/etc/h.yaml").expect_err("unknown");
        assert!(
            e.what.contains("'streampath'") && e.what.contains("/etc/h.yaml"),
            "{}",
            e.what
        );
        assert_eq!(e.exit, crate::exit::Exit::Usage);
    }

    #[test]
    fn wrong_types_and_bad_yaml_are_errors() {
        let e = parse_config("mode: read\nconnect_timeout: soon\n", "c.yaml").expect_err("type");
        assert!(e.what.contains("c.yaml"), "{}", e.what);
        let e = parse_config("mode: [read\n", "c.yaml").expect_err("yaml");
        assert!(e.what.contains("not valid YAML"), "{}", e.what);
        let e = parse_config("- a\n- b\n", "c.yaml").expect_err("list");
        assert!(e.what.contains("not a mapping"), "{}", e.what);
        assert_eq!(parse_config("", "c.yaml").expect("empty"), Keys::default());
    }

    #[test]
    fn mode_missing_or_mismatched() {
        let none = parse_config("stream_path: /x\n", "c.yaml").expect("parse");
        let e = check_mode(&none, "read", "--config-file c.yaml").expect_err("missing");
        assert!(e.what.contains("missing the required 'mode'"));
        assert!(e.fix.contains("mode: read"));
        let w = parse_config("mode: write\n", "c.yaml").expect("parse");
        let e = check_mode(&w, "read", "--config-file c.yaml").expect_err("mismatch");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert!(e.what.contains("conflicts with config mode 'write'"));
        assert!(check_mode(&w, "write", "x").is_ok());
        // resolve() checks the mode only when a file is in use.
        assert!(resolve(Keys::default(), Keys::default(), None, "read").is_ok());
    }

    #[test]
    fn command_as_string_or_list() {
        let k =
            parse_config("mode: write\ncommand: \"sh -c 'cat a | gzip'\"\n", "c").expect("parse");
        let argv = k.command.expect("command").argv("c").expect("split");
        assert_eq!(argv, ["sh", "-c", "cat a | gzip"]);
        let k = parse_config("mode: write\ncommand: [tail, -f, log]\n", "c").expect("parse");
        assert_eq!(
            k.command.expect("command").argv("c").expect("argv"),
            ["tail", "-f", "log"]
        );
        let e = CommandSpec::Line("sh -c 'oops".into())
            .argv("c")
            .expect_err("quotes");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
    }

    #[test]
    fn secrets_on_the_command_line_warn() {
        let cli = Keys {
            access_token: Some("t".into()),
            passphrase: Some("p".into()),
            ..Keys::default()
        };
        let w = secret_warnings(&cli);
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("HTTPIPE_ACCESS_TOKEN"));
        assert!(w[1].contains("HTTPIPE_PASSPHRASE"));
        // From env or file: no warning.
        let env_keys = keys_from_env(&env(&[("HTTPIPE_PASSPHRASE", "p")])).expect("env");
        let r = resolve(Keys::default(), env_keys, None, "read").expect("resolve");
        assert!(r.warnings.is_empty());
        assert_eq!(r.keys.passphrase.as_deref(), Some("p"));
    }

    #[test]
    fn named_config_lookup_order() {
        let c = named_config_candidates("feed", &env(&[("HOME", "/home/u")]));
        assert_eq!(
            c[0],
            PathBuf::from("/home/u/.config/httpipe/streams/feed.yaml")
        );
        assert_eq!(
            c[1],
            PathBuf::from("/home/u/.config/zebrastream/streams/feed.yaml")
        );
        let c = named_config_candidates("feed", &env(&[("HOME", "/h"), ("ZEBRASTREAMDIR", "/z")]));
        assert_eq!(c[1], PathBuf::from("/z/streams/feed.yaml"));
    }

    #[test]
    fn file_layer_loading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let streams = dir.path().join("httpipe").join("streams");
        std::fs::create_dir_all(&streams).expect("mkdir");
        std::fs::write(
            streams.join("feed.yaml"),
            "mode: read\nstream_path: /feed\n",
        )
        .expect("write");
        let xdg = dir.path().to_string_lossy().into_owned();
        let get = env(&[("XDG_CONFIG_HOME", xdg.as_str())]);
        let layer = load_file_layer(None, Some("feed"), &get)
            .expect("load")
            .expect("some");
        assert_eq!(layer.keys.stream_path.as_deref(), Some("/feed"));
        assert_eq!(layer.source, "--config-name feed");
        let e = load_file_layer(None, Some("nope"), &get)
            .err()
            .expect("missing");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        let e = load_file_layer(Some(Path::new("/no/such.yaml")), None, &get)
            .err()
            .expect("missing");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert!(load_file_layer(None, None, &get).expect("none").is_none());
    }

    #[test]
    fn endpoints() {
        let e = Endpoint::resolve(Some("http://127.0.0.1:8080/"), None).expect("relay");
        assert_eq!(e.connect_base, "http://127.0.0.1:8080/connect/v0/");
        assert_eq!(e.relay.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(
            e.connect_url_for("/a/b"),
            "http://127.0.0.1:8080/connect/v0/a/b"
        );
        let e = Endpoint::resolve(None, Some("http://h:1/connect/v0/")).expect("-U");
        assert_eq!(e.relay.as_deref(), Some("http://h:1"));
        assert_eq!(e.connect_url_for("/x"), "http://h:1/connect/v0/x");
        // No default relay: a usage error that says how to name one on every layer.
        let e = Endpoint::resolve(None, None).expect_err("no relay");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        for how in ["--relay", "-U/--connect-url", "HTTPIPE_RELAY", "`relay:`"] {
            assert!(e.fix.contains(how), "{how}: {e}");
        }
        let e = Endpoint::resolve(None, Some(ZEBRASTREAM_CONNECT_URL)).expect("zebrastream");
        assert_eq!(
            e.connect_url_for("/x"),
            "https://connect.zebrastream.io/v0/x"
        );
        assert_eq!(e.relay, None);
        assert!(Endpoint::resolve(Some("relay.example"), None).is_err());
    }

    #[test]
    fn stream_paths() {
        assert_eq!(check_stream_path(Some("/a".into())).expect("ok"), "/a");
        assert!(check_stream_path(Some("a".into())).is_err());
        assert!(check_stream_path(None).is_err());
        assert!(check_stream_path(Some("/a?b".into())).is_err());
        // a wait longer than the core takes: a usage error now, not UNSUPPORTED later
        let e = at_most_max_wait("--resume", 99_999_999_999).expect_err("too long");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert_eq!(at_most_max_wait("--resume", 300), Ok(300));
        // the core's rule (PROTOCOL.md §11.6), a usage error; no suggestion that fails again
        for bad in ["/", "/a/../x", "../x", "/a b", "a b"] {
            let e = check_stream_path(Some(bad.into())).expect_err(bad);
            assert_eq!(e.exit, crate::exit::Exit::Usage, "{bad}");
            assert!(!e.fix.starts_with("use -s"), "{bad}: {}", e.fix);
        }
    }
}
