#!/usr/bin/env bash
# Copies the demo's third-party browser libraries from node_modules into www/vendor/ (served
# by the relay at /assets/vendor/; www/vendor/ is generated, not committed):
#   client-zip (streaming ZIP for several files), uqr (QR code as SVG, generated locally).
set -euo pipefail
cd "$(dirname "$0")/.."
for f in node_modules/client-zip/index.js node_modules/uqr/dist/index.mjs; do
  [ -f "$f" ] || { echo "[build-www] missing $f: run npm install" >&2; exit 1; }
done
mkdir -p www/vendor
cp node_modules/client-zip/index.js www/vendor/client-zip.js
cp node_modules/client-zip/LICENSE.txt www/vendor/client-zip.LICENSE.txt
cp node_modules/uqr/dist/index.mjs www/vendor/uqr.js
cp node_modules/uqr/LICENSE www/vendor/uqr.LICENSE.txt
echo "[build-www] www/vendor: client-zip, uqr" >&2
