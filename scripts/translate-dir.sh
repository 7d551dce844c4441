#!/usr/bin/env bash
# translate-dir.sh: translates every file of a directory tree, in every format mt-server
# takes, through a running mt-server, one file after another (each with translate-file.sh:
# plain text in parallel requests, other formats through /translate_file).
#
#   scripts/translate-dir.sh -s en -t de [-o OUTDIR] [-f] [translate-file options] INDIR
#
# INDIR/PATH/NAME.EXT becomes OUTDIR/PATH/NAME.EXT: the same names, in a target directory
# (default OUTDIR: INDIR's path with ".TGT" added, e.g. docs -> docs.de). Hidden files and
# directories are left out; files in a format the server does not take are reported by name
# and skipped. The server and the language pair are checked before anything is created, so
# a wrong pair or a dead server leaves no empty OUTDIR. Outputs newer than their input are
# skipped unless -f. Each file is written under a temporary name and renamed when
# complete; an error or Ctrl-C (exit 130) leaves the finished files, no partial one, and
# removes the directories this run created that stayed empty. Stops at the first file
# that fails.
set -euo pipefail

prog=translate-dir
here=$(cd "$(dirname "$0")" && pwd)

usage() {
  cat <<'EOF'
usage: translate-dir.sh -s SRC -t TGT [options] INDIR
  -o OUTDIR  where the translations go, under their own names and subdirectories
             (default: INDIR.TGT, e.g. docs -> docs.de)
  -f         translate again even when an output is newer than its input
  -s, -t, -u URL, -j JOBS, -b LINES, -r N, -W SEC, -T SEC, -k KEY, -q: as translate-file.sh
Every file under INDIR in a format the server takes (.txt through /translate; .html, .htm,
.srt, .docx, .odt or whatever its /frontend/settings lists through /translate_file) is
translated; others are listed as skipped. Hidden files and directories are left out.
Exit status: 0 done, 1 a file failed, 2 usage error or a language pair the server does
not serve, 130 interrupted.
EOF
}

die_usage() {
  printf '%s: %s\n' "$prog" "$1" >&2
  printf "try '%s -h'\n" "${0##*/}" >&2
  exit 2
}

msg() { printf '%s: %s\n' "$prog" "$*" >&2; }

src='' tgt='' outdir='' force=0 quiet=0
pass=() # options handed to translate-file.sh
while getopts ':s:t:u:j:b:r:W:T:k:o:fqh' opt; do
  case $opt in
    o) outdir=$OPTARG ;;
    f) force=1 ;;
    q) quiet=1; pass+=(-q) ;;
    h) usage; exit 0 ;;
    s) src=$OPTARG; pass+=(-s "$OPTARG") ;;
    t) tgt=$OPTARG; pass+=(-t "$OPTARG") ;;
    u | j | b | r | W | T | k) pass+=("-$opt" "$OPTARG") ;;
    :) die_usage "option -$OPTARG needs a value" ;;
    *) die_usage "unknown option -$OPTARG" ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || die_usage "give exactly one INDIR"
[ -n "$src" ] || die_usage "missing -s SRC (source language)"
[ -n "$tgt" ] || die_usage "missing -t TGT (target language)"
[ -d "$1" ] || { msg "$1 is not a directory"; exit 2; }
indir=$(cd "$1" && pwd)
[ -n "$outdir" ] || outdir=$indir.$tgt
case $outdir in /*) ;; *) outdir=$PWD/$outdir ;; esac
outdir=${outdir%/}
[ "$outdir" != "$indir" ] || die_usage "OUTDIR must differ from INDIR (the inputs would be overwritten)"
if [ -e "$outdir" ] && [ ! -d "$outdir" ]; then
  msg "$outdir exists and is not a directory"
  exit 2
fi

child='' created=() # translate-file.sh running now; directories this run made
cleanup() {
  local i
  trap '' INT TERM
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  # deepest first; only those left empty
  for ((i = ${#created[@]} - 1; i >= 0; i--)); do rmdir -- "${created[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Server, pair and formats, before anything is created (translate-file.sh -C writes nothing).
check=("$here/translate-file.sh" "${pass[@]}" -C)
exts=$("${check[@]}") || exit $?
declare -A takes=()
while IFS= read -r e; do [ -z "$e" ] || takes[$e]=1; done <<<"$exts"

# Every file under INDIR but hidden ones and OUTDIR itself (when it lies inside INDIR).
files=() skipped=()
while IFS= read -r -d '' f; do
  rel=${f#"$indir"/}
  name=${f##*/}
  ext=''
  if [[ $name == ?*.* ]]; then ext=${name##*.}; ext=${ext,,}; fi
  if [ -z "$ext" ] || [ -n "${takes[$ext]:-}" ]; then
    files+=("$rel")
  else
    skipped+=("$rel")
  fi
done < <(find "$indir" -mindepth 1 \( -name '.*' -o -path "$outdir" \) -prune -o -type f -print0 | sort -z)

for rel in "${skipped[@]}"; do
  ext=${rel##*.}
  msg "skipped $rel: .${ext,,} is not a format the server translates"
done
if [ "${#files[@]}" -eq 0 ]; then
  msg "no files to translate in $indir (the server takes: $(printf '.%s ' "${!takes[@]}"))"
  exit 0
fi

# mkdirs DIR: creates DIR and its missing parents, remembering each for the cleanup.
mkdirs() {
  local d=$1 missing=()
  while [ ! -d "$d" ]; do
    missing+=("$d")
    d=$(dirname -- "$d")
  done
  local i
  for ((i = ${#missing[@]} - 1; i >= 0; i--)); do
    mkdir -- "${missing[i]}"
    created+=("${missing[i]}")
  done
}

k=0 done_files=0 fresh=0 n=${#files[@]}
for rel in "${files[@]}"; do
  k=$((k + 1))
  f=$indir/$rel
  out=$outdir/$rel
  if [ "$force" -eq 0 ] && [ -f "$out" ] && [ "$out" -nt "$f" ]; then
    [ "$quiet" -eq 1 ] || msg "[$k/$n] $rel: up to date, skipped"
    fresh=$((fresh + 1))
    continue
  fi
  [ "$quiet" -eq 1 ] || msg "[$k/$n] $rel -> $out"
  mkdirs "$(dirname -- "$out")"
  # In the background and waited for, so that Ctrl-C reaches the trap at once.
  "$here/translate-file.sh" "${pass[@]}" -o "$out" -- "$f" &
  child=$!
  status=0
  wait "$child" || status=$?
  child=''
  if [ "$status" -ne 0 ]; then
    msg "$rel failed; stopping ($done_files of $n files translated)"
    exit 1
  fi
  done_files=$((done_files + 1))
done
created=() # a complete run keeps its directories
if [ "$quiet" -eq 0 ]; then
  msg "$done_files translated, $fresh up to date, ${#skipped[@]} skipped, in $outdir"
fi
