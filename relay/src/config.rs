//! Configuration: [`Config`], a plain struct with defaults in code (what the library and the
//! tests use), and [`Cli`]/[`ServeArgs`], the command line and `HTTPIPE_...` environment that
//! the binary turns into a `Config` (so tests never pick up `HTTPIPE_*` from their environment).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::crowd::{
    CrowdLimits, DEFAULT_CODE_LOOKUPS_PER_MINUTE, DEFAULT_IPV6_PREFIX_LEN,
    DEFAULT_MAX_CODE_REQUESTS, DEFAULT_MAX_WAITING,
};

/// Relay settings. `Config::default()` is what the binary runs with when given no flags.
#[derive(Clone)]
pub struct Config {
    /// Address to bind both ports to.
    pub host: String,
    /// Plain port: HTTP/1.1 and h2c (0 = pick a free port).
    pub http_port: u16,
    /// TLS port: h2 and http/1.1 by ALPN (0 = pick a free port).
    pub https_port: u16,
    /// Don't open the TLS port.
    pub no_tls: bool,
    /// TLS certificate chain and private key (PEM). `None`: a self-signed localhost certificate.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Auth keys (§6): the first signs, all verify. Empty: open mode.
    pub auth_keys: Vec<Vec<u8>>,
    /// The file `auth_keys` were read from, as given (`--auth-key-file`): /help's token recipe
    /// names it. `None` when the keys came from `--auth-key` / `HTTPIPE_AUTH_KEY` (or the library).
    pub auth_key_file: Option<PathBuf>,
    /// Public base URL for Connect API answers and /help (default: from Host and scheme).
    pub public_url: Option<String>,
    /// Honour X-Forwarded-Proto / X-Forwarded-Host / X-Forwarded-For (only behind a trusted
    /// proxy).
    pub trust_proxy: bool,
    /// Per-address limits (§9 "Per-address limits", §14.5).
    pub crowd: CrowdLimits,
    /// Directory served at / and /assets/ (the demo). `None`: looked for at start-up
    /// ([`crate::static_files::find_demo`]).
    pub www: Option<PathBuf>,
    /// Directory served at /assets/pkg/ (the built npm package of the SDK); `None` as `www`.
    pub sdk_dir: Option<PathBuf>,
    /// Largest segmented-upload part in bytes (larger → 413).
    pub max_part_bytes: usize,
    /// Segmented upload: time without a next part before the consumer is truncated.
    pub upload_gap_timeout: Duration,
    /// On SIGTERM/SIGINT: how long running transfers may continue before they are aborted.
    pub shutdown_grace: Duration,
    /// HTTP/2 per-stream and per-connection flow-control windows in bytes (§3.8).
    pub h2_stream_window: u32,
    pub h2_connection_window: u32,
    /// Connection limits (§9): from accept (TLS handshake included) to a complete first
    /// request head, and on HTTP/1.1 from the end of a request to the next complete head.
    pub header_timeout: Duration,
    /// Connection limits (§9): a connection with no request in progress is closed after this.
    pub idle_timeout: Duration,
    /// Connection limits (§9): largest request head (request line and headers) in bytes;
    /// larger → 431. At least 8192 (HTTP/1.1 buffers can't be smaller).
    pub max_header_bytes: usize,
    /// Join the relay cluster coordinated by this Redis (`redis://HOST:PORT[/DB]`, §13).
    pub cluster: Option<String>,
    /// How the other nodes (and Connect clients) reach this node: `http://HOST:PORT`; default
    /// the node's own `--host` and plain port (§13).
    pub node_url: Option<String>,
}

/// Defaults of the connection limits (§9).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;

impl Default for Config {
    fn default() -> Self {
        Config {
            host: "127.0.0.1".into(),
            http_port: 8080,
            https_port: 8443,
            no_tls: false,
            tls_cert: None,
            tls_key: None,
            auth_keys: Vec::new(),
            auth_key_file: None,
            public_url: None,
            trust_proxy: false,
            crowd: CrowdLimits::default(),
            www: None,
            sdk_dir: None,
            max_part_bytes: httpipe::protocol::upload::DEFAULT_MAX_PART_BYTES,
            upload_gap_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(30),
            h2_stream_window: 4 * 1024 * 1024,
            h2_connection_window: 16 * 1024 * 1024,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            cluster: None,
            node_url: None,
        }
    }
}

