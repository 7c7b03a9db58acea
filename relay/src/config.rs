//! Command line and environment (`HTTPIPE_...`) configuration.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

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
    pub serve: Config,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Mint an access token offline with the first auth key (PROTOCOL.md §6) and print it.
    Token(TokenArgs),
}

/// `httpipe-relay token --path /p --mode read|write [--recursive] --ttl 1h`.
#[derive(clap::Args, Debug, Clone)]
pub struct TokenArgs {
    /// Stream path (or subtree root with --recursive), e.g. /team/reports.
    #[arg(long)]
    pub path: String,
    /// read (GET, await-writer) or write (POST/PUT, await-reader).
    #[arg(long, value_parser = ["read", "write"])]
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
    /// The configured keys (empty: open mode).
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
            keys.extend(crate::auth::parse_keys(&std::fs::read_to_string(f)?));
        }
        Ok(keys)
    }
}

/// Relay settings (every flag also from its `HTTPIPE_...` environment variable).
#[derive(clap::Args, Debug, Clone)]
pub struct Config {
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
    /// Honour X-Forwarded-Proto / X-Forwarded-Host (only behind a trusted proxy).
    #[arg(long, env = "HTTPIPE_TRUST_PROXY")]
    pub trust_proxy: bool,
    /// Directory served at / and /assets/ (the demo).
    #[arg(long, env = "HTTPIPE_WWW", default_value = "www")]
    pub www: PathBuf,
    /// Directory served at /assets/pkg/ (the built npm package of the SDK).
    #[arg(long, env = "HTTPIPE_SDK_DIR", default_value = "pkg")]
    pub sdk_dir: PathBuf,
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
    /// Log format on stderr: text or json (level via RUST_LOG, default info).
    #[arg(long, env = "HTTPIPE_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl Default for Config {
    /// The defaults of the command line (used by tests, which then change ports etc.).
    fn default() -> Self {
        Cli::parse_from(["httpipe-relay"]).serve
    }
}
