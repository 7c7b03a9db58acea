#!/usr/bin/env bash
# Runs every test. Installs what the tests need first (scripts/setup.sh full). A test whose
# tool is still missing (.venv, age, curl, Firefox ESR) fails rather than skips; set
# HTTPIPE_ALLOW_MISSING_TOOLS=1 to have such tests skipped instead.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
step() { printf '\n=== %s === (at %dm%02ds)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }
# A hung test must fail the run in minutes, not stall CI until its 90-minute limit: every
# test step has a ceiling far above its normal time (Rust ~8 min, JS ~10 min on 2 cores).
bounded() {
  local secs=$1; shift
  timeout --kill-after=30 "$secs" "$@" || {
    local rc=$?
    [ "$rc" -eq 124 ] && echo "!!! '$*' still running after ${secs}s: a test hangs (see '... has been running for over 60 seconds' above)" >&2
    return "$rc"
  }
}

step "setup"
scripts/setup.sh full

step "format and lints"
cargo fmt --all -- --check
# --all-features: the native client (root feature `native`) and the CLI's network part.
cargo clippy --workspace --all-targets --all-features -- -D warnings
# The wasm adapter (src/wasm) only compiles for wasm32.
cargo clippy -p httpipe --lib --target wasm32-unknown-unknown -- -D warnings
# ...and so do the post-quantum module's exports (xwing/src/exports.rs).
cargo clippy -p httpipe-xwing --lib --target wasm32-unknown-unknown --features module -- -D warnings
# the published crate's docs: no broken or private links
RUSTDOCFLAGS="-D warnings" cargo doc -p httpipe --features native --no-deps --quiet

step "Rust tests (SDK core, native client, CLI, crypto vectors, relay integration)"
cargo test --workspace --all-features --no-run
# The release relay and CLI the JS tests run (as npm start builds them: the README's recipes
# run both, and docs/relay.md's `cargo run --release --bin httpipe-relay` reuses the build)
# compile while the Rust tests run: those mostly wait on sockets and protocol timers, and
# target/release has a lock of its own, so this takes ~2 of the run's minutes off its length.
release_log=$(mktemp)
cargo build --release >"$release_log" 2>&1 &
release_pid=$!
trap 'kill "$release_pid" 2>/dev/null || true' EXIT
bounded 1500 cargo test --workspace --all-features

step "build SDK (wasm)"
scripts/build-sdk.sh

step "wasm binding unit tests (wasm-bindgen-test in Node)"
# The runner writes its JS glue (CommonJS) to the temp dir: a package.json with "type": "module"
# above it (a stray /tmp/package.json made CI fail) would make Node refuse it, so it gets a temp
# dir of its own whose package.json says commonjs.
wasm_tmp=$(mktemp -d)
echo '{ "type": "commonjs" }' > "$wasm_tmp/package.json"
TMPDIR="$wasm_tmp" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  bounded 900 cargo test -p httpipe --target wasm32-unknown-unknown --test wasm_bindings
scripts/build-www.sh

step "TypeScript types (tests/types: tsc --strict with DOM, WebWorker, ES2022 alone, @types/node, workers-types; deno check)"
bounded 300 tests/types/run.sh

if compgen -G "tests/js/*.test.mjs" >/dev/null; then
  step "JavaScript tests (Node, Deno, Workers, Chromium, the README's recipes)"
  # the release build started beside the Rust tests
  wait "$release_pid" || { cat "$release_log"; exit 1; }
  tail -n 1 "$release_log"
  # Two test files at a time: most of a file's time waits on protocol timers (§12.4, §12.5),
  # browsers and sockets, so two share the 2 cores well (measured: 12.8 min against 19.5 one
  # at a time). Every test starts its own servers on free ports and its own temp dirs.
  # No single test may take more than 10 minutes.
  bounded 2400 node --test --test-concurrency=2 --test-timeout=600000 --test-force-exit tests/js/
fi
