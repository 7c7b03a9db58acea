#!/usr/bin/env bash
# The type tests of the built package (pkg/, from scripts/build-sdk.sh), run by scripts/test.sh:
# tsc --strict once per lib setup (tsconfig.*.json: DOM, ES2022 alone, @types/node,
# @cloudflare/workers-types) and Deno's checker. The files import "httpipe" by name, resolved
# through the package's `exports` (tests/types/node_modules/httpipe -> pkg/; deno.jsonc maps it).
set -euo pipefail
cd "$(dirname "$0")"
root=../..
[ -f "$root/pkg/index.d.ts" ] || { echo "pkg/ is not built: run scripts/build-sdk.sh" >&2; exit 1; }
mkdir -p node_modules
ln -sfn ../../../pkg node_modules/httpipe
for config in tsconfig*.json; do
  [ "$config" = tsconfig.base.json ] && continue
  start=$(date +%s%N)
  "$root/node_modules/.bin/tsc" -p "$config"
  echo "tsc -p tests/types/$config: ok ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
done
start=$(date +%s%N)
DENO_NO_UPDATE_CHECK=1 NO_COLOR=1 "$root/node_modules/.bin/deno" check --quiet --config deno.jsonc \
  api.ts pipeline.ts web.ts wasm.ts
echo "deno check tests/types/{api,pipeline,web,wasm}.ts: ok ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
