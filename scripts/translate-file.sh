#!/usr/bin/env bash
# translate-file.sh: translates one file, in any format mt-server takes, through a running
# mt-server.
#
#   scripts/translate-file.sh -s en -t de [options] INPUT [-o OUTPUT]
#
# Plain text (.txt, no extension, or "-" for stdin) goes line by line through POST
# /translate: the file is cut into chunks of LINES lines, each chunk goes as one JSON array
# ({"text": [...], "source": ..., "target": ...}, built and read with jq), JOBS chunks at a
# time, and the output comes out in input order, exactly one line per input line (empty
# lines and whitespace at line ends kept). Every other format the server lists in
# /frontend/settings (.html, .srt, .docx, .odt) goes whole through POST /translate_file and
# comes back from GET /download_file/ID, its markup kept by the server.
#
# Before anything is written the server is asked for its language pairs (GET /languages):
# a pair it does not serve is refused. Output goes to a temporary file beside OUTPUT and is
# renamed when complete: an error or Ctrl-C (exit 130) leaves no partial file and no
# temporary directory behind. Only a busy server (503, 429), a gateway timeout (504) and
# requests that time out are retried, with backoff (Retry-After honoured) and a bound on
# how long one request is retried (-W); a server that is not listening (connection
# refused), or any other error, stops the script at once with the server's message.
# Progress goes to stderr. Needs bash >= 5.1, curl and jq.
set -euo pipefail

prog=translate-file

usage() {
  cat <<'USAGE'
usage: translate-file.sh -s SRC -t TGT [options] INPUT
  -s LANG    source language (e.g. en; "auto" lets the server detect it)
  -t LANG    target language (e.g. de)
  -o OUTPUT  where the translation goes: a file, an existing directory (the same name
             inside it), or - for stdout. Default: stdout for plain text (as in
             "INPUT > OUTPUT"), NAME.TGT.EXT beside INPUT for other formats
             (report.docx -> report.de.docx)
  -n         NAME.TGT.EXT beside INPUT for plain text too (book.txt -> book.de.txt)
  -u URL     server (default: $MT_URL or http://127.0.0.1:8080)
  -j JOBS    plain text: requests in flight at once, output in input order (default 4)
  -b LINES   plain text: lines per request (default 32; at most the server's limits.max_texts)
  -r N       retries per request on 503/429/504 and timeouts (default 10)
  -W SEC     most seconds one request is retried for (default 120)
  -T SEC     timeout of one request in seconds, and the longest a file translation may
             show no progress (default 300)
  -k KEY     API key (default: $MT_API_KEY), sent as "Authorization: Bearer KEY"
  -q         no progress on stderr
  -C         check only: the server answers and serves SRC->TGT; prints the file
             extensions it translates (one a line) and writes nothing
  -h         this help
Formats: plain text (.txt, no extension, stdin) through /translate; every extension the
server lists in /frontend/settings (mt-server: .html .htm .srt .docx .odt) through
/translate_file. Exit status: 0 done, 1 translation failed, 2 usage error or a language
pair / format the server does not take, 130 interrupted.
USAGE
}

die_usage() {
  printf '%s: %s\n' "$prog" "$1" >&2
  printf "try '%s -h'\n" "${0##*/}" >&2
  exit 2
}

msg() { printf '%s: %s\n' "$prog" "$*" >&2; }

src='' tgt='' url=${MT_URL:-http://127.0.0.1:8080} jobs=4 batch=32 retries=10 timeout=300
retry_budget=120 output='' beside=0 check_only=0
api_key=${MT_API_KEY:-} quiet=0
while getopts ':s:t:u:o:j:b:r:W:T:k:nqCh' opt; do
  case $opt in
    s) src=$OPTARG ;;
    t) tgt=$OPTARG ;;
    u) url=$OPTARG ;;
    o) output=$OPTARG ;;
    n) beside=1 ;;
    j) jobs=$OPTARG ;;
    b) batch=$OPTARG ;;
    r) retries=$OPTARG ;;
    W) retry_budget=$OPTARG ;;
    T) timeout=$OPTARG ;;
    k) api_key=$OPTARG ;;
    q) quiet=1 ;;
    C) check_only=1 ;;
    h) usage; exit 0 ;;
    :) die_usage "option -$OPTARG needs a value" ;;
    *) die_usage "unknown option -$OPTARG" ;;
  esac
