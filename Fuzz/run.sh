#!/usr/bin/env bash
# Runs libFuzzer targets for a bounded time and fails on any crash, violated property or
# slow unit, printing the reproducer. `make fuzz` calls it; see the Makefile for the
# variables.
#
#   Fuzz/run.sh NAME=BINARY...
#
# Each NAME is a libFuzzer binary BINARY, run with LOOKOUT_FUZZ_TARGET=NAME (the Swift
# executable serves every Swift target; a C target's own binary ignores it). For each:
#
# 1. explore: FUZZ_SECONDS of fuzzing from the corpus kept in the repository
#    (Tests/FuzzCorpus/NAME and Tests/FuzzRegressions/NAME, read only) and the inputs
#    earlier runs found (FUZZ_WORK/corpus/NAME, where new ones go), with marked inputs
#    expanded only to FUZZ_EXPLORE_AMPLIFY bytes so that fuzzing stays fast;
# 2. amplify: the repository's inputs once more, marked ones expanded to what a client may
#    send (LOOKOUT_FUZZ_AMPLIFY unset), so an input quadratic somewhere takes seconds
#    instead of milliseconds. (Not every input found in step 1: many hold the marker
#    bytes by chance, and expanding hundreds of them to a megabyte takes minutes. Copy a
#    template worth keeping into Tests/FuzzCorpus/NAME.)
#
# Both run with -timeout=FUZZ_TIMEOUT (a unit that takes longer fails) and
# -report_slow_units=FUZZ_SLOW (a unit that takes longer is written as slow-unit-* and
# fails the run too). FUZZ_JOBS targets run at once.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-25}
timeout=${FUZZ_TIMEOUT:-10}
slow=${FUZZ_SLOW:-5}
jobs=${FUZZ_JOBS:-2}
explore_amplify=${FUZZ_EXPLORE_AMPLIFY:-1024}
work=${FUZZ_WORK:-.build-fuzz/work}

# Crashes go to libFuzzer's handlers, which write the reproducer, not to Swift's backtracer.
export SWIFT_BACKTRACE=enable=no

if [ $# -eq 0 ]; then
    echo "usage: $0 NAME=BINARY..." >&2
    exit 2
fi

# fuzz_one NAME BINARY: both passes; leaves FUZZ_WORK/status/NAME ("ok" or why not).
fuzz_one() {
    local name=$1 binary=$2
    local artifacts="$work/artifacts/$name" log="$work/logs/$name.log"
    local kept=()
    local directory
    for directory in "Tests/FuzzCorpus/$name" "Tests/FuzzRegressions/$name"; do
        [ -d "$directory" ] && kept+=("$directory")
    done
    local flags=(-timeout="$timeout" -report_slow_units="$slow" -artifact_prefix="$artifacts/" -print_final_stats=1)
    [ -f "Fuzz/$name.dict" ] && flags+=(-dict="Fuzz/$name.dict")
    rm -rf "$artifacts"
    mkdir -p "$artifacts" "$work/corpus/$name"

    echo "== $name: explore for ${seconds}s" >"$log"
    LOOKOUT_FUZZ_TARGET=$name LOOKOUT_FUZZ_AMPLIFY=$explore_amplify \
        "$binary" "${flags[@]}" -max_total_time="$seconds" "$work/corpus/$name" "${kept[@]}" >>"$log" 2>&1
    local status=$?
    if [ $status -eq 0 ] && [ ${#kept[@]} -gt 0 ]; then
        echo "== $name: amplify the repository's inputs" >>"$log"
        LOOKOUT_FUZZ_TARGET=$name "$binary" "${flags[@]}" -runs=0 "${kept[@]}" >>"$log" 2>&1
        status=$?
    fi
    # What libFuzzer wrote: crash-, timeout-, oom-, leak- or slow-unit-<sha1>.
    local kinds
    kinds=$(find "$artifacts" -type f -printf '%f\n' | sed -E 's/-[0-9a-f]{40}$//' | sort -u | tr '\n' ' ' | sed 's/ $//')
    if [ $status -eq 0 ] && [ -z "$kinds" ]; then
        echo ok >"$work/status/$name"
    else
        echo "${kinds:-exit status $status}" >"$work/status/$name"
    fi
}

mkdir -p "$work/status" "$work/logs"
rm -f "$work"/status/*
started=$SECONDS
for spec in "$@"; do
    name=${spec%%=*}
    binary=${spec#*=}
    if [ ! -x "$binary" ]; then
        echo "$name: $binary is missing; run make fuzz-build" >&2
        exit 2
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    echo "fuzzing $name"
    fuzz_one "$name" "$binary" &
done
wait

failed=0
for spec in "$@"; do
    name=${spec%%=*}
    binary=${spec#*=}
    log="$work/logs/$name.log"
    status=$(cat "$work/status/$name" 2>/dev/null || echo "no status")
    stats=$(grep -a -m1 -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
    coverage=$(grep -a -o 'cov: [0-9]*' "$log" | tail -1)
    if [ "$status" = ok ]; then
        echo "$name: ok, ${stats:-?} inputs, ${coverage:-cov: ?} edges"
        continue
    fi
    failed=1
    echo
    echo "$name: FAILED ($status); the end of $log:"
    grep -a -v -E '^#[0-9]+|^\s+#[0-9]+ 0x|^(r[0-9a-z]+|rip|rflags|cs) ' "$log" | tail -25
    for artifact in $(find "$work/artifacts/$name" -type f | sort); do
        echo "  reproducer: $artifact"
        echo "  replay it:  SWIFT_BACKTRACE=enable=no LOOKOUT_FUZZ_TARGET=$name $binary $artifact"
        kept=$(find "Tests/FuzzCorpus/$name" "Tests/FuzzRegressions/$name" -type f -exec cmp -s "$artifact" {} \; \
            -print 2>/dev/null | head -1)
        if [ -n "$kept" ]; then
            echo "  kept as:    $kept"
        else
            echo "  keep it:    cp $artifact Tests/FuzzRegressions/$name/"
        fi
    done
done
echo "fuzzing took $((SECONDS - started))s (FUZZ_SECONDS=$seconds per target, $jobs at once)"
if [ $failed -ne 0 ]; then
    echo "fuzzing found problems (see above)"
    exit 1
fi
