#!/usr/bin/env bash
# Several translation directions trained at once on one GPU (one trainer process each),
# from data packs made here by tools/pack_training_data.py (unique pairs with their
# mixture counts, the validation files and the vocabulary), for a machine that has a GPU
# but not ../shared.
#   tools/train_gpu.sh --pack DIR [--pack DIR ...] --pairs "en-fr fr-en ..." --minutes M
#       --out DIR [--size "D E D H F"] [--init-from PAIR=MODEL_DIR ...] [--export DIR]
# A pair takes the pack whose pack.json names its other language (one pack may hold
# several: pack_training_data.py --pack fr=DATA --pack de=DATA). Each direction's model
# directory ends in OUT/<pair> (the selected checkpoint or average, as tools/train.py
# selects on the CPU), its log in OUT/<pair>/train.log. The trainers stop by themselves
# at --minutes (counted from their start, data loading included); a watchdog asks them
# to stop 30 s later still, so that selection and export always run. Each model
# directory gets the record of its data, MODEL/mixture.json (tools/training_record.py,
# from the pack's mixture.json; with the earlier record under --init-from), which
# tools/eval_models.py reads to know the sentences a model saw. --export DIR:
# each directory stored int8 (tools/quantize_model.py) as DIR/<pair>.tar.xz, cut into
# parts of 15 MiB (<pair>.tar.xz.00, .01: `cat` them back together) when larger: what
# comes back through the device's channel (8 files of at most 16 MiB, 64 MiB in all).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { awk 'NR == 1 { next } /^#/ { print; next } { exit }' "$0" >&2; exit 2; }
packs=() inits=() pairs="en-fr fr-en" minutes=8 out='' export_dir=
size="512 6 2 8 1536" lr=7e-4 warmup=800 max_tokens=16384
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --pack) packs+=("$2"); shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --max-tokens) max_tokens=$2; shift 2 ;;
    --init-from) inits+=("$2"); shift 2 ;;
    --export) export_dir=$2; shift 2 ;;
    *) usage ;;
  esac
done
if [ ${#packs[@]} -eq 0 ] || [ -z "$out" ]; then usage; fi
py=${PYTHON:-python3}
read -r d_model enc dec heads ffn <<< "$size"
bf16=(--bf16)
[ "${DEVICE:-cuda}" = cuda ] || bf16=()
# Varying batch shapes make PyTorch's caching allocator grow and split its pool; the
# first French run's first epoch ran at a third of the later epochs' speed.
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pack in "${packs[@]}"; do
  "$py" tools/pack_training_data.py --unpack "$pack" --to "$work/data"
done
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
pids=()
for pair in $pairs; do
  src=${pair%-*} tgt=${pair#*-}
  x=$src; [ "$x" = en ] && x=$tgt
  d=$work/data/$x
  [ -f "$d/spm.model" ] || { echo "train_gpu.sh: no pack holds en-$x (for $pair)" >&2; exit 2; }
  init=() earlier=()
  for spec in "${inits[@]+"${inits[@]}"}"; do
    [ "${spec%%=*}" = "$pair" ] && init=(--init-from "${spec#*=}") earlier=(--earlier "${spec#*=}")
  done
  # The record of the data, before training (as build_bundled_models.sh): a cut-short run
  # is still a model that saw this data.
  if [ -f "$d/mixture.json" ]; then
    "$py" tools/training_record.py "$d/mixture.json" "$out/$pair" "${earlier[@]+"${earlier[@]}"}"
  else
    echo "train_gpu.sh: warning: the pack has no mixture.json for en-$x: $out/$pair gets no record of its data" >&2
  fi
  mkdir -p "$out/$pair" "$work/run-$pair"
  "$py" tools/train.py --device "${DEVICE:-cuda}" --src-lang "$src" --tgt-lang "$tgt" \
      --train-src "$d/train.$src" --train-tgt "$d/train.$tgt" \
      --valid-src "$d/valid.$src.gz" --valid-tgt "$d/valid.$tgt.gz" \
      --spm "$d/spm.model" "${init[@]+"${init[@]}"}" --out "$out/$pair" --run-dir "$work/run-$pair" \
      --d-model "$d_model" --encoder-layers "$enc" --decoder-layers "$dec" --layers "$enc" \
      --heads "$heads" --ffn "$ffn" --max-tokens "$max_tokens" --lr "$lr" --warmup "$warmup" \
      --epochs 100 --time-budget-min "$minutes" --checkpoint-min 1 --average 4 --keep 2 \
      --threads "${THREADS:-3}" "${bf16[@]+"${bf16[@]}"}" --seed 1 \
      --log-every 200 --stop-file "$work/STOP" \
      > "$out/$pair.log" 2>&1 &
  pids+=($!)
done
# The watchdog: a trainer stuck past its budget is asked to stop (then selects and exports).
( sleep "$(awk -v m="$minutes" 'BEGIN { print int(m * 60 + 30) }')"; touch "$work/STOP" ) &
watchdog=$!
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
kill "$watchdog" 2>/dev/null || true
for pair in $pairs; do
  mv "$out/$pair.log" "$out/$pair/train.log"
  # A trainer that did not finish shows more: its log comes back only on stdout.
  if grep -q "done in" "$out/$pair/train.log"; then n=4; else n=40; fi
  echo "== $pair"; tail -n "$n" "$out/$pair/train.log"
done
if [ -n "$export_dir" ]; then
  # One archive per direction, so that a part lost on the way costs one model only.
  mkdir -p "$export_dir" "$work/int8"
  for pair in $pairs; do
    [ -f "$out/$pair/model.safetensors" ] || continue
    "$py" tools/quantize_model.py "$out/$pair" "$work/int8/$pair" >/dev/null
    tar -C "$work/int8" -cf - "$pair" | xz -6 -T0 > "$work/$pair.tar.xz"
    if [ "$(stat -c %s "$work/$pair.tar.xz")" -gt $((15 * 1024 * 1024)) ]; then
      split -b 15M -d "$work/$pair.tar.xz" "$export_dir/$pair.tar.xz."
    else
      mv "$work/$pair.tar.xz" "$export_dir/"
    fi
  done
  for pair in $pairs; do
    echo "== $pair"; grep -E "parameters|train pairs|selected|done in" "$out/$pair/train.log" || true
  done
  ls -l "$export_dir"
fi
exit "$status"
