#!/usr/bin/env bash
# Builds the npm package into pkg/: Rust (root crate) → wasm32 (release, +simd128 from
# .cargo/config.toml) → wasm-bindgen (--target web) → wasm-opt (npm binaryen) → the
# hand-written ESM entries and package.json from js/.
# Honours CARGO_TARGET_DIR (default target/). HTTPIPE_SDK_PROFILE=dev builds unoptimised
# (faster, for local iteration).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
profile="${HTTPIPE_SDK_PROFILE:-release}"
log() { printf '[build-sdk] %s\n' "$*" >&2; }

if [ "$profile" = release ]; then
  cargo build -p httpipe --lib --target wasm32-unknown-unknown --release
  wasm="$target_dir/wasm32-unknown-unknown/release/httpipe.wasm"
else
  cargo build -p httpipe --lib --target wasm32-unknown-unknown
  wasm="$target_dir/wasm32-unknown-unknown/debug/httpipe.wasm"
fi

out="$root/pkg"
tmp="$root/pkg.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
wasm-bindgen --target web --out-dir "$tmp" --out-name httpipe_wasm "$wasm"

if [ "$profile" = release ]; then
  opt="$root/node_modules/.bin/wasm-opt"
  [ -x "$opt" ] || { log "wasm-opt missing: run scripts/setup.sh (npm binaryen)"; exit 1; }
  "$opt" -O3 --enable-simd --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
    "$tmp/httpipe_wasm_bg.wasm" -o "$tmp/httpipe_wasm_bg.opt.wasm"
  mv "$tmp/httpipe_wasm_bg.opt.wasm" "$tmp/httpipe_wasm_bg.wasm"
fi

cp js/index.js js/api.js js/workerd.js js/index.d.ts js/workerd.d.ts js/package.json "$tmp/"
cp -r js/pipeline "$tmp/"
[ -f README.md ] && cp README.md "$tmp/README.md"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
raw=$(wc -c < "$out/httpipe_wasm_bg.wasm")
gz=$(gzip -9 -c "$out/httpipe_wasm_bg.wasm" | wc -c)
log "pkg/ ready: httpipe_wasm_bg.wasm $raw bytes raw, $gz bytes gzipped ($profile)"
