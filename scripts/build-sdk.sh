#!/usr/bin/env bash
# Builds the WebAssembly SDK into pkg/ (the npm package): cargo (wasm32, release, +simd128)
# -> wasm-bindgen -> wasm-opt (npm binaryen).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "[build-sdk] not yet implemented" >&2
