#!/usr/bin/env bash
# Translates a test set with mt-translate (and, with --reference, with the PyTorch
# reference from the same weights) and prints BLEU and chrF against the raw references.
#   tools/evaluate.sh MODEL_DIR SRC_FILE REF_FILE [--beam N] [--threads N] [--reference]
# SRC_FILE/REF_FILE may be gzip'd. Example (the figures in models/README.md):
#   tools/evaluate.sh models/en-de ../shared/data/multi30k/test_2016_flickr.en.gz \
#       ../shared/data/multi30k/test_2016_flickr.de.gz --beam 4 --reference
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
model=$1 src=$2 ref=$3
shift 3
beam=4 threads=2 with_reference=0
while [ $# -gt 0 ]; do
  case $1 in
    --beam) beam=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reference) with_reference=1; shift ;;
    *) echo "evaluate.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
cli=${MT_BUILD_DIR:-build}/cli/mt-translate
[ -x "$cli" ] || { echo "evaluate.sh: $cli not built (run scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zcat -f "$src" > "$work/src"

start=$(date +%s.%N)
"$cli" --model "$model" --beam "$beam" --threads "$threads" < "$work/src" > "$work/hyp.c"
end=$(date +%s.%N)
printf 'engine    beam %s: ' "$beam"
/usr/bin/python3 tools/bleu.py "$work/hyp.c" "$ref" --chrf | tr '\n' ' '
awk -v a="$start" -v b="$end" 'BEGIN { printf "(%.1f s)\n", b - a }'

if [ "$with_reference" = 1 ]; then
  start=$(date +%s.%N)
  /usr/bin/python3 tools/reference.py --model "$model" --beam "$beam" --threads "$threads" \
    < "$work/src" > "$work/hyp.ref"
  end=$(date +%s.%N)
  printf 'reference beam %s: ' "$beam"
  /usr/bin/python3 tools/bleu.py "$work/hyp.ref" "$ref" --chrf | tr '\n' ' '
  awk -v a="$start" -v b="$end" 'BEGIN { printf "(%.1f s)\n", b - a }'
  printf 'lines that differ between engine and reference: %s of %s\n' \
    "$(paste -d '\t' "$work/hyp.c" "$work/hyp.ref" | awk -F'\t' '$1 != $2' | wc -l)" "$(wc -l < "$work/src")"
fi
