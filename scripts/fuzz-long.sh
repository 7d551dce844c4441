#!/usr/bin/env bash
# Long fuzzing, outside the suite (which runs each target from a fixed seed for a fixed
# number of inputs, so that CI is reproducible):
#   scripts/fuzz-long.sh TARGET... [--minutes N] [--build DIR] [--out DIR] [--max-findings K]
# TARGET: a libFuzzer target of tests/meson.build's 'fuzz' suite (fuzz-markup, fuzz-formats,
# ...; the "fuzz-" may be left out), or "all". Each runs for N minutes (default 60), one
# after the other, under nice, from a random seed (libFuzzer's -seed=0; the seed is
# printed), growing its corpus in OUT/<target>/corpus (default OUT: runs/fuzz, ignored by
# git) on top of the seeds in tests/fuzz/<name> (read, never written), with
# tests/fuzz/<name>.dict when there is one. A finding (crash, sanitizer report, leak,
# timeout, out-of-memory) is copied to OUT/findings/<target>-<kind>-<sha1>, and the target
# goes on from a new seed until its time is spent or it has K findings (default 5: one bug
# must not eat all the time). Reproduce one with: BUILD/tests/TARGET FILE.
# At the end, per target: minutes, executions, final coverage (cov: edges, ft: features),
# corpus files, findings; also appended to OUT/summary.tsv. Exit status 1 with findings.
# BUILD (default build-fuzz) is the clang + ASan/UBSan + libFuzzer build that
# scripts/run-tests.sh makes; it is configured when missing and the targets compiled.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)

minutes=60
build="build-fuzz"
out=runs/fuzz
max_findings=5
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=${2:?--minutes N}; shift 2 ;;
    --build) build=${2:?--build DIR}; shift 2 ;;
    --out) out=${2:?--out DIR}; shift 2 ;;
    --max-findings) max_findings=${2:?--max-findings K}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fuzz-long: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ! [[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || ! [[ $max_findings =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz-long: --minutes takes a number, --max-findings a positive integer" >&2
  exit 2
fi
[ ${#targets[@]} -gt 0 ] || { echo "usage: scripts/fuzz-long.sh TARGET... [--minutes N] [--build DIR] [--out DIR]" >&2; exit 2; }
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')

if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ scripts/build.sh "$build" -Db_sanitize=address,undefined -Db_lundef=false \
    --buildtype=debugoptimized || exit 1
fi
# meson compile and meson test --list see the build's last configuration: let ninja
# regenerate it first, so a target added to tests/meson.build since then is found
ninja -C "$build" build.ninja >/dev/null 2>&1
if [ "${targets[*]}" = all ]; then
  mapfile -t targets < <(meson test -C "$build" --list --suite fuzz 2>/dev/null | sed -n 's|^.*fuzz / ||p')
fi
names=()
for t in "${targets[@]}"; do
  t=fuzz-${t#fuzz-}
  names+=("$t")
done
meson compile -C "$build" "${names[@]/#/tests/}" >/dev/null || { echo "fuzz-long: cannot build ${names[*]} in $build" >&2; exit 1; }

export MT_SOURCE_DIR=$root MT_BUILD_DIR=$root/$build
export MT_SHARED_DIR=${MT_SHARED_DIR:-$root/../shared}
mkdir -p "$out/findings"
out=$(cd "$out" && pwd)

child=
stop=0
trap 'stop=1; [ -n "$child" ] && kill -INT "$child" 2>/dev/null' INT TERM

summary=()
total_findings=0
for t in "${names[@]}"; do
  exe=$build/tests/$t
  name=${t#fuzz-}
  dir=$out/$t
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/logs"
  extra=()
  [ -d "tests/fuzz/$name" ] && extra+=("$root/tests/fuzz/$name")
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=("-dict=$root/tests/fuzz/$name.dict")
  start=$(date +%s)
  deadline=$((start + seconds))
  execs=0 findings=0 cov=- ft=- seeds=() found=()
  while [ "$stop" -eq 0 ] && [ "$findings" -lt "$max_findings" ]; do
    left=$((deadline - $(date +%s)))
    [ "$left" -ge 5 ] || break
    log=$dir/logs/$(date -u +%Y%m%dT%H%M%S).log
    echo "=== $t: ${left}s left, log $log"
    nice -n 10 "$exe" -seed=0 -max_total_time="$left" -rss_limit_mb=2048 -timeout=25 -error_exitcode=1 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" "$dir/corpus" "${extra[@]}" \
      >"$log" 2>&1 &
    child=$!
    wait "$child"
    rc=$?
    while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done # interrupted: let it wrap up
    child=
    seeds+=("$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$log" | head -1)")
    n=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    [ -n "$n" ] || n=$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
    line=$(grep -aoE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
    if [ -n "$line" ]; then
      cov=$(awk '{print $2}' <<<"$line")
      ft=$(awk '{print $4}' <<<"$line")
    fi
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | grep -E '/(crash|leak|timeout|oom)-' | tail -1)
    if [ -n "$artifact" ] && [ -f "$artifact" ]; then
      base=$(basename "$artifact")
      cp "$artifact" "$out/findings/$t-$base"
      cp "$log" "$out/findings/$t-$base.log"
      findings=$((findings + 1))
      found+=("$t-$base")
      echo "=== $t: finding $out/findings/$t-$base ($(grep -aE -m1 'ERROR:|SUMMARY:|fuzz-[a-z]+:' "$log" | cut -c1-160))"
      continue
    fi
    if [ "$rc" -ne 0 ] && [ "$stop" -eq 0 ]; then # no artifact: the target could not run at all
      echo "=== $t: exit status $rc without an artifact; see $log" >&2
      findings=$((findings + 1))
      found+=("$t-exit-$rc")
      break
    fi
    break # time spent (or interrupted)
  done
  mins=$(awk -v s="$(( $(date +%s) - start ))" 'BEGIN { printf "%.1f", s / 60 }')
  corpus=$(find "$dir/corpus" -type f | wc -l)
  total_findings=$((total_findings + findings))
  row=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$t" "$mins" "$execs" "$cov" "$ft" "$corpus" "$findings" \
    "seeds ${seeds[*]}${found:+; ${found[*]}}")
  summary+=("$row")
  printf '%s\t%s\n' "$(date -u +%FT%TZ)" "$row" >>"$out/summary.tsv"
  [ "$stop" -eq 0 ] || break
done

echo
printf '%-18s %7s %12s %7s %8s %7s %8s  %s\n' target minutes execs cov ft corpus findings details
for row in "${summary[@]}"; do
  IFS=$'\t' read -r t mins execs cov ft corpus findings details <<<"$row"
  printf '%-18s %7s %12s %7s %8s %7s %8s  %s\n' "$t" "$mins" "$execs" "$cov" "$ft" "$corpus" "$findings" "$details"
done
echo "findings: $out/findings; corpora: $out/<target>/corpus"
[ "$total_findings" -eq 0 ]