/// `httpipe-relay [serve flags]` or `httpipe-relay token ...`.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "httpipe-relay",
    version,
    about = "The httpipe relay: HTTP byte pipes (Piping Server compatible Data API, ZebraStream \
             compatible Connect API, access tokens, HTTP/1.1 + HTTP/2).",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Mint an access token offline with the first auth key (PROTOCOL.md §6) and print it.
    Token(TokenArgs),
}

/// `httpipe-relay token --path /p --mode read|write [--recursive] --ttl 1h`, or
/// `httpipe-relay token --mode code --ttl 1h`.
#[derive(clap::Args, Debug, Clone)]
pub struct TokenArgs {
    /// Stream path (or subtree root with --recursive), e.g. /team/reports. Not needed for
    /// --mode code (its path is the code namespace, /code/v1).
    #[arg(long)]
    pub path: Option<String>,
    /// read (GET, await-writer), write (POST/PUT, await-reader), or code (both, for short
    /// codes only: the exchange and its transfer under /code/v1, nothing else; PROTOCOL.md §6).
    #[arg(long, value_parser = ["read", "write", "code"])]
    pub mode: String,
    /// Cover every path below --path (whole segments: /a covers /a/b, not /ab).
    #[arg(long)]
    pub recursive: bool,
    /// Lifetime, e.g. 90s, 15m, 1h, 7d.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    pub ttl: Duration,
    #[command(flatten)]
    pub keys: KeyArgs,
}

/// Where the auth keys come from (§6). Either one enables auth mode.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KeyArgs {
    /// File with one secret key per line; the first signs, all verify. Enables auth mode.
    #[arg(long, env = "HTTPIPE_AUTH_KEY_FILE")]
    pub auth_key_file: Option<PathBuf>,
    /// A secret key given directly (several separated by commas). Enables auth mode.
    #[arg(long, env = "HTTPIPE_AUTH_KEY", hide_env_values = true)]
    pub auth_key: Option<String>,
}

impl KeyArgs {
    /// The configured keys (empty: open mode). The error names the key file.
    pub fn load(&self) -> std::io::Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        if let Some(k) = &self.auth_key {
            keys.extend(
                k.split(',')
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(|k| k.as_bytes().to_vec()),
            );
        }
        if let Some(f) = &self.auth_key_file {
            let text = std::fs::read_to_string(f).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("reading the key file {}: {e}", f.display()),
                )
            })?;
            keys.extend(crate::auth::parse_keys(&text));
        }
        Ok(keys)
    }
}

