#!/usr/bin/env bash
# Runs every test. Installs what the tests need first (scripts/setup.sh full).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n=== %s ===\n' "$*"; }

step "setup"
scripts/setup.sh full

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

step "Rust tests (SDK core, crypto vectors, relay integration)"
cargo test --workspace

step "build SDK (wasm)"
scripts/build-sdk.sh

step "wasm binding unit tests (wasm-bindgen-test in Node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test -p httpipe --target wasm32-unknown-unknown --test wasm_bindings
scripts/build-www.sh

if compgen -G "tests/js/*.test.mjs" >/dev/null; then
  step "JavaScript tests (Node, Deno, Workers, Chromium)"
  cargo build --release -p httpipe-relay
  node --test --test-concurrency=1 tests/js/
fi
