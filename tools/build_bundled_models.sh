#!/usr/bin/env bash
# The bundled models of one language pair (en<->de or en<->fr), from the corpus files in
# ../shared/data to models/<pair>, in one command (models/README.md explains the recipe):
#   1. tools/prepare_corpus.py: the Tatoeba + debian-l10n mixture (+ --corpus extras; no
#      Multi30k unless --multi30k-times asks), a selection set and the joint 16k
#      SentencePiece vocabulary with byte fallback for every pair (emoji and rare symbols
#      spelled as bytes, not <unk>: issue 28; runs/data-de/, runs/data-fr/; a --continue
#      run keeps its model's vocabulary, and the mixture has no symbol copies when that
#      vocabulary lacks byte fallback: runs/data-de-nobf/), and the record of that data in
#      each model directory (mixture.json: tools/training_record.py; tools/eval_models.py
#      reads it to know which sentences a model has seen);
#   2. tools/train.py twice at once, one thread each (two cores: two directions), with
#      bf16 autocast, a checkpoint every 12 minutes and selection by validation NLL;
#   3. tools/eval_models.py: the quality table (old models from git, if given, and new).
# Options:
#   --minutes N     training budget of each direction (default 140)
#   --continue      continue the committed models (their weights, vocabulary and schedule
#                   position; a fresh optimizer warming up over 300 steps) instead of
#                   training from scratch: run it again on a fresh machine for more training
#   --continue-from DIR   the same, from DIR/<pair> (e.g. a directory where a run that has not
#                   yet reached the quality of the shipped models is committed)
#   --out DIR       write DIR/<pair> instead of models/<pair>
#   --seed N        corpus shuffling, vocabulary sample and initialisation (default 1)
#   --pairs "en-de de-en"   which directions, all of one language pair: "en-de de-en"
#                   (default), "en-fr fr-en" or one of them
#   --multi30k-times N   copies of Multi30k in the mixture (default 0: Multi30k's terms are
#                   non-commercial, so it is an evaluation set only and models trained on it
#                   may not be used commercially; the en-de models shipped so far had 3).
#                   N > 0 prints a warning saying so (the data directory's name: -m30kN)
#   --tatoeba-times N    copies of Tatoeba in the mixture (default 2 for en-de, 3 for
#                   en-fr); a continued run may weigh everyday sentences more (the data
#                   directory's name says so)
#   --threads N     threads of each direction's trainer (default 1; 2 when training one
#                   direction on two cores)
#   --run-dir DIR   checkpoints and logs in DIR/<pair> (default runs)
#   --size "D L H F"   d_model, layers (encoder and decoder each), heads and FFN width of a
#                   model (default "256 3 4 1024"; a continued run must give its model's)
#   --corpus NAME:N add the corpus tools/corpus/NAME.py extracts (manpages, handbook;
#                   written to runs/corpus/ on first use) N times to the mixture; repeatable
#                   (the data directory's name says which: -NAMEN)
#   --vocab-size N  pieces of a from-scratch vocabulary (default 16000)
#   --prepare-only  prepare the data directory, print its path and stop (no training)
# Runs in the foreground; start it with nohup ... & to keep it in the background. Logs:
# runs/<pair>/train.log. A cut-short run still leaves a usable model: the model directory
# is rewritten at every checkpoint; rerun with the same options plus RESUME=1 to resume
# from runs/<pair>/.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" >&2; exit 2; }
minutes=140 seed=1 cont=0 pairs="en-de de-en" from=models out=models m30k=0 tat='' threads=1 runs=runs corpora=() size="256 3 4 1024"
prepare_only=0 vocab_size=16000
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --continue) cont=1; shift ;;
    --continue-from) cont=1; from=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --multi30k-times) m30k=$2; shift 2 ;;
    --tatoeba-times) tat=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --run-dir) runs=$2; shift 2 ;;
    --corpus) corpora+=("$2"); shift 2 ;;
    --size) size=$2; shift 2 ;;
    --vocab-size) vocab_size=$2; shift 2 ;;
    --prepare-only) prepare_only=1; shift ;;
    *) usage ;;
  esac
done
shared=${MT_SHARED_DIR:-../shared}
lang=
for pair in $pairs; do
  case $pair in
    en-de|de-en) l=de ;;
    en-fr|fr-en) l=fr ;;
    *) echo "unknown pair $pair (en-de, de-en, en-fr, fr-en)" >&2; exit 2 ;;
  esac
  [ -z "$lang" ] || [ "$lang" = "$l" ] || { echo "--pairs: one language pair at a time" >&2; exit 2; }
  lang=$l
done
case $m30k in ''|*[!0-9]*) echo "--multi30k-times: a count, not '$m30k'" >&2; exit 2 ;; esac
if [ "$m30k" -gt 0 ]; then
  echo "warning: --multi30k-times $m30k trains on Multi30k, whose licence is non-commercial" \
       "(Flickr30K's terms: non-commercial research and education only); the models will be" \
       "too. Leave it at 0 (the default) for models others may use." >&2
