#!/usr/bin/env bash
# README's first command: install what is needed, build, and serve the bundled models
# (en->de, the default for requests that name no language, and de->en) on
# http://127.0.0.1:8080 (Ctrl-C stops it). Extra arguments go to mt-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
exec build/server/mt-server --model models/en-de --model models/de-en --host 127.0.0.1 --port 8080 "$@"