done
shift $((OPTIND - 1))

[ -n "$src" ] || die_usage "missing -s SRC (source language)"
[ -n "$tgt" ] || die_usage "missing -t TGT (target language)"
for pair in "j:$jobs" "b:$batch" "T:$timeout"; do
  [[ ${pair#*:} =~ ^[1-9][0-9]{0,5}$ ]] || die_usage "-${pair%%:*} must be a positive integer, got '${pair#*:}'"
done
[[ $retries =~ ^[0-9]{1,4}$ ]] || die_usage "-r must be a non-negative integer, got '$retries'"
[[ $retry_budget =~ ^[0-9]{1,6}$ ]] || die_usage "-W must be a non-negative integer, got '$retry_budget'"
if [ "$check_only" -eq 1 ]; then
  [ $# -eq 0 ] || die_usage "-C takes no INPUT"
  input=''
else
  [ $# -eq 1 ] || die_usage "give exactly one INPUT file (or - for stdin)"
  input=$1
  if [ "$input" != - ] && { [ ! -f "$input" ] || [ ! -r "$input" ]; }; then
    printf '%s: cannot read %s\n' "$prog" "$input" >&2
    exit 2
  fi
fi
for tool in curl jq split; do
  command -v "$tool" >/dev/null || { printf '%s: %s is not installed (scripts/install-deps.sh)\n' "$prog" "$tool" >&2; exit 2; }
done
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
  printf '%s: needs bash 5.1 or newer\n' "$prog" >&2
  exit 2
fi

# The format, from the extension: plain text, or a file for /translate_file.
name='' ext='' mode='text'
if [ -n "$input" ] && [ "$input" != - ]; then
  name=${input##*/}
  if [[ $name == ?*.* ]]; then ext=${name##*.}; ext=${ext,,}; fi
  case $ext in
    '' | txt | text) mode='text' ;;
    *) mode='file' ;;
  esac
fi

url=${url%/}
base=${url%/translate} # -u may name the /translate endpoint itself
endpoint=$base/translate

tmp=$(mktemp -d "${TMPDIR:-/tmp}/translate-file.XXXXXX")
declare -A running=() # worker pid -> chunk index
part=''               # the output being written (renamed to its name when complete)
fg=''                 # the curl the main shell waits for

cleanup() {
  local pid
  trap '' INT TERM # a second Ctrl-C must not cut the cleanup short
  # the main shell's curl ($fg, or one forked just before "fg=$!") and the chunk workers
  # shellcheck disable=SC2046 # pids: split on purpose
  kill -TERM $(jobs -p) 2>/dev/null || true
  for pid in "${!running[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # every one of them gone, not just signalled: the workers wait for their curls
  wait 2>/dev/null || true
  [ -z "$part" ] || rm -f -- "$part"
  rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

curl_auth=()
if [ -n "$api_key" ]; then
  # from a file, so that the key does not show in the process list
  printf 'Authorization: Bearer %s\n' "$api_key" >"$tmp/auth"
  curl_auth=(-H "@$tmp/auth")
fi
curl_common=(--silent --show-error --connect-timeout 10 --max-time "$timeout" "${curl_auth[@]}"
  -H 'Content-Type: application/json' -H 'Accept: application/json' -H 'Expect:')
curl_plain=(--silent --show-error --connect-timeout 10 --max-time "$timeout" "${curl_auth[@]}" -H 'Expect:')

# fail_curl RC WHAT: the message for a curl that could not get an answer, then exit 1.
fail_curl() {
  if [ "$1" -eq 7 ]; then
    msg "$2: nothing listens at $base (connection refused); is mt-server running?"
  else
    msg "$2: cannot reach $base: $(tr '\n' ' ' <"$tmp/err" | head -c 300)"
  fi
  exit 1
}

# http CURL-ARGS...: curl in the background and waited for, so that Ctrl-C or TERM reach
# the traps at once; sets code (the HTTP status, 000 for none) and crc (curl's status).
http() {
  crc=0
  curl "${curl_plain[@]}" -w '%{http_code}' "$@" >"$tmp/code" 2>"$tmp/err" &
  fg=$!
  wait "$fg" || crc=$?
  fg=''
  code=000
  read -r code <"$tmp/code" || true
}

# api_get PATH: GET base/PATH into $tmp/get.json.
api_get() {
  http -H 'Accept: application/json' -o "$tmp/get.json" -- "$base$1"
}

server_error() { # the server's "error" field, else the start of its answer
  local text
  text=$(jq -r '.error // empty' <"$1" 2>/dev/null || true)
  [ -n "$text" ] || text=$(head -c 300 "$1" | tr '\n' ' ')
  printf '%s' "$text"
}

# The language pair, before anything is written. A server without /languages (404, or
# not a list) is not checked here: its /translate answer says.
api_get /languages
[ "$crc" -eq 0 ] || fail_curl "$crc" "GET /languages"
case $code in
  200)
    if jq -e 'type == "array"' "$tmp/get.json" >/dev/null 2>&1; then
      verdict=$(jq -r --arg s "$src" --arg t "$tgt" '
        (map({key: .code, value: (.targets // [])}) | from_entries) as $m
        | if $s == "auto" then (if ([$m[]] | add // [] | index($t)) != null then "ok" else "target" end)
          elif $m[$s] == null then "source"
          elif ($m[$s] | index($t)) != null then "ok" else "pair" end' "$tmp/get.json")
      if [ "$verdict" != ok ]; then
        pairs=$(jq -r '[.[] | .code as $c | (.targets // [])[] | "\($c)->\(.)"] | join(" ")' "$tmp/get.json")
        case $verdict in
          source) msg "$base has no model from '$src'" ;;
          target) msg "$base has no model into '$tgt'" ;;
          *) msg "$base has no model from '$src' into '$tgt'" ;;
        esac
        msg "it translates: ${pairs:-nothing}"
        exit 2
      fi
    fi ;;
  401 | 403)
    msg "GET /languages: HTTP $code: $(server_error "$tmp/get.json")"
    msg "hint: give the API key with -k KEY or MT_API_KEY"
    exit 1 ;;
esac

# The extensions the server translates as files (its /frontend/settings), else mt-server's.
extensions=(html htm srt docx odt)
files_on=1
if [ "$check_only" -eq 1 ] || [ "$mode" = file ]; then
  api_get /frontend/settings
  [ "$crc" -eq 0 ] || fail_curl "$crc" "GET /frontend/settings"
  if [ "$code" = 200 ] && jq -e 'type == "object"' "$tmp/get.json" >/dev/null 2>&1; then
    if jq -e '.filesTranslation == false' "$tmp/get.json" >/dev/null; then files_on=0; extensions=(); fi
    if jq -e '.supportedFilesFormat | type == "array"' "$tmp/get.json" >/dev/null 2>&1; then
      mapfile -t extensions < <(jq -r '.supportedFilesFormat[] | ascii_downcase | ltrimstr(".")
        | select(. != "txt" and test("^[a-z0-9]+$"))' "$tmp/get.json")
      [ "$files_on" -eq 1 ] || extensions=()
    fi
  fi
fi
if [ "$check_only" -eq 1 ]; then
  printf '%s\n' txt "${extensions[@]}"
  exit 0
fi
if [ "$mode" = file ] && [[ " ${extensions[*]} " != *" $ext "* ]]; then
  if [ "$files_on" -eq 0 ]; then
    msg "$name: $base does not translate files (filesTranslation is off); only plain text"
  else
    msg "$name: .$ext is not a format $base translates (it takes .txt${extensions[*]/#/ .})"
  fi
  exit 2
fi

# Where the output goes: "" for stdout, else a file written as $part and renamed.
target_file=''
if [ "$output" = - ]; then
  target_file=''
elif [ -n "$output" ]; then
  if [ -d "$output" ]; then
    [ -n "$name" ] || die_usage "-o DIR needs a named INPUT, not stdin"
    target_file=${output%/}/$name
  else
    target_file=$output
  fi
elif [ "$mode" = file ] || [ "$beside" -eq 1 ]; then
  [ -n "$name" ] || die_usage "-n needs a named INPUT, not stdin"
  if [[ $name == ?*.* ]]; then
    target_file=${input%.*}.$tgt.${name##*.}
  else
    target_file=$input.$tgt
  fi
fi
if [ -n "$target_file" ]; then
  if [ -e "$target_file" ] && [ "$input" != - ] && [ "$target_file" -ef "$input" ]; then
    die_usage "the output would overwrite the input ($target_file)"
  fi
  out_dir=$(dirname -- "$target_file")
  if [ ! -d "$out_dir" ] || [ ! -w "$out_dir" ]; then
    msg "cannot write in $out_dir"
    exit 1
  fi
  part=$(mktemp "$out_dir/.${target_file##*/}.XXXXXX")
  exec 3>"$part"
else
  exec 3>&1
fi

# The finished output: renamed into place with the permissions a new file would get.
finish_output() {
  exec 3>&-
  if [ -n "$part" ]; then
    chmod "$(printf '%o' $((0666 & ~$(umask))))" -- "$part"
    mv -f -- "$part" "$target_file"
    part=''
    [ "$quiet" -eq 1 ] || msg "wrote $target_file"
  fi
}

now_us() { local t=${EPOCHREALTIME/[.,]/}; now=$((10#$t)); }
now=0
now_us
start_us=$now

# Sleeps in the background, so that a TERM from the main loop interrupts it at once.
nap() {
  sleep "$1" &
  wait "$!"
}

# The Retry-After seconds in the response headers of file $1 (the last one); empty: none.
retry_after_of() {
  sed -n 's/^[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$1" | tail -n 1
}

# After a failed try that may be retried ($reason says why): counts it in $attempt and
# sleeps the backoff, 1, 2, 4 ... 30 s, or the server's $retry_after (at most 60 s), plus
# jitter. Gives up (exit 1, creating file $2 first when given) after -r retries, or when
# the next try would start more than -W seconds after the first failure ($first_fail_us),
# so that a server that stays busy stops the run in bounded time whatever -r says. $1
# names the request in messages. Runs in its caller's shell: the caller's attempt and
# first_fail_us (locals of translate_chunk) are the ones counted.
backoff() {
  local where=$1 failed=${2:-} delay
  attempt=$((attempt + 1))
  if [ "$attempt" -gt "$retries" ]; then
    msg "$where: giving up after $retries retries ($reason)"
    [ -z "$failed" ] || touch "$failed"
    exit 1
  fi
  delay=$((1 << (attempt - 1 < 5 ? attempt - 1 : 5)))
  [ "$delay" -gt 30 ] && delay=30
  if [ -n "$retry_after" ]; then delay=$((retry_after > 60 ? 60 : retry_after)); fi
  now_us
  [ -n "$first_fail_us" ] || first_fail_us=$now
  if [ $((now + delay * 1000000 - first_fail_us)) -gt $((retry_budget * 1000000)) ]; then
    msg "$where: giving up: still failing ($reason) after ${retry_budget}s of retries (-W)"
    [ -z "$failed" ] || touch "$failed"
    exit 1
  fi
  [ "$quiet" -eq 1 ] || msg "$where: $reason, retry $attempt/$retries in ${delay}s"
  nap "$delay.$((RANDOM % 10))"
}

# ---------------------------------------------------------------- other formats, whole
if [ "$mode" = file ]; then
  # The upload's name is the extension alone: a path with ';', ',' or '"' cannot break
  # curl's -F syntax, and the output's name is chosen here, not by the server.
  ln -s -- "$(cd "$(dirname -- "$input")" && pwd)/$name" "$tmp/upload.$ext"
  form=(-F "file=@$tmp/upload.$ext;filename=upload.$ext" --form-string "source=$src" --form-string "target=$tgt")
  attempt=0 first_fail_us='' phase=upload id='' last_done=-1 last_change_us=$start_us
  while :; do
    if [ "$phase" = upload ]; then
      http -H 'Accept: application/json' "${form[@]}" -o "$tmp/answer" -D "$tmp/hdr" -- "$base/translate_file"
    else
      http -o "$tmp/answer" -D "$tmp/hdr" -- "$base/download_file/$id"
    fi
    retry_after=''
    if [ "$crc" -eq 28 ]; then
      reason="timeout"
    elif [ "$crc" -ne 0 ]; then
      fail_curl "$crc" "$name"
    else
      case $code in
        200)
          if [ "$phase" = upload ]; then
            id=$(jq -r '.translatedFileUrl // empty' <"$tmp/answer" 2>/dev/null || true)
            id=${id##*/}
            [[ $id =~ ^[A-Za-z0-9_-]+$ ]] || { msg "$name: unexpected answer from $base/translate_file: $(head -c 300 "$tmp/answer")"; exit 1; }
            phase=download attempt=0 first_fail_us=''
            continue
          fi
          cat -- "$tmp/answer" >&3
          finish_output
          if [ "$quiet" -eq 0 ] && [ -t 2 ]; then printf '\n' >&2; fi
          exit 0 ;;
        202) # still translating: {"done": N, "total": M}, Retry-After: 1
          done_n=$(jq -r '.done // 0' <"$tmp/answer" 2>/dev/null || echo 0)
          total_n=$(jq -r '.total // 0' <"$tmp/answer" 2>/dev/null || echo 0)
          now_us
          if [ "$done_n" != "$last_done" ]; then
            last_done=$done_n last_change_us=$now
            if [ "$quiet" -eq 0 ]; then
              if [ -t 2 ]; then printf '\r%s: %s: %s/%s segments\033[K' "$prog" "$name" "$done_n" "$total_n" >&2
              else msg "$name: $done_n/$total_n segments"; fi
            fi
          elif [ $((now - last_change_us)) -gt $((timeout * 1000000)) ]; then
            msg "$name: no progress for ${timeout}s ($done_n/$total_n segments); giving up (-T)"
            exit 1
          fi
          retry_after=$(retry_after_of "$tmp/hdr")
          nap "${retry_after:-1}"
          continue ;;
        429 | 503 | 504)
          reason="HTTP $code"
          retry_after=$(retry_after_of "$tmp/hdr") ;;
        *)
          msg "$name: HTTP $code from $base/$([ "$phase" = upload ] && echo translate_file || echo download_file): $(server_error "$tmp/answer")"
          case $code in
            413) msg "hint: the file is larger than the server takes (limits.max_file_bytes)" ;;
            401 | 403) msg "hint: give the API key with -k KEY or MT_API_KEY" ;;
          esac
          exit 1 ;;
      esac
    fi
    backoff "$name"
  done
fi

# ---------------------------------------------------------------- plain text, by lines
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

# Translates chunk $1 into $tmp/out.$1. Exit 0: done; 1: failed (message printed and
# $tmp/failed created). Few processes per chunk: jq, curl, jq.
translate_chunk() {
  local i=$1 in=${chunks[$1]} first=$(($1 * batch + 1))
  local body=$tmp/req.$i resp=$tmp/resp.$i hdr=$tmp/hdr.$i out=$tmp/out.$i
  local n last where code rc attempt=0 retry_after reason text cpid='' first_fail_us=''
  # Every child of this worker, not just $cpid: a TERM that lands between curl's fork and
  # "cpid=$!" finds cpid empty (seen once in the suite: test_interrupt_text). Not "jobs -p"
  # either: in this background subshell it lists nothing. Then wait for them: a signal is
  # only sent, and the curl outlived the script on a loaded machine (seen in the suite).
  # Without pkill (procps), $cpid as before. INT too: Ctrl-C reaches this worker as well
  # (it does not ignore it as a background command would), and killed it before its curl,
  # which does ignore INT and ran on.
  trap 'pkill -TERM -P "$BASHPID" 2>/dev/null || kill -TERM $cpid 2>/dev/null; wait; exit 143' TERM INT

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
          retry_after=$(retry_after_of "$hdr") ;;
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
    backoff "$where" "$tmp/failed"
  done
}

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
    cat -- "$out" >&3
    rm -f -- "$out" "${chunks[$next_out]}" "$tmp/code.$next_out" "$tmp/err.$next_out"
    unset "finished[$next_out]"
    next_out=$((next_out + 1))
  done
  progress
done
progress 1
finish_output
