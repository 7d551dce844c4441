#!/usr/bin/env bash
# Installs the Debian 12 packages the project needs, for one job:
#   scripts/install-deps.sh [--serve]     building and serving (scripts/quickstart.sh):
#                                         compiler, meson, the libraries, curl and jq
#   scripts/install-deps.sh --test        everything: the test suite (scripts/run-tests.sh:
#                                         chromium, PyTorch, valgrind, clang, nginx-light...),
#                                         the training and benchmark tools
#   scripts/install-deps.sh --build-only  what scripts/build.sh needs (the Docker image)
#   scripts/install-deps.sh --list [MODE] the packages of MODE, one a line
# Idempotent: nothing is done when every package is there. Installing needs root: run as
# root, or as a user with sudo; without either it says what to run as root. Services are
# not started by what it installs (nginx-light's default site on port 80 is removed).
set -euo pipefail

build_packages=(
  # build
  build-essential meson ninja-build pkg-config
  # engine, tokenizer, server libraries
  libopenblas-dev libdnnl-dev libsentencepiece-dev libmicrohttpd-dev libjansson-dev
  libcurl4-openssl-dev  # mt-models: the hub client
  # LibreTranslate parity: language detection, file formats (docx/odt), suggestions
  libexttextcat-dev libexttextcat-data libzip-dev libxml2-dev libsqlite3-dev
  # shared state of N replicas (server.shared_state): PostgreSQL's client library; nettle
  # (API key hashes) comes with libmicrohttpd-dev
  libpq-dev
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
  # tests/test_shared_state.py starts its own PostgreSQL in a temporary directory
  postgresql-15 postgresql-client-15
  # bench/bench_peers.py's chart
  python3-matplotlib
)

# What each mode installs. --serve: building and serving (scripts/quickstart.sh), with curl
# and jq for the batch scripts; no browser, PyTorch, nginx, valgrind or clang.
serve_packages=("${build_packages[@]}" curl jq)
mode='test'
case ${1:-} in
  --serve | '') mode=serve; packages=("${serve_packages[@]}") ;;
  --build-only) mode=build-only; packages=("${build_packages[@]}") ;;
  --test | --all) mode='test' ;;
  --list) ;;
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit 0 ;;
  *)
    echo "install-deps: unknown option '$1' (--serve, --test, --build-only, --list MODE)" >&2
    exit 2 ;;
esac
if [ "${1:-}" = --list ]; then # --list [--serve|--test|--build-only]: the packages, one a line
  case ${2:---serve} in
    --serve) printf '%s\n' "${serve_packages[@]}" ;;
    --build-only) printf '%s\n' "${build_packages[@]}" ;;
    --test | --all) printf '%s\n' "${packages[@]}" ;;
    *) echo "install-deps: --list takes --serve, --test or --build-only" >&2; exit 2 ;;
  esac
  exit 0
fi

# Paths under $MT_DEPS_SYSROOT (empty: /): only the tests set it, to run this script
# against a fake system.
sysroot=${MT_DEPS_SYSROOT:-}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "install-deps: this is not a Debian system (no dpkg-query / apt-get); install the Debian 12" >&2
  echo "install-deps: equivalents of: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages for --$mode already installed"
  exit 0
fi

# Root, else sudo (asking for a password only where there is a terminal to ask on), else
# say what to run.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
    as_root=(sudo)
  else
    if command -v sudo >/dev/null; then why="sudo needs a password and there is no terminal to ask on"
    else why="sudo is not installed"; fi
    {
      echo "install-deps: missing packages: ${missing[*]}"
      echo "install-deps: installing them needs root, and $why. Run as root:"
      echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
      echo "or run this script as root (su -c '$0 ${1:---serve}'), then again as yourself."
    } >&2
    exit 1
  fi
fi

echo "install-deps: installing for --$mode: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

# nginx-light (for the tests) would start nginx on port 80 with Debian's default site as a
# side effect: while this script installs it, services are kept from starting
# (policy-rc.d, unless one is already there), and the default site link it created is
# removed afterwards.
# postgresql-15 (for the tests, which run their own server in a temporary directory)
# likewise: its cluster is not started, nor enabled at boot.
new_nginx=0
new_pg=0
policy=$sysroot/usr/sbin/policy-rc.d
own_policy=0
if [[ " ${missing[*]} " == *" postgresql-15 "* ]] && ! installed postgresql-common; then new_pg=1; fi
if [[ " ${missing[*]} " == *" nginx-light "* ]] && ! installed nginx-common; then new_nginx=1; fi
if [ "$new_nginx" -eq 1 ] || [ "$new_pg" -eq 1 ]; then
  if [ ! -e "$policy" ]; then
    # shellcheck disable=SC2016 # $1 is sh's, not this script's
    "${as_root[@]}" sh -c 'printf "#!/bin/sh\n# install-deps.sh: no service starts while it installs\nexit 101\n" >"$1" && chmod 755 "$1"' - "$policy"
    own_policy=1
  fi
fi
remove_policy() { if [ "$own_policy" -eq 1 ]; then "${as_root[@]}" rm -f -- "$policy"; own_policy=0; fi; }
trap remove_policy EXIT

"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
remove_policy

if [ "$new_nginx" -eq 1 ]; then
  site=$sysroot/etc/nginx/sites-enabled/default
  if [ -L "$site" ]; then
    "${as_root[@]}" rm -f -- "$site"
    echo "install-deps: removed $site (nginx-light's default site on port 80; the tests run nginx with their own configuration)"
  fi
  # not started at boot either: nothing here needs a system nginx
  if [ -z "$sysroot" ] && command -v systemctl >/dev/null; then
    "${as_root[@]}" systemctl disable nginx.service >/dev/null 2>&1 || true
  fi
fi
if [ "$new_pg" -eq 1 ] && [ -z "$sysroot" ] && command -v systemctl >/dev/null; then
  "${as_root[@]}" systemctl disable postgresql.service >/dev/null 2>&1 || true
fi
