#!/usr/bin/env bash
# translate-dir.sh: translates every *.txt file of a directory through a running mt-server,
# one file after another (each with translate-file.sh's parallel requests).
#
#   scripts/translate-dir.sh -s en -t de [-o OUTDIR] [-f] [translate-file options] INDIR
#
# INDIR/NAME.txt becomes OUTDIR/NAME.txt (default OUTDIR: INDIR's path with ".TGT" added,
# e.g. docs -> docs.de). Outputs newer than their input are skipped unless -f; a file is
# written under a temporary name and renamed when complete, so an interrupted run never
# leaves a partial translation behind. Stops at the first file that fails.
set -euo pipefail

prog=translate-dir
here=$(cd "$(dirname "$0")" && pwd)

usage() {
  cat <<'EOF'
usage: translate-dir.sh -s SRC -t TGT [options] INDIR
  -o OUTDIR  where the translations go (default: INDIR.TGT, e.g. docs.de)
  -f         translate again even when an output is newer than its input
  -s, -t, -u URL, -j JOBS, -b LINES, -r N, -T SEC, -k KEY, -q: as translate-file.sh
Exit status: 0 done, 1 a file failed, 2 usage error.
EOF
}

die_usage() {
  printf '%s: %s\n' "$prog" "$1" >&2
  usage >&2
  exit 2
}

src='' tgt='' outdir='' force=0 quiet=0
pass=() # options handed to translate-file.sh
while getopts ':s:t:u:j:b:r:T:k:o:fqh' opt; do
  case $opt in
    o) outdir=$OPTARG ;;
    f) force=1 ;;
    q) quiet=1; pass+=(-q) ;;
    h) usage; exit 0 ;;
    s) src=$OPTARG; pass+=(-s "$OPTARG") ;;
    t) tgt=$OPTARG; pass+=(-t "$OPTARG") ;;
    u | j | b | r | T | k) pass+=("-$opt" "$OPTARG") ;;
    :) die_usage "option -$OPTARG needs a value" ;;
    *) die_usage "unknown option -$OPTARG" ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || die_usage "give exactly one INDIR"
[ -n "$src" ] || die_usage "missing -s SRC (source language)"
[ -n "$tgt" ] || die_usage "missing -t TGT (target language)"
[ -d "$1" ] || { printf '%s: %s is not a directory\n' "$prog" "$1" >&2; exit 2; }
indir=$(cd "$1" && pwd)
[ -n "$outdir" ] || outdir=$indir.$tgt
mkdir -p -- "$outdir"
outdir=$(cd "$outdir" && pwd)
[ "$outdir" != "$indir" ] || die_usage "OUTDIR must differ from INDIR (the inputs would be overwritten)"

shopt -s nullglob
files=("$indir"/*.txt)
if [ "${#files[@]}" -eq 0 ]; then
  printf '%s: no *.txt files in %s\n' "$prog" "$indir" >&2
  exit 0
fi

part=''
trap '[ -z "$part" ] || rm -f -- "$part"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

k=0 done_files=0 skipped=0
for f in "${files[@]}"; do
  k=$((k + 1))
  name=${f##*/}
  out=$outdir/$name
  if [ "$force" -eq 0 ] && [ -f "$out" ] && [ "$out" -nt "$f" ]; then
    [ "$quiet" -eq 1 ] || printf '%s: [%d/%d] %s: up to date, skipped\n' "$prog" "$k" "${#files[@]}" "$name" >&2
    skipped=$((skipped + 1))
    continue
  fi
  [ "$quiet" -eq 1 ] || printf '%s: [%d/%d] %s -> %s\n' "$prog" "$k" "${#files[@]}" "$name" "$out" >&2
  part=$(mktemp "$outdir/.$name.XXXXXX")
  if ! "$here/translate-file.sh" "${pass[@]}" -- "$f" >"$part"; then
    printf '%s: %s failed; stopping (%d of %d files translated)\n' "$prog" "$name" "$done_files" "${#files[@]}" >&2
    exit 1
  fi
  chmod 644 -- "$part"
  mv -f -- "$part" "$out"
  part=''
  done_files=$((done_files + 1))
done
[ "$quiet" -eq 1 ] || printf '%s: %d translated, %d up to date, in %s\n' "$prog" "$done_files" "$skipped" "$outdir" >&2
