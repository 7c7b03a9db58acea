#!/usr/bin/env bash
# `npm run relay -- ARGS`: the built httpipe-relay with ARGS, wherever cargo put it
# ($CARGO_TARGET_DIR/release, else target/release), building it first if it isn't there. E.g.
#   npm run -s relay -- token --auth-key-file relay.key --path /team --mode write --ttl 1h
#   npm run -s relay -- --help
# (-s keeps npm's own "> httpipe-workspace@ relay" lines off stdout.) Relative paths in ARGS
# are relative to the repository root (npm runs scripts there).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
bin="$target/release/httpipe-relay"
if [ ! -x "$bin" ]; then
  echo "[relay] building httpipe-relay (release) first: $bin is missing" >&2
  (cd "$root" && cargo build --release) >&2
fi
exec "$bin" "$@"
