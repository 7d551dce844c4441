#!/bin/sh
# fuzz_run.sh TARGET ARGS...: runs a libFuzzer target of the suite with address-space
# randomization off (setarch -R), so that a fixed -seed and -runs try the same inputs in
# every run: with it on, pointer values the code compares reach libFuzzer's comparison
# tables and steer the mutations differently each time. Where the system refuses (a
# seccomp profile without personality(2)), the target runs as it is.
if setarch -R true 2>/dev/null; then
  exec setarch -R "$@"
fi
echo "fuzz_run.sh: setarch -R refused here; address-space randomization stays on" >&2
exec "$@"