fi
if [ "$lang" = de ]; then default_tat=2; else default_tat=3; fi
: "${tat:=$default_tat}"
# Byte fallback for every pair. Only a continued model whose vocabulary lacks it (the
# en-de / de-en models shipped before issue 28: NFKC, no byte pieces) keeps that
# vocabulary's settings: no symbol copies, whose bytes it could not spell.
vocab_opts=() data_bf=
if [ "$cont" = 1 ]; then
  first=${pairs%% *}
  [ -f "$from/$first/source.spm" ] || { echo "--continue: no $from/$first/source.spm" >&2; exit 2; }
  bytes=$(/usr/bin/python3 -c 'import sys, sentencepiece as s
p = s.SentencePieceProcessor(model_file=sys.argv[1])
print(sum(p.IsByte(i) for i in range(p.GetPieceSize())))' "$from/$first/source.spm")
  [ "$bytes" -gt 0 ] || { vocab_opts=(--no-byte-fallback); data_bf=-nobf; }
fi
# (runs/data, without a language, was the en-de mixture with Multi30k x3; runs/data-de
# before issue 28 the one without byte fallback: a from-scratch run checks mixture.json.)
data=runs/data-$lang$data_bf
[ "$m30k" = 0 ] || data=$data-m30k$m30k
[ "$tat" = "$default_tat" ] || data=$data-tatoeba$tat
corpus_opts=()
for spec in "${corpora[@]}"; do
  name=${spec%%:*} times=${spec#*:}
  [ -f "tools/corpus/$name.py" ] || { echo "--corpus: no tools/corpus/$name.py" >&2; exit 2; }
  data=$data-$name$times
  corpus=runs/corpus/$name.en-$lang.tsv.gz
  [ -f "$corpus" ] || /usr/bin/python3 "tools/corpus/$name.py" --lang "$lang" --out "$corpus" --shared "$shared"
  corpus_opts+=(--extra "$corpus:$times")
done
# A data directory prepared for the other vocabulary kind is prepared again.
want_bf=true
[ -z "$data_bf" ] || want_bf=false
has_bf=$( [ -f "$data/mixture.json" ] && /usr/bin/python3 -c 'import json, sys
print(str(json.load(open(sys.argv[1])).get("byte_fallback", False)).lower())' "$data/mixture.json" || echo none)
if [ "$cont" = 1 ]; then
  # A continued run tokenizes with its model's own vocabulary: no new one is trained.
  if [ ! -f "$data/train.en.gz" ] || [ "$has_bf" != "$want_bf" ]; then
    /usr/bin/python3 tools/prepare_corpus.py --shared "$shared" --out "$data" --seed "$seed" \
        --lang "$lang" --multi30k-times "$m30k" --tatoeba-times "$tat" "${corpus_opts[@]}" \
        "${vocab_opts[@]+"${vocab_opts[@]}"}" --skip-vocab
  fi
elif [ ! -f "$data/spm.model" ] || [ ! -f "$data/train.en.gz" ] || [ "$has_bf" != true ]; then
  /usr/bin/python3 tools/prepare_corpus.py --shared "$shared" --out "$data" --seed "$seed" \
      --lang "$lang" --multi30k-times "$m30k" --tatoeba-times "$tat" "${corpus_opts[@]}" \
      --vocab-size "$vocab_size"
fi
if [ "$prepare_only" = 1 ]; then
  echo "$data"
  exit 0
fi
export OPENBLAS_CORETYPE=SkylakeX LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
       MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
read -r d_model layers heads ffn <<< "$size"
pids=()
for pair in $pairs; do
  src=${pair%-*} tgt=${pair#*-}
  mkdir -p "$runs/$pair" "$out/$pair"
  # The record of the training data (tools/eval_models.py's everyday-unseen reads it),
  # written before training so that a model cut short has it too; a continued model has
  # also seen what its starting point saw (kept under "earlier").
  earlier=()
  [ "$cont" = 0 ] || earlier=(--earlier "$from/$pair")
  /usr/bin/python3 tools/training_record.py "$data/mixture.json" "$out/$pair" "${earlier[@]}"
  extra=(--spm "$data/spm.model" --warmup 1000)
  if [ "$cont" = 1 ]; then
    extra=(--init-from "$from/$pair" --warmup 300)
  fi
  if [ "${RESUME:-0}" = 1 ]; then extra+=(--resume); fi
  /usr/bin/python3 tools/train.py --src-lang "$src" --tgt-lang "$tgt" \
      --train-src "$data/train.$src.gz" --train-tgt "$data/train.$tgt.gz" \
      --valid-src "$data/valid.$src.gz" --valid-tgt "$data/valid.$tgt.gz" \
      --out "$out/$pair" --run-dir "$runs/$pair" "${extra[@]}" \
      --d-model "$d_model" --layers "$layers" --heads "$heads" --ffn "$ffn" --max-tokens 4096 --lr 1e-3 \
      --epochs 100 --time-budget-min "$minutes" --checkpoint-min 12 --average 4 --keep 3 \
      --threads "$threads" --bf16 --seed "$seed" --log-every 100 >> "$runs/$pair/train.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
[ "$status" = 0 ] || { echo "training failed: see $runs/*/train.log" >&2; exit 1; }
args=()
for pair in $pairs; do args+=("$pair=$out/$pair"); done
/usr/bin/python3 tools/eval_models.py "${args[@]}" --show-examples
