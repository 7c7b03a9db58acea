#!/usr/bin/env bash
# The main job: build the SDK, start the relay on localhost serving the demo, print the URL.
# Extra arguments go to httpipe-relay (e.g. `npm start -- --http-port 9000`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh core
scripts/build-sdk.sh
scripts/build-www.sh
cargo build --release -p httpipe-relay
exec target/release/httpipe-relay --www www --sdk-dir pkg "$@"
