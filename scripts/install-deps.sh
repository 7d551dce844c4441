#!/usr/bin/env bash
# Installs every Debian 12 package the project needs to build, test, train and serve.
# Idempotent: packages already present are skipped by apt. Needs root (or sudo).
#   scripts/install-deps.sh --build-only   only what scripts/build.sh needs (the Docker image)
set -euo pipefail

build_packages=(
  # build
  build-essential meson ninja-build pkg-config
  # engine, tokenizer, server libraries
  libopenblas-dev libdnnl-dev libsentencepiece-dev libmicrohttpd-dev libjansson-dev
  # LibreTranslate parity: language detection, file formats (docx/odt), suggestions
  libexttextcat-dev libexttextcat-data libzip-dev libxml2-dev libsqlite3-dev
  # the unit tests' framework: scripts/build.sh builds the tests too
  check
)
packages=(
  "${build_packages[@]}"
  # OpenAPI check and browser test of the web page
  python3-jsonschema chromium chromium-driver python3-selenium
  # unit tests
  valgrind
  # fuzzing (libFuzzer) in the test suite
  clang libclang-rt-14-dev
  python3-docx python3-odf  # write the document fuzzers' seeds (tests/fuzz/make_document_seeds.py)
  # tools: training, reference implementation, tokenizer training, conversion
  python3 python3-torch python3-numpy python3-sentencepiece python3-yaml sentencepiece libjemalloc2
  # scripts and their tests
  curl jq nginx-light
  # bench/bench_peers.py's chart
  python3-matplotlib
)

if [ "${1:-}" = --build-only ]; then packages=("${build_packages[@]}"); fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
