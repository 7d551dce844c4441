#!/usr/bin/env bash
# The one build command (README, CI and the Docker image all use it):
#   scripts/build.sh [BUILD_DIR] [--programs] [extra meson setup options...]
# Configures (once) and compiles with warnings as errors. --programs compiles mt-server,
# mt-translate and mt-models only (the quick start, the image); without it, every target: the tests and
# benchmarks too (scripts/run-tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
targets=()
if [ "${1:-}" = --programs ]; then
  targets=(mt-server mt-translate mt-models)
  shift
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" --buildtype=release -Dwerror=true "$@"
fi
meson compile -C "$build_dir" "${targets[@]}"
