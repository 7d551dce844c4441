#!/usr/bin/env bash
# translate-file.sh: translates a text file line by line through a running mt-server.
#
#   scripts/translate-file.sh -s en -t de [-u URL] [-j JOBS] [-b LINES] INPUT > OUTPUT
#
# The file is cut into chunks of LINES lines; each chunk goes to POST /translate as one
# JSON array ({"text": [...], "source": ..., "target": ...}, built and read with jq), JOBS
# chunks at a time. Output comes out in input order, exactly one line per input line
# (empty lines and whitespace at line ends kept). Only a busy server (503, 429), a gateway
# timeout (504) and requests that time out are retried, with backoff (Retry-After
# honoured) and a bound on how long one request is retried (-W); a server that is
# not listening (connection refused), or any other error, stops the script at once with
# the server's message. Progress (lines done / total, rate, ETA) goes to stderr.
# Needs bash >= 5.1, curl and jq.
set -euo pipefail

prog=translate-file

usage() {
  cat <<'EOF'
usage: translate-file.sh -s SRC -t TGT [options] INPUT > OUTPUT
  -s LANG    source language (e.g. en)
  -t LANG    target language (e.g. de)
  -u URL     server (default: $MT_URL or http://127.0.0.1:8080; "/translate" is added)
  -j JOBS    requests in flight at once (default 4)
  -b LINES   lines per request (default 32; at most the server's limits.max_texts)
  -r N       retries per request on 503/429/504 and timeouts (default 10)
  -W SEC     most seconds one request is retried for (default 120)
  -T SEC     timeout of one request in seconds (default 300)
  -k KEY     API key (default: $MT_API_KEY), sent as "Authorization: Bearer KEY"
  -q         no progress on stderr
  -h         this help
INPUT may be "-" for stdin. Exit status: 0 done, 1 translation failed, 2 usage error.
EOF
}

die_usage() {
  printf '%s: %s\n' "$prog" "$1" >&2
  usage >&2
  exit 2
}

src='' tgt='' url=${MT_URL:-http://127.0.0.1:8080} jobs=4 batch=32 retries=10 timeout=300
retry_budget=120
api_key=${MT_API_KEY:-} quiet=0
while getopts ':s:t:u:j:b:r:W:T:k:qh' opt; do
  case $opt in
    s) src=$OPTARG ;;
    t) tgt=$OPTARG ;;
    u) url=$OPTARG ;;
    j) jobs=$OPTARG ;;
    b) batch=$OPTARG ;;
    r) retries=$OPTARG ;;
    W) retry_budget=$OPTARG ;;
    T) timeout=$OPTARG ;;
    k) api_key=$OPTARG ;;
    q) quiet=1 ;;
    h) usage; exit 0 ;;
    :) die_usage "option -$OPTARG needs a value" ;;
    *) die_usage "unknown option -$OPTARG" ;;
  esac
done
shift $((OPTIND - 1))

