#!/bin/bash
# Speed benchmark (not a test): the C engine (build/cli/mt-translate) against the
# PyTorch reference (tools/reference.py) on the same model, input file, beam,
# threads, batch size and length cap, measured in one run. Prints seconds,
# sentences/s and target tokens/s for each engine and the ratio C/PyTorch;
# speed claims are always that ratio, never a bare time.
#
#   bench/bench_engine.sh [--model base|bundled|both] [--lines N] [--beam N]
#       [--threads N] [--batch-size N] [--max-length N] [--repeat N]
#       [--cli PATH] [--bundled-dir DIR] [--cache DIR] [--keep DIR]
#
# Models:
#   base     a random model with the OPUS-MT transformer-base dimensions
#            (d 512, 6+6 layers, 8 heads, ffn 2048, vocabulary 58,101, fp32),
#            made once by bench/make_base_model.py into the cache directory.
#            Input: the first --lines (default 200) lines of Multi30k
#            test_2016_flickr.en, turned into source ids once
#            (bench/text_to_ids.py) and fed to both engines with --input ids,
#            so tokenization is not timed. Decoding is capped at --max-length
#            (default 64) steps, as a random model may not stop by itself.
#   bundled  models/en-de (--bundled-dir): text input (each engine tokenizes),
#            the first --lines (default all 1000) lines, the model's own
#            max_length unless --max-length is given explicitly.
#
# Per engine: one warm-up run (8 lines, discarded), then --repeat (default 1)
# timed runs of the whole file and as many of a single empty line (start-up +
# model load, nothing translated); the fastest of each is kept. "seconds" is the
# wall time of the whole command, model load included; "excl. load" subtracts
# the empty-line run. Tokens are the generated target ids (eos not counted),
# read from --output ids; both outputs are compared line by line.
#
# Nothing is built here: build first (ninja -C build). Run on an idle machine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
SHARED=${MT_SHARED_DIR:-$ROOT/../shared}
TEST_FILE=$SHARED/data/multi30k/test_2016_flickr.en.gz

which_model=both
lines=
beam=4
threads=2
batch=32
max_length=
repeat=1
cli=$ROOT/build/cli/mt-translate
bundled_dir=$ROOT/models/en-de
cache=${MT_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mt-bench}
keep=

# usage CODE: the header comment, on stderr unless CODE is 0.
usage() {
    local text
    text=$(awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}")
    if (($1)); then echo "$text" >&2; else echo "$text"; fi
    exit "$1"
}
die() { echo "bench_engine: $*" >&2; exit 1; }
need_int() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive integer, got '$2'"; }

while (($#)); do
    opt=$1
    case $opt in
        -h|--help) usage 0 ;;
        --model|--lines|--beam|--threads|--batch-size|--max-length|--repeat|--cli|--bundled-dir|--cache|--keep)
            (($# >= 2)) || die "$opt needs a value"
            val=$2; shift 2 ;;
        *) echo "bench_engine: unknown option '$opt'" >&2; usage 2 ;;
    esac
    case $opt in
        --model) [[ $val =~ ^(base|bundled|both)$ ]] || die "--model: base, bundled or both"
                 which_model=$val ;;
        --lines) need_int "$opt" "$val"; lines=$val ;;
        --beam) need_int "$opt" "$val"; beam=$val ;;
        --threads) need_int "$opt" "$val"; threads=$val ;;
        --batch-size) need_int "$opt" "$val"; batch=$val ;;
        --max-length) need_int "$opt" "$val"; max_length=$val ;;
        --repeat) need_int "$opt" "$val"; repeat=$val ;;
        --cli) cli=$val ;;
        --bundled-dir) bundled_dir=$val ;;
        --cache) cache=$val ;;
        --keep) keep=$val ;;
    esac
done

