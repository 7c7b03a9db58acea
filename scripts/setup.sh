#!/usr/bin/env bash
# Installs everything the README's commands need, skipping what is already there.
# Usage: scripts/setup.sh [core|full]
#   core: Rust wasm target, the SDK's wasm toolchain (scripts/wasm-toolchain), wasm-bindgen-cli
#         (the version in Cargo.lock), npm packages.
#   full: core + Debian packages (chromium, chromium-driver, age, curl, firefox-esr, redis-server,
#         nginx, webkit2gtk-driver and xvfb: WebKitGTK's MiniBrowser under a virtual display)
#         + Python venv with the reference clients (zebrastream-io, age-rt) and pandas.
set -euo pipefail
cd "$(dirname "$0")/.."
level="${1:-core}"
log() { printf '[setup] %s\n' "$*" >&2; }

# Rust wasm target
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding rustup target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# The toolchain of the SDK's release module (scripts/build-sdk.sh): a pinned nightly with the
# standard library's source, which the build compiles with panics that abort at once. Stable
# builds everything else.
wasm_toolchain=$(cat scripts/wasm-toolchain)
if ! rustup run "$wasm_toolchain" rustc --version >/dev/null 2>&1 \
  || [ ! -d "$(rustup run "$wasm_toolchain" rustc --print sysroot)/lib/rustlib/src/rust/library" ]; then
  log "installing the Rust toolchain $wasm_toolchain with rust-src (the SDK's release build)"
  rustup toolchain install "$wasm_toolchain" --profile minimal --component rust-src
fi

# wasm-bindgen-cli pinned to the wasm-bindgen version in Cargo.lock
wb_version=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$wb_version" ]; then
  log "installing wasm-bindgen-cli $wb_version (about 5 minutes, once)"
  cargo install wasm-bindgen-cli --version "$wb_version" --locked \
    || cargo install wasm-bindgen-cli --version "$wb_version"
fi

# npm packages (playwright-core, deno, wrangler, binaryen, piping-server, ...)
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages"
  npm ci --no-audit --no-fund || npm install --no-audit --no-fund
fi

[ "$level" = "full" ] || exit 0

# Debian packages for browser and interop tests
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
command -v age >/dev/null || need+=(age)
command -v curl >/dev/null || need+=(curl)
command -v firefox-esr >/dev/null || need+=(firefox-esr)
# WebKitWebDriver and the MiniBrowser it drives (libwebkit2gtk-4.1), run under Xvfb
command -v WebKitWebDriver >/dev/null || need+=(webkit2gtk-driver)
command -v Xvfb >/dev/null || need+=(xvfb)
command -v redis-server >/dev/null || need+=(redis-server)
# nginx is in /usr/sbin, often not on a non-root PATH
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
if [ ${#need[@]} -gt 0 ]; then
  log "installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends "${need[@]}" \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${need[@]}"; }
fi

# Python reference clients in a virtualenv (.venv)
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import zebrastream, age_rt, pandas' 2>/dev/null; then
  log "creating .venv with zebrastream-io, age-rt and pandas"
  python3 -m venv .venv
  .venv/bin/pip install --quiet -r tests/python-requirements.txt
fi