[ -n "$src" ] || die_usage "missing -s SRC (source language)"
[ -n "$tgt" ] || die_usage "missing -t TGT (target language)"
[ $# -eq 1 ] || die_usage "give exactly one INPUT file (or - for stdin)"
input=$1
for pair in "j:$jobs" "b:$batch" "T:$timeout"; do
  [[ ${pair#*:} =~ ^[1-9][0-9]{0,5}$ ]] || die_usage "-${pair%%:*} must be a positive integer, got '${pair#*:}'"
done
[[ $retries =~ ^[0-9]{1,4}$ ]] || die_usage "-r must be a non-negative integer, got '$retries'"
[[ $retry_budget =~ ^[0-9]{1,6}$ ]] || die_usage "-W must be a non-negative integer, got '$retry_budget'"
if [ "$input" != - ] && { [ ! -f "$input" ] || [ ! -r "$input" ]; }; then
  printf '%s: cannot read %s\n' "$prog" "$input" >&2
  exit 2
fi
for tool in curl jq split; do
  command -v "$tool" >/dev/null || { printf '%s: %s is not installed (scripts/install-deps.sh)\n' "$prog" "$tool" >&2; exit 2; }
done
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
  printf '%s: needs bash 5.1 or newer\n' "$prog" >&2
  exit 2
fi

url=${url%/}
case $url in
  */translate) endpoint=$url ;;
  *) endpoint=$url/translate ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/translate-file.XXXXXX")
declare -A running=() # worker pid -> chunk index

cleanup() {
  local pid
  for pid in "${!running[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${!running[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

curl_common=(--silent --show-error --connect-timeout 10 --max-time "$timeout"
  -H 'Content-Type: application/json' -H 'Accept: application/json' -H 'Expect:')
if [ -n "$api_key" ]; then
  # from a file, so that the key does not show in the process list
  printf 'Authorization: Bearer %s\n' "$api_key" >"$tmp/auth"
  curl_common+=(-H "@$tmp/auth")
fi

if [ "$input" = - ]; then
  cat >"$tmp/stdin"
  input=$tmp/stdin
fi

# Lines in the file, a last line without a newline included.
total=$(wc -l <"$input")
if [ -s "$input" ] && [ "$(tail -c 1 "$input" | wc -l)" -eq 0 ]; then total=$((total + 1)); fi

split -l "$batch" -a 8 -d -- "$input" "$tmp/in."
chunks=()
if [ "$total" -gt 0 ]; then chunks=("$tmp"/in.*); fi
nchunks=${#chunks[@]}

msg() { printf '%s: %s\n' "$prog" "$*" >&2; }

# Sleeps in the background, so that a TERM from the main loop interrupts it at once.
nap() {
  sleep "$1" &
  wait "$!"
}

# Translates chunk $1 into $tmp/out.$1. Exit 0: done; 1: failed (message printed and
# $tmp/failed created). Few processes per chunk: jq, curl, jq.
translate_chunk() {
  local i=$1 in=${chunks[$1]} first=$(($1 * batch + 1))
  local body=$tmp/req.$i resp=$tmp/resp.$i hdr=$tmp/hdr.$i out=$tmp/out.$i
  local n last where code rc attempt=0 delay retry_after reason text cpid='' first_fail_us=''
  trap '[ -n "$cpid" ] && kill -TERM "$cpid" 2>/dev/null; exit 143' TERM

  n=$((total - $1 * batch < batch ? total - $1 * batch : batch))
  last=$((first + n - 1))
  where="lines $first-$last"
  jq -ncR --arg s "$src" --arg t "$tgt" '{text: [inputs], source: $s, target: $t}' <"$in" >"$body"

  while :; do
    [ -e "$tmp/failed" ] && exit 1
    rc=0
    curl "${curl_common[@]}" -o "$resp" -D "$hdr" -w '%{http_code}' \
      --data-binary "@$body" -- "$endpoint" >"$tmp/code.$i" 2>"$tmp/err.$i" &
    cpid=$!
    wait "$cpid" || rc=$?
    cpid=''
    code=000
    read -r code <"$tmp/code.$i" || true
    retry_after=''
    if [ "$rc" -ne 0 ]; then
      case $rc in
        7) # connection refused: nothing listens there; waiting would only delay the news
          msg "$where: nothing listens at $endpoint (connection refused); is mt-server running?"
          touch "$tmp/failed"
          exit 1 ;;
        28) # the request timed out (-T, or connecting took 10 s): the server may be busy
          reason="timeout: $(tr '\n' ' ' <"$tmp/err.$i" | head -c 200)" ;;
        *) # bad URL, unknown host, reset connection, TLS...: retrying cannot help
          msg "$where: cannot reach $endpoint: $(tr '\n' ' ' <"$tmp/err.$i" | head -c 300)"
          touch "$tmp/failed"
          exit 1 ;;
      esac
    else
      case $code in
        200)
          # Strings, or objects with a "text" field; newlines inside a translation become
          # spaces so that the output keeps exactly one line per input line.
          if jq -r --argjson n "$n" '
              if (.translations | type) == "array" and (.translations | length) == $n then
                .translations[] | (if type == "object" then (.text // .translation // "") else . end)
                | tostring | gsub("\n"; " ")
              else error("expected \($n) translations") end' <"$resp" >"$out" 2>/dev/null; then
            rm -f -- "$body" "$resp" "$hdr"
            exit 0
          fi
          msg "$where: unexpected answer from $endpoint: $(head -c 300 "$resp")"
          touch "$tmp/failed"
          exit 1 ;;
        429 | 503 | 504)
          reason="HTTP $code"
          retry_after=$(sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$hdr" | tail -n 1) ;;
        *)
          text=$(jq -r '.error // empty' <"$resp" 2>/dev/null || true)
          [ -n "$text" ] || text=$(head -c 300 "$resp" | tr '\n' ' ')
          msg "$where: HTTP $code from $endpoint: $text"
          case $code in
            413) msg "hint: lower -b (lines per request) or the line length, or raise the server's limits" ;;
            401 | 403) msg "hint: give the API key with -k KEY or MT_API_KEY" ;;
          esac
          touch "$tmp/failed"
          exit 1 ;;
      esac
    fi
    attempt=$((attempt + 1))
    if [ "$attempt" -gt "$retries" ]; then
      msg "$where: giving up after $retries retries ($reason)"
      touch "$tmp/failed"
      exit 1
    fi
    # backoff: 1, 2, 4 ... 30 s, or the server's Retry-After (at most 60 s), plus jitter
    delay=$((1 << (attempt - 1 < 5 ? attempt - 1 : 5)))
    [ "$delay" -gt 30 ] && delay=30
    if [ -n "$retry_after" ]; then delay=$((retry_after > 60 ? 60 : retry_after)); fi
    # A request is retried for at most -W seconds from its first failure, so a server
    # that stays busy stops the run in bounded time whatever -r says.
    now_us
    [ -n "$first_fail_us" ] || first_fail_us=$now
    if [ $((now + delay * 1000000 - first_fail_us)) -gt $((retry_budget * 1000000)) ]; then
      msg "$where: giving up: still failing ($reason) after ${retry_budget}s of retries (-W)"
      touch "$tmp/failed"
      exit 1
    fi
    [ "$quiet" -eq 1 ] || msg "$where: $reason, retry $attempt/$retries in ${delay}s"
    nap "$delay.$((RANDOM % 10))"
  done
}