[[ -x $cli ]] || die "$cli not found: build it first (meson setup build && ninja -C build), or pass --cli PATH"
[[ -x $PYTHON ]] || die "$PYTHON not found (set PYTHON=...)"
[[ -f $TEST_FILE ]] || die "$TEST_FILE not found (set MT_SHARED_DIR)"
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or newer is needed (EPOCHREALTIME)"
for var in OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS; do
    [[ -z ${!var:-} ]] || echo "bench_engine: note: $var=${!var} is set in the environment" >&2
done

if [[ -n $keep ]]; then
    work=$keep
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/mt-bench.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi

# The base model, regenerated when its generators change.
base_model() {
    local dir=$cache/base-58101 stamp
    stamp=$(cat "$ROOT/bench/make_base_model.py" "$ROOT/tools/make_test_model.py" | sha256sum | cut -c1-16)
    if [[ ! -f $dir/model.safetensors || $(cat "$dir/.stamp" 2>/dev/null) != "$stamp" ]]; then
        echo "bench_engine: generating the base model in $dir (once; about 300 MB)" >&2
        rm -rf "$dir" "$dir.tmp"
        mkdir -p "$cache"
        "$PYTHON" "$ROOT/bench/make_base_model.py" "$dir.tmp" >&2
        echo "$stamp" > "$dir.tmp/.stamp"
        mv "$dir.tmp" "$dir"
    fi
    echo "$dir"
}

now() { echo "${EPOCHREALTIME/,/.}"; }

