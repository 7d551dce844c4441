#!/usr/bin/env bash
# The one build command (README, CI and the Docker image all use it):
#   scripts/build.sh [BUILD_DIR] [extra meson setup options...]
# Configures (once) and compiles with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" --buildtype=release -Dwerror=true "$@"
fi
meson compile -C "$build_dir"