now_us() { local t=${EPOCHREALTIME/[.,]/}; now=$((10#$t)); }
now=0
now_us
start_us=$now
last_report_us=$now
reported=-1
done_lines=0

progress() {
  local final=${1:-0} elapsed rate10 eta='' line
  [ "$quiet" -eq 1 ] && return 0
  now_us
  # not a terminal: one line at most every 2 s (and the last one)
  if [ ! -t 2 ] && [ "$final" -eq 0 ] && [ $((now - last_report_us)) -lt 2000000 ]; then return 0; fi
  if [ ! -t 2 ] && [ "$final" -eq 1 ] && [ "$reported" -eq "$done_lines" ]; then return 0; fi
  last_report_us=$now
  reported=$done_lines
  elapsed=$((now - start_us > 0 ? now - start_us : 1))
  rate10=$((done_lines * 10000000 / elapsed)) # tenths of a line per second
  if [ "$rate10" -gt 0 ] && [ "$done_lines" -lt "$total" ]; then
    local left=$(((total - done_lines) * 10 / rate10))
    printf -v eta ', ETA %dm%02ds' $((left / 60)) $((left % 60))
  fi
  printf -v line '%s: %d/%d lines (%d%%), %d.%d lines/s%s' "$prog" "$done_lines" "$total" \
    $((total ? done_lines * 100 / total : 100)) $((rate10 / 10)) $((rate10 % 10)) "$eta"
  if [ -t 2 ]; then
    printf '\r%s\033[K' "$line" >&2
    [ "$final" -eq 0 ] || printf '\n' >&2
  else
    printf '%s\n' "$line" >&2
  fi
}

declare -A finished=()
next_launch=0
next_out=0
while [ "$next_launch" -lt "$nchunks" ] || [ "${#running[@]}" -gt 0 ]; do
  while [ "$next_launch" -lt "$nchunks" ] && [ "${#running[@]}" -lt "$jobs" ]; do
    translate_chunk "$next_launch" &
    running[$!]=$next_launch
    next_launch=$((next_launch + 1))
  done
  status=0
  pid=''
  wait -n -p pid "${!running[@]}" || status=$?
  if [ -z "$pid" ]; then
    [ "$status" -ne 127 ] || { msg "internal error: lost track of the requests"; exit 1; }
    continue
  fi
  idx=${running[$pid]}
  unset "running[$pid]"
  if [ "$status" -ne 0 ]; then
    [ -e "$tmp/failed" ] || msg "chunk $idx stopped (status $status)"
    [ ! -t 2 ] || [ "$quiet" -eq 1 ] || printf '\n' >&2
    msg "stopped: $done_lines of $total lines were translated"
    exit 1
  fi
  finished[$idx]=1
  # Print every chunk that is next in order.
  while [ -n "${finished[$next_out]:-}" ]; do
    out=$tmp/out.$next_out
    done_lines=$((done_lines + (total - next_out * batch < batch ? total - next_out * batch : batch)))
    cat -- "$out"
    rm -f -- "$out" "${chunks[$next_out]}" "$tmp/code.$next_out" "$tmp/err.$next_out"
    unset "finished[$next_out]"
    next_out=$((next_out + 1))
  done
  progress
done
progress 1