# time_cmd OUT_FILE INPUT_FILE CMD...: runs CMD < INPUT > OUT, prints its wall seconds.
time_cmd() {
    local out=$1 in=$2 t0 t1
    shift 2
    t0=$(now)
    "$@" < "$in" > "$out" 2> "$out.err" || { cat "$out.err" >&2; die "failed: $*"; }
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

# best_of N OUT IN CMD...: the fastest of N timed runs.
best_of() {
    local n=$1 best='' t i
    shift
    for ((i = 0; i < n; i++)); do
        t=$(time_cmd "$@")
        best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN { print (a < b ? a : b) }')
    done
    echo "$best"
}

count_tokens() { awk '{ n += NF } END { print n + 0 }' "$1"; }

# bench_one LABEL MODEL_DIR INPUT_FILE INPUT_KIND DESCRIPTION [extra search args...]
bench_one() {
    local label=$1 model=$2 input=$3 kind=$4 desc=$5
    shift 5
    local common=(--model "$model" --beam "$beam" --threads "$threads" --batch-size "$batch"
                  --input "$kind" --output ids "$@")
    # float32 named: a stored int8 directory (the bundled models) runs int8 by default,
    # and the comparison is with the reference's float32 (on the same weights q * scale).
    local c_cmd=("$cli" "${common[@]}" --compute-type float32)
    local py_cmd=("$PYTHON" "$ROOT/tools/reference.py" "${common[@]}")
    local n_lines warm=$work/$label.warm.in empty=$work/empty.in
    n_lines=$(wc -l < "$input")
    head -n 8 "$input" > "$warm"
    printf '\n' > "$empty"

    echo
    echo "== $label: $desc"
    local cap=${2:-"the model's own"}
    echo "   $n_lines lines, beam $beam, $threads thread(s), batch $batch, fp32, max length $cap"
    local engine cmd secs load toks stamp
    declare -A T L N
    stamp=$(stat -L -c '%s %Y' "$model/model.safetensors")
    for engine in C PyTorch; do
        if [[ $engine == C ]]; then cmd=("${c_cmd[@]}"); else cmd=("${py_cmd[@]}"); fi
        time_cmd "$work/$label.$engine.warm.out" "$warm" "${cmd[@]}" > /dev/null
        secs=$(best_of "$repeat" "$work/$label.$engine.out" "$input" "${cmd[@]}")
        load=$(best_of "$repeat" "$work/$label.$engine.load.out" "$empty" "${cmd[@]}")
        toks=$(count_tokens "$work/$label.$engine.out")
        T[$engine]=$secs; L[$engine]=$load; N[$engine]=$toks
        [[ $(wc -l < "$work/$label.$engine.out") == "$n_lines" ]] \
            || die "$engine: $(wc -l < "$work/$label.$engine.out") output lines for $n_lines input lines"
    done

    [[ $(stat -L -c '%s %Y' "$model/model.safetensors") == "$stamp" ]] \
        || echo "   WARNING: $model/model.safetensors changed during the run (a training job" \
                "writing it?): timings and the comparison below are not valid"

    local differ
    differ=$(awk 'NR == FNR { a[FNR] = $0; next } a[FNR] != $0 { d++ } END { print d + 0 }' \
             "$work/$label.C.out" "$work/$label.PyTorch.out")

    awk -v n="$n_lines" -v tc="${T[C]}" -v lc="${L[C]}" -v nc="${N[C]}" \
        -v tp="${T[PyTorch]}" -v lp="${L[PyTorch]}" -v np="${N[PyTorch]}" -v differ="$differ" '
    function rate(x, t) { return t > 0 ? x / t : 0 }
    function row(name, t, l, tok) {
        printf "   %-8s %8.2f %8.2f %8.2f %9.1f %11.1f %8d\n", name, t, l,
               rate(n, t), rate(tok, t), rate(tok, t - l), tok
    }
    BEGIN {
        printf "   %-8s %8s %8s %8s %9s %11s %8s\n", "engine", "seconds", "load s",
               "sent/s", "tok/s", "tok/s -load", "tokens"
        row("C", tc, lc, nc)
        row("PyTorch", tp, lp, np)
        printf "   ratio C/PyTorch (target tokens/s): %.2fx, model load excluded: %.2fx\n",
               rate(rate(nc, tc), rate(np, tp)), rate(rate(nc, tc - lc), rate(np, tp - lp))
        printf "   outputs: %d of %d lines differ\n", differ, n
    }'
    if ((differ)); then
        echo "   first differing lines (line: C | PyTorch):"
        awk 'NR == FNR { a[FNR] = $0; next } a[FNR] != $0 && shown++ < 3 {
                 printf "   %d: %.70s | %.70s\n", FNR, a[FNR], $0 }' \
            "$work/$label.C.out" "$work/$label.PyTorch.out"
    fi
}

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "bench_engine: $(date -u +%FT%TZ), ${cpu:-$(uname -m)}, $(nproc) CPU(s) online"
echo "  C: $cli; PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '?'): tools/reference.py"

if [[ $which_model == base || $which_model == both ]]; then
    dir=$(base_model)
    n=${lines:-200}
    zcat "$TEST_FILE" | awk -v n="$n" 'NR <= n' > "$work/base.en"
    "$PYTHON" "$ROOT/bench/text_to_ids.py" "$dir" < "$work/base.en" > "$work/base.ids"
    bench_one base "$dir" "$work/base.ids" ids \
        "random OPUS-MT base-size model (d 512, 6+6 layers, 8 heads, ffn 2048, vocab 58101)" \
        --max-length "${max_length:-64}"
fi

if [[ $which_model == bundled || $which_model == both ]]; then
    if [[ ! -f $bundled_dir/model.safetensors ]]; then
        [[ $which_model == both ]] || die "$bundled_dir: no model.safetensors"
        echo
        echo "== bundled: skipped, $bundled_dir has no model.safetensors"
    else
        n=${lines:-1000}
        zcat "$TEST_FILE" | awk -v n="$n" 'NR <= n' > "$work/bundled.en"
        extra=()
        [[ -z $max_length ]] || extra=(--max-length "$max_length")
        bench_one bundled "$bundled_dir" "$work/bundled.en" text \
            "bundled model $(basename "$bundled_dir") (Multi30k test_2016_flickr.en)" "${extra[@]}"
    fi
fi
