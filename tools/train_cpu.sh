#!/usr/bin/env bash
# The next bundled models trained on this machine's CPUs when no GPU is lent (issue 28):
# the recipe of the GPU call in training/README.md (the same mixtures, vocabularies and
# size), one trainer per direction, resumable across sessions.
#   tools/train_cpu.sh [--pairs "en-fr fr-en"] [--minutes 140] [--threads 1] [--root runs/cpu]
#                      [--data runs] [--size "320 4 2 5 1280"] [--epochs 100]
# Reads the mixtures DATA/mix-<x>-d20/ (train.*.gz with the number copies, valid.*.gz) and
# the vocabularies and records DATA/pack-d20/<x>.spm.model, <x>.mixture.json that
# training/README.md ("Here, before the session") makes. --size: d_model, encoder layers,
# decoder layers, heads, FFN (default: the GPU call's; a resumed run must keep its own).
# --epochs: where a run stops at the latest, counted over all its calls (default 100:
# the time budget ends a call long before). Writes ROOT/run-<pair>/ (checkpoints with the optimizer: what a later
# call resumes from, automatically when they exist) and ROOT/<pair>/ (the model directory,
# rewritten at every checkpoint, so a cut-short run still leaves a model; with its
# mixture.json), logs in ROOT/<pair>.log. Stop early: touch ROOT/STOP (then checkpoint,
# selection and export run as at the end of the budget).
# Two cores: two directions with one thread each, or one with --threads 2.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" >&2; exit 2; }
pairs="en-fr fr-en" minutes=140 threads=1 root=runs/cpu data=runs size="320 4 2 5 1280" epochs=100
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --root) root=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    *) usage ;;
  esac
done
py=${PYTHON:-/usr/bin/python3}
read -r d_model enc dec heads ffn <<< "$size"
rm -f "$root/STOP"
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
[ -f /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] && export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
  MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
pids=()
for pair in $pairs; do
  src=${pair%-*} tgt=${pair#*-}
  x=$src; [ "$x" = en ] && x=$tgt
  d=$data/mix-$x-d20 spm=$data/pack-d20/$x.spm.model
  for f in "$d/train.$src.gz" "$d/train.$tgt.gz" "$d/valid.$src.gz" "$spm" "$data/pack-d20/$x.mixture.json"; do
    [ -f "$f" ] || { echo "train_cpu.sh: $f is missing: make it as training/README.md says" >&2; exit 2; }
  done
  mkdir -p "$root/run-$pair" "$root/$pair"
  [ -f "$root/$pair/mixture.json" ] || "$py" tools/training_record.py "$data/pack-d20/$x.mixture.json" "$root/$pair"
  resume=()
  ls "$root/run-$pair"/checkpoint_*.pt >/dev/null 2>&1 && resume=(--resume)
  echo "train_cpu.sh: $pair ${resume[*]:-from scratch}, $minutes minutes, $threads thread(s); log $root/$pair.log"
  "$py" tools/train.py --device cpu --src-lang "$src" --tgt-lang "$tgt" \
      --train-src "$d/train.$src.gz" --train-tgt "$d/train.$tgt.gz" \
      --valid-src "$d/valid.$src.gz" --valid-tgt "$d/valid.$tgt.gz" \
      --spm "$spm" --out "$root/$pair" --run-dir "$root/run-$pair" \
      --d-model "$d_model" --encoder-layers "$enc" --decoder-layers "$dec" --layers "$enc" \
      --heads "$heads" --ffn "$ffn" --max-tokens 4096 --lr 1e-3 --warmup 1000 --epochs "$epochs" \
      --time-budget-min "$minutes" --checkpoint-min 6 --average 4 --keep 2 --threads "$threads" \
      --bf16 --seed 1 --log-every 100 --stop-file "$root/STOP" "${resume[@]+"${resume[@]}"}" \
      >> "$root/$pair.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for pair in $pairs; do echo "== $pair"; grep -E "checkpoint|selected|done in" "$root/$pair.log" | tail -n 3; done
exit "$status"
