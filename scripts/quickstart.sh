#!/usr/bin/env bash
# README's first command: install what building and serving need, build the programs
# (mt-server and mt-translate only: scripts/run-tests.sh builds the tests and benchmarks),
# and serve the bundled models (en->de, the default for requests that name no language,
# and de->en) on http://127.0.0.1:8080 (Ctrl-C stops it). Extra arguments go to mt-server.
set -euo pipefail
cd "$(dirname "$0")/.."
# --serve, install-deps.sh's default: no browser, PyTorch, nginx or sanitizer toolchain
scripts/install-deps.sh
scripts/build.sh build --programs
echo "quickstart: once mt-server logs event=ready, open http://127.0.0.1:8080/ (or the --port given) in a browser"
exec build/server/mt-server --model models/en-de --model models/de-en --host 127.0.0.1 --port 8080 "$@"