/// The relay's flags (each also from its `HTTPIPE_...` environment variable); see [`Config`].
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to bind both ports to.
    #[arg(long, env = "HTTPIPE_HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// Plain port: HTTP/1.1 and h2c (0 = pick a free port).
    #[arg(long, env = "HTTPIPE_HTTP_PORT", default_value_t = 8080)]
    pub http_port: u16,
    /// TLS port: h2 and http/1.1 by ALPN (0 = pick a free port).
    #[arg(long, env = "HTTPIPE_HTTPS_PORT", default_value_t = 8443)]
    pub https_port: u16,
    /// Don't open the TLS port.
    #[arg(long, env = "HTTPIPE_NO_TLS")]
    pub no_tls: bool,
    /// TLS certificate chain (PEM). Without it a self-signed localhost certificate is made.
    #[arg(long, env = "HTTPIPE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM: PKCS#1, PKCS#8 or SEC1).
    #[arg(long, env = "HTTPIPE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Public base URL for Connect API answers and /help (default: from Host and scheme).
    #[arg(long, env = "HTTPIPE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Honour X-Forwarded-Proto / X-Forwarded-Host, and take the client's address from the
    /// last X-Forwarded-For entry (only behind a trusted proxy that appends it; PROTOCOL.md §9).
    #[arg(long, env = "HTTPIPE_TRUST_PROXY")]
    pub trust_proxy: bool,
    /// Waiting peers (unmatched producers and consumers, waiting Connect calls) one client
    /// address may hold; more get 429 too-many-waiting (PROTOCOL.md §9). 0: no limit.
    #[arg(long, env = "HTTPIPE_MAX_WAITING_PER_ADDRESS", default_value_t = DEFAULT_MAX_WAITING)]
    pub max_waiting_per_address: usize,
    /// Open requests on short-code channels one client address may hold; more get 429
    /// too-many-code-requests (PROTOCOL.md §14.5). 0: no limit.
    #[arg(long, env = "HTTPIPE_MAX_CODE_REQUESTS_PER_ADDRESS", default_value_t = DEFAULT_MAX_CODE_REQUESTS)]
    pub max_code_requests_per_address: usize,
    /// Short-code lookups (Connect calls on a code channel, GETs of its first message) one
    /// client address may make per minute; more get 429 too-many-code-lookups (§14.5). 0: no
    /// limit.
    #[arg(long, env = "HTTPIPE_MAX_CODE_LOOKUPS_PER_MINUTE", default_value_t = DEFAULT_CODE_LOOKUPS_PER_MINUTE)]
    pub max_code_lookups_per_minute: u32,
    /// IPv6 clients count by this many leading bits of their address (a /56 is one client).
    #[arg(long, env = "HTTPIPE_IPV6_PREFIX_LEN", default_value_t = DEFAULT_IPV6_PREFIX_LEN,
          value_parser = clap::value_parser!(u8).range(1..=128))]
    pub ipv6_prefix_len: u8,
    /// Directory served at / and /assets/ (the demo). Default: ./www, else the www directory
    /// of the project the binary was built in (next to target/).
    #[arg(long, env = "HTTPIPE_WWW")]
    pub www: Option<PathBuf>,
    /// Directory served at /assets/pkg/ (the built npm package of the SDK). Default: ./pkg,
    /// else the project's pkg directory (as for --www).
    #[arg(long, env = "HTTPIPE_SDK_DIR")]
    pub sdk_dir: Option<PathBuf>,
    /// Largest segmented-upload part in bytes (larger → 413).
    #[arg(long, env = "HTTPIPE_MAX_PART_BYTES", default_value_t = httpipe::protocol::upload::DEFAULT_MAX_PART_BYTES)]
    pub max_part_bytes: usize,
    /// Segmented upload: time without a next part before the consumer is truncated.
    #[arg(long, env = "HTTPIPE_UPLOAD_GAP_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub upload_gap_timeout: Duration,
    /// On SIGTERM/SIGINT: how long running transfers may continue before they are aborted.
    #[arg(long, env = "HTTPIPE_SHUTDOWN_GRACE", default_value = "30s", value_parser = humantime::parse_duration)]
    pub shutdown_grace: Duration,
    /// HTTP/2 per-stream flow-control window in bytes (§3.8).
    #[arg(long, env = "HTTPIPE_H2_STREAM_WINDOW", default_value_t = 4 * 1024 * 1024)]
    pub h2_stream_window: u32,
    /// HTTP/2 per-connection flow-control window in bytes (§3.8).
    #[arg(long, env = "HTTPIPE_H2_CONNECTION_WINDOW", default_value_t = 16 * 1024 * 1024)]
    pub h2_connection_window: u32,
    /// Time from connecting (TLS handshake included) to a complete request head, and on
    /// HTTP/1.1 between requests (PROTOCOL.md §9). Not a transfer timeout.
    #[arg(long, env = "HTTPIPE_HEADER_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub header_timeout: Duration,
    /// A connection with no request in progress is closed after this (§9).
    #[arg(long, env = "HTTPIPE_IDLE_TIMEOUT", default_value = "120s", value_parser = humantime::parse_duration)]
    pub idle_timeout: Duration,
    /// Largest request head in bytes, at least 8192 (larger → 431; §9).
    #[arg(long, env = "HTTPIPE_MAX_HEADER_BYTES", default_value_t = DEFAULT_MAX_HEADER_BYTES)]
    pub max_header_bytes: usize,
    /// Join a relay cluster coordinated by this Redis, e.g. redis://10.0.0.5:6379/0: nodes
    /// behind one load balancer act as one relay (PROTOCOL.md §13, docs/cluster.md).
    #[arg(long, env = "HTTPIPE_CLUSTER", value_name = "REDIS_URL")]
    pub cluster: Option<String>,
    /// With --cluster: how the other nodes (and Connect clients) reach this node,
    /// http://HOST:PORT. Default: http://<--host>:<plain port> (needed when --host is 0.0.0.0).
    #[arg(
        long,
        env = "HTTPIPE_NODE_URL",
        requires = "cluster",
        value_name = "URL"
    )]
    pub node_url: Option<String>,
    /// Log format on stderr: text or json (level via RUST_LOG, default info).
    #[arg(long, env = "HTTPIPE_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl ServeArgs {
    /// The relay configuration (reads the key file). The error says what is wrong.
    pub fn into_config(self) -> std::io::Result<Config> {
        Ok(Config {
            auth_keys: self.keys.load()?,
            auth_key_file: self.keys.auth_key_file,
            host: self.host,
            http_port: self.http_port,
            https_port: self.https_port,
            no_tls: self.no_tls,
            tls_cert: self.tls_cert,
            tls_key: self.tls_key,
            public_url: self.public_url,
            trust_proxy: self.trust_proxy,
            crowd: CrowdLimits {
                max_waiting: self.max_waiting_per_address,
                max_code_requests: self.max_code_requests_per_address,
                code_lookups_per_minute: self.max_code_lookups_per_minute,
                ipv6_prefix_len: self.ipv6_prefix_len,
            },
            www: self.www,
            sdk_dir: self.sdk_dir,
            max_part_bytes: self.max_part_bytes,
            upload_gap_timeout: self.upload_gap_timeout,
            shutdown_grace: self.shutdown_grace,
            h2_stream_window: self.h2_stream_window,
            h2_connection_window: self.h2_connection_window,
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
            max_header_bytes: self.max_header_bytes,
            cluster: self.cluster,
            node_url: self.node_url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line's defaults are `Config::default()` (two lists of defaults must agree).
    #[test]
    fn cli_defaults_match_config_defaults() {
        let args = Cli::try_parse_from(["httpipe-relay"]).map(|c| c.serve);
        let Ok(args) = args else {
            panic!("no flags must parse")
        };
        // The environment of `cargo test` may set HTTPIPE_*: compare only what it doesn't.
        if std::env::vars().any(|(k, _)| k.starts_with("HTTPIPE_")) {
            return;
        }
        let (c, d) = (args.into_config().unwrap(), Config::default());
        assert_eq!(
            (c.host, c.http_port, c.https_port),
            (d.host, d.http_port, d.https_port)
        );
        assert_eq!((c.no_tls, c.trust_proxy), (d.no_tls, d.trust_proxy));
        assert_eq!(
            (c.www, c.sdk_dir, c.public_url),
            (d.www, d.sdk_dir, d.public_url)
        );
        assert_eq!(c.max_part_bytes, d.max_part_bytes);
        assert_eq!(c.upload_gap_timeout, d.upload_gap_timeout);
        assert_eq!(c.shutdown_grace, d.shutdown_grace);
        assert_eq!(c.h2_stream_window, d.h2_stream_window);
        assert_eq!(c.h2_connection_window, d.h2_connection_window);
        assert_eq!(c.header_timeout, d.header_timeout);
        assert_eq!(c.idle_timeout, d.idle_timeout);
        assert_eq!(c.max_header_bytes, d.max_header_bytes);
        assert_eq!(c.crowd, d.crowd);
        assert!(c.auth_keys.is_empty());
        assert_eq!((c.cluster, c.node_url), (d.cluster, d.node_url));
    }
}
