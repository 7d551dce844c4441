#!/usr/bin/env bash
# Both directions of one language pair trained at once on one GPU, from a data pack made
# here by tools/pack_training_data.py (unique pairs with their mixture counts, the
# validation files and the vocabulary), for a machine that has a GPU but not ../shared.
#   tools/train_gpu.sh --pack DIR --pairs "en-fr fr-en" --minutes M --out DIR [--size "D E D H F"]
# Each direction's model directory ends in OUT/<pair> (the selected checkpoint or average,
# as tools/train.py selects on the CPU), its log in OUT/<pair>/train.log. The trainers stop
# by themselves at --minutes (counted from their start, data loading included); a watchdog
# asks them to stop 30 s later still, so that selection and export always run.
set -euo pipefail
cd "$(dirname "$0")/.."
pack= pairs="en-fr fr-en" minutes=8 out= size="512 6 2 8 1536" lr=7e-4 warmup=800 max_tokens=16384
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --max-tokens) max_tokens=$2; shift 2 ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
[ -n "$pack" ] && [ -n "$out" ] || { sed -n '2,9p' "$0" >&2; exit 2; }
py=${PYTHON:-python3}
read -r d_model enc dec heads ffn <<< "$size"
work=$(mktemp -d)
"$py" tools/pack_training_data.py --unpack "$pack" --to "$work"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
pids=()
for pair in $pairs; do
  src=${pair%-*} tgt=${pair#*-}
  mkdir -p "$out/$pair" "$work/run-$pair"
  "$py" tools/train.py --device "${DEVICE:-cuda}" --src-lang "$src" --tgt-lang "$tgt" \
      --train-src "$work/train.$src" --train-tgt "$work/train.$tgt" \
      --valid-src "$work/valid.$src.gz" --valid-tgt "$work/valid.$tgt.gz" \
      --spm "$work/spm.model" --out "$out/$pair" --run-dir "$work/run-$pair" \
      --d-model "$d_model" --encoder-layers "$enc" --decoder-layers "$dec" --layers "$enc" \
      --heads "$heads" --ffn "$ffn" --max-tokens "$max_tokens" --lr "$lr" --warmup "$warmup" \
      --epochs 100 --time-budget-min "$minutes" --checkpoint-min 1 --average 4 --keep 2 \
      --threads 4 --bf16 --seed 1 --log-every 200 --stop-file "$work/STOP" \
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
  tail -n 4 "$out/$pair/train.log"
done
rm -rf "$work"
exit "$status"
