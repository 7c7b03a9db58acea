#!/usr/bin/env bash
# The main job: build the SDK, start the relay on localhost serving the demo, print the URL.
# Extra arguments go to httpipe-relay (e.g. `npm start -- --http-port 9000`).
set -euo pipefail
cd "$(dirname "$0")/.."
# `npm start -- --help` (or -h, --version, -V, or the `token` subcommand): the relay's own
# answer and nothing else on stdout: no setup or build chatter (scripts/relay.sh builds the
# binary first only if it is missing, on stderr).
case "${1:-}" in token) exec scripts/relay.sh "$@" ;; esac
for a in "$@"; do
  case "$a" in --help | -h | --version | -V) exec scripts/relay.sh "$@" ;; esac
done
scripts/setup.sh core
scripts/build-sdk.sh
scripts/build-www.sh
# the relay and the CLI: the workspace's default members (Cargo.toml), so `cargo run --release
# --bin httpipe-relay` (docs/relay.md) reuses this build
cargo build --release
bin="${CARGO_TARGET_DIR:-target}/release/httpipe-relay"
echo "[start] The httpipe CLI is at ${CARGO_TARGET_DIR:-target}/release/httpipe (or: cargo install --path cli)" >&2
cat >&2 <<'MSG'
[start] Starting the relay. Open the demo at the URL of a 'listening' line below
[start] (default http://127.0.0.1:8080/ and https://127.0.0.1:8443/ -- use https for
[start] streaming uploads in Chromium; the certificate is self-signed, accept it once).
[start] Ctrl-C stops the relay. Options: npm start -- --help
MSG
exec "$bin" --www www --sdk-dir pkg "$@"
