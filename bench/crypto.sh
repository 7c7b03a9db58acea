#!/usr/bin/env bash
# Crypto core throughput: native (release + LTO) and wasm (simd128) in Node next to Node's
# native ChaCha20-Poly1305 over the same 64 KiB chunks, plus one scrypt 2^18 each.
# Prints medians and ratios; asserts nothing. BENCH_MB=N sets the stream size (default 64).
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)
export CARGO_TARGET_DIR="$root/target/crypto-bench"

echo "== building (release, LTO) =="
(cd crypto-native && cargo build --release --quiet)
(cd crypto-wasm && cargo build --release --quiet --target wasm32-unknown-unknown)
wasm-bindgen --target nodejs --out-dir crypto-wasm/pkg \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/httpipe_crypto_bench_wasm.wasm"
echo '{"type":"commonjs"}' > crypto-wasm/pkg/package.json   # the root package.json says "module"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores, shared)"
echo
"$CARGO_TARGET_DIR/release/httpipe-crypto-bench"
echo
node crypto-wasm.mjs
