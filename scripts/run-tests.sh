#!/usr/bin/env bash
# README's second command: the whole test suite, as CI runs it.
#   1. release build with warnings as errors: unit, reference (C vs PyTorch),
#      integration and script tests;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: the C unit tests and the CLI
#      and server integration tests (the server's includes its 2,000-request load test);
#   3. valgrind memcheck over the C unit tests;
#   4. clang + libFuzzer build: every fuzz target, its seed corpus replayed, then a fixed
#      number of inputs from a fixed seed (tests/meson.build: the same inputs in every run,
#      so a finding fails the change that brings it); scripts/fuzz-long.sh fuzzes for long.
# Ends with one summary line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
scripts/install-deps.sh --test || exit 1

passed=0
failed=0
skipped=0
log_dir=$(mktemp -d /tmp/mt-tests.XXXXXX)

# run_step NAME COMMAND...: runs a meson test command, adds its counts to the totals.
run_step() {
  local name=$1
  shift
  echo "=== $name: $*"
  local log="$log_dir/$name.log"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local ok fail
  ok=$(grep -E '^Ok:' "$log" | tail -1 | awk '{print $2}')
  fail=$(grep -E '^(Fail|Unexpected Pass|Timeout):' "$log" | awk '{s += $2} END {print s + 0}')
  local skip
  skip=$(grep -E '^Skipped:' "$log" | tail -1 | awk '{print $2}')
  passed=$((passed + ${ok:-0}))
  skipped=$((skipped + ${skip:-0}))
  failed=$((failed + fail))
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
    failed=$((failed + 1)) # the step itself broke (build error, no tests ran)
  fi
}

build_step() {
  local name=$1
  shift
  echo "=== build $name"
  if ! scripts/build.sh "$@"; then
    echo "build $name FAILED"
    failed=$((failed + 1))
    return 1
  fi
}

# The corpora and peers beside the checkout (CI has them); a value set by the user wins. The
# tests that need them skip (SKIP, with the reason) when the folder is missing.
export MT_SHARED_DIR="${MT_SHARED_DIR:-$root/../shared}"

if build_step release build; then
  run_step release meson test -C build --no-rebuild --print-errorlogs
fi

if build_step sanitizers build-asan -Db_sanitize=address,undefined -Db_lundef=false --buildtype=debugoptimized; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_step sanitizers meson test -C build-asan --no-rebuild --print-errorlogs \
      model-load model-search model-kernels model-packed translator segment-replay markup-replay cache tokenizer config toml cli server hardening drain markup protect \
      formats formats-replay zip-replay xml-replay documents \
      service store deepl shared-state job-queue mt_models glossary glossary-replay torchzip-replay \
      glossaries glossaries-pg deepl_glossary glossary-config ct2-replay ct2 argos safetensors-replay forwarded-replay \
      tokenizer-spells unknown_chars paths utf8 file_deadline
fi

if [ -d build ]; then
  run_step valgrind meson test -C build --no-rebuild --print-errorlogs --setup valgrind \
    model-load model-search model-kernels model-packed translator segment-replay markup-replay cache tokenizer config toml markup protect \
    formats formats-replay zip-replay xml-replay \
    service store glossary glossary-replay glossaries ct2-replay safetensors-replay forwarded-replay utf8
fi

if command -v clang >/dev/null; then
  if CC=clang CXX=clang++ build_step fuzz build-fuzz -Db_sanitize=address,undefined -Db_lundef=false \
      --buildtype=debugoptimized; then
    # one target at a time (is_parallel false): each run's input count is fixed, not its time
    run_step fuzz meson test -C build-fuzz --no-rebuild --print-errorlogs --suite fuzz
  fi
fi

echo
echo "logs: $log_dir"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
