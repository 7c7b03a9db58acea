#!/usr/bin/env bash
# Runs every test. Installs what the tests need first (scripts/setup.sh full).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n=== %s ===\n' "$*"; }

step "setup"
scripts/setup.sh full

step "format and lints"
cargo fmt --all -- --check
# --all-features: the native client (root feature `native`) and the CLI's network part.
cargo clippy --workspace --all-targets --all-features -- -D warnings
# The wasm adapter (src/wasm) only compiles for wasm32.
cargo clippy -p httpipe --lib --target wasm32-unknown-unknown -- -D warnings

step "Rust tests (SDK core, native client, CLI, crypto vectors, relay integration)"
cargo test --workspace --all-features

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
