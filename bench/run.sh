#!/usr/bin/env bash
# `npm run bench`: every benchmark in bench/, one after the other, each announced with what it
# measures; or only the ones named: `npm run bench -- relay sdk`; `npm run bench -- --list`.
# Each prints its own table and asserts nothing; their knobs (SIZE_MIB, RUNS, BENCH_MB, ...)
# pass through the environment. All of them together take long (2 GiB transfers, medians of
# 3 or 7): about 30-60 minutes on a 2-core machine. Builds what they need first (release).
set -euo pipefail
cd "$(dirname "$0")/.."

# name | file | what it measures (one line)
benches=(
  "relay|bench/relay.mjs|relay vs piping-server (and piping-server-rust with PIPING_SERVER_RUST): HTTP/1.1 and h2 throughput, 8 streams, idle memory per waiter, rendezvous latency, CPU per GiB"
  "sdk|bench/sdk.mjs|SDK (Node, Chromium) plain and age-rt vs curl through the relay, and wasm encrypt without network"
  "cli|bench/cli.py|httpipe CLI plain and age-rt vs curl, native age-rt encrypt and the ZebraStream CLI"
  "crypto|bench/crypto.sh|age / age-rt encrypt and decrypt, native and wasm, vs raw ChaCha20-Poly1305 and Node's native cipher; scrypt"
  "sdk-crypto|bench/sdk-crypto.mjs|the SDK's encryptStream in Node with node:crypto's cipher and with the wasm one vs a raw createCipheriv loop, Debian's age CLI and age-encryption (npm)"
  "webcrypto|bench/webcrypto.mjs|the payload cipher in browsers: Chromium's encryptStream / decryptStream with WebCrypto's ChaCha20-Poly1305 vs the wasm one vs a raw crypto.subtle loop, Firefox (wasm), Deno (node:crypto vs WebCrypto vs wasm)"
  "sdk-plain|bench/sdk-plain.mjs|the SDK's plain send/receive vs the runtime's own streaming fetch POST → GET through the relay: Node, Deno, Chromium (h2)"
  "startup|bench/startup.mjs|import (Node, Deno), page load (Chromium) or a cold workerd (Worker) to the first key, httpipe vs age-encryption (npm)"
  "sdk-memory|bench/sdk-memory.mjs|peak RSS above import + init of a 1 GiB send/receive (plain, age-rt X25519) in Node and Deno, vs the runtime's own fetch"
  "pipeline|bench/pipeline.mjs|record pipelines (plain, age-rt) vs Redis BRPOP / LPOP 1000 and a hand-written NDJSON loop: records/s, CPU µs/record"
  "ndjson-framing|bench/ndjson-framing.mjs|where ndjson.decode's time goes: line search, UTF-8 decode, JSON.parse"
  "receipts|bench/receipts.mjs|delivery receipts: an uncut 1 GiB transfer (plain, age-rt) with receipts vs receipt: false, and the receipt round trip"
  "resume|bench/resume.mjs|resume after a break: an uncut 2 GiB transfer with resume vs resume: false, and the receiver's pause at a cut"
  "cluster|bench/cluster.mjs|relay cluster (2 nodes, Redis): a pair split across nodes vs on one node: throughput, CPU per GiB, rendezvous latency, Redis commands per transfer"
)
# helpers run by a benchmark above, not benchmarks themselves
helpers=" bench/crypto-wasm.mjs "

# Benchmarks added to bench/ without an entry above still run: their first comment line is
# their description.
for f in bench/*.mjs bench/*.sh bench/*.py; do
  [ -f "$f" ] || continue
  case "$f" in bench/run.sh) continue ;; esac
  case "$helpers" in *" $f "*) continue ;; esac
  known=0
  for b in "${benches[@]}"; do [ "$(cut -d'|' -f2 <<<"$b")" = "$f" ] && known=1; done
  if [ "$known" = 0 ]; then
    desc=$(grep -v '^#!' "$f" | grep -m1 -E '^(//|#|""")' | sed -E 's@^(//|#|""")[[:space:]]*@@; s@"""$@@' || true)
    name=$(basename "$f"); name=${name%.*}
    benches+=("$name|$f|$desc")
  fi
done

list() {
  for b in "${benches[@]}"; do
    IFS='|' read -r name file desc <<<"$b"
    printf '  %-15s %-26s %s\n' "$name" "$file" "$desc"
  done
}

if [ "${1:-}" = "--list" ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage: npm run bench [-- NAME...]   (all when none is named)"
  list
  exit 0
fi

selected=()
if [ $# -eq 0 ]; then
  selected=("${benches[@]}")
else
  for want in "$@"; do
    found=""
    for b in "${benches[@]}"; do [ "$(cut -d'|' -f1 <<<"$b")" = "$want" ] && found=$b; done
    [ -n "$found" ] || { echo "bench: no benchmark '$want'; there are:" >&2; list >&2; exit 2; }
    selected+=("$found")
  done
fi

needs_build=0
for b in "${selected[@]}"; do
  case "$(cut -d'|' -f1 <<<"$b")" in crypto | ndjson-framing) ;; *) needs_build=1 ;; esac
done
if [ "$needs_build" = 1 ]; then
  echo "== building the release relay, CLI and the h2 bench client; the SDK into pkg/ =="
  # one command, so the relay is built once with the same features as npm start's
  cargo build --release --bins --example h2_bench
  [ -f pkg/index.js ] || scripts/build-sdk.sh
fi

failed=()
for b in "${selected[@]}"; do
  IFS='|' read -r name file desc <<<"$b"
  echo
  echo "== $name ($file): $desc =="
  case "$file" in
    *.mjs) cmd=(node "$file") ;;
    *.py) cmd=(python3 "$file") ;;
    *.sh) cmd=(bash "$file") ;;
  esac
  start=$(date +%s)
  if "${cmd[@]}"; then
    echo "== $name: done in $(($(date +%s) - start)) s =="
  else
    echo "== $name: FAILED (exit $?) after $(($(date +%s) - start)) s ==" >&2
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: failed: ${failed[*]}" >&2
  exit 1
fi
