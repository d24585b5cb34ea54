#!/usr/bin/env bash
# Instructions a server executes per single-wake round, or per poll a fan-out wakes,
# counted by callgrind. A count is the same on a busy machine as on a quiet one, so a
# change to the request or wake path can be measured before and after without the 2x
# swings of this machine's clocks; it says nothing of cache misses or of time in the
# kernel (system calls run uncounted).
#
# ROUND=single (the default): a round is `client single`'s: for Lookout the GET that learns the poll's cursor, the
# poll, the PATCH that wakes it, and later a PATCH with nothing held; for Nchan (nginx in
# one process, no master) the poll, the publish and a lone publish. ROUNDS rounds and
# the client's 10 warm-up rounds are counted, after 50 uncounted ones. Lookout runs with
# LOOKOUT_SPIN_MICROSECONDS=0: how long a loop polls depends on the clock, not the work.
#
# ROUND=fanout: FANOUT polls on one item (Lookout's view with the cursor, or Nchan's
# channel) are held, and once the server holds them all one write wakes them; a round
# counts from the write until every poll has its answer, so the holding and the closing
# are not counted. ROUNDS such fan-outs are counted after one uncounted; the counts are
# printed per woken poll (the one write is a few thousand instructions of a round).
#
# Debian 12's valgrind (3.19) cannot run Lookout: it stops at the DWARF 5 that Swift 6.3
# writes, and any Swift program whose main is async dies at start, because libdispatch's
# main thread waits in sigsuspend with its mask in read-only memory, which valgrind
# writes to. So this builds Debian 13's valgrind 3.24 from its source once, into
# VALGRIND_DIR, with Benchmarks/valgrind/sigsuspend.patch (valgrind changes a copy of the
# mask instead).
#
# Environment:
#   ROUND         single or fanout                                 default single
#   ROUNDS        counted rounds                         default 300 (single), 2 (fanout)
#   FANOUT        polls a fan-out wakes                            default 2000
#   TARGETS       from "lookout nchan"                             default lookout
#   MODE          Lookout's --database: memory or sqlite            default memory
#   TOP           functions listed, by instructions of their own  default 25
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#   VALGRIND_DIR  where the patched valgrind is built and kept
#                 default ${XDG_CACHE_HOME:-~/.cache}/lookout/valgrind-3.24.0
#   KEEP_TMP=1    keep the temp dir (the callgrind files, for callgrind_annotate)
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUND="${ROUND:-single}"
[[ $ROUND == single || $ROUND == fanout ]] || die "ROUND must be single or fanout, not '$ROUND'"
if [[ $ROUND == single ]]; then ROUNDS="${ROUNDS:-300}"; else ROUNDS="${ROUNDS:-2}"; fi
FANOUT="${FANOUT:-2000}"
TARGETS="${TARGETS:-lookout}"
MODE="${MODE:-memory}"
TOP="${TOP:-25}"
KEEP_TMP="${KEEP_TMP:-0}"
VALGRIND_DIR="${VALGRIND_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lookout/valgrind-3.24.0}"
VALGRIND_SOURCE=http://deb.debian.org/debian/pool/main/v/valgrind/valgrind_3.24.0.orig.tar.bz2
VALGRIND_SHA256=71aee202bdef1ae73898ccf7e9c315134fa7db6c246063afc503aef702ec03bd
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
if [[ ! $FANOUT =~ ^[1-9][0-9]*$ ]] || ((FANOUT > 15000)); then die "FANOUT must be 1 to 15000, not '$FANOUT'"; fi
[[ $TOP =~ ^[1-9][0-9]*$ ]] || die "TOP must be a positive integer, not '$TOP'"
[[ $MODE == memory || $MODE == sqlite ]] || die "MODE must be memory or sqlite, not '$MODE'"
check_targets

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

packages=()
command -v curl >/dev/null || packages+=(curl)
if [[ ! -x $VALGRIND_DIR/bin/valgrind ]]; then
    command -v make >/dev/null && command -v gcc >/dev/null || packages+=(build-essential)
    command -v bzip2 >/dev/null || packages+=(bzip2)
    command -v patch >/dev/null || packages+=(patch)
fi
[[ " $TARGETS " != *" nchan "* ]] || add_nchan_packages
apt_install "${packages[@]}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-instructions.XXXXXX")"
chmod 711 "$TMP" # nginx reads its configuration below it
SERVER_PID=""
HOLD_PID=""
cleanup_at_exit holder:HOLD_PID server:SERVER_PID

if [[ ! -x $VALGRIND_DIR/bin/valgrind ]]; then
    log "building valgrind 3.24.0 with Benchmarks/valgrind/sigsuspend.patch into $VALGRIND_DIR (a few minutes, once)"
    curl -fsSL -o "$TMP/valgrind.tar.bz2" "$VALGRIND_SOURCE"
    echo "$VALGRIND_SHA256  $TMP/valgrind.tar.bz2" | sha256sum -c --quiet - || die "valgrind's source is not the expected file"
    tar -xjf "$TMP/valgrind.tar.bz2" -C "$TMP"
    # Installed into a staging root first and moved into place whole, so that a build cut
    # short leaves no VALGRIND_DIR that the next run would take for a finished one.
    (
        cd "$TMP/valgrind-3.24.0"
        patch -p1 <"$REPO_ROOT/Benchmarks/valgrind/sigsuspend.patch"
        ./configure --prefix="$VALGRIND_DIR" && make -j"$(nproc)" && make install DESTDIR="$TMP/stage"
    ) >"$TMP/valgrind-build.log" 2>&1 || {
        show_tail "$TMP/valgrind-build.log" "valgrind's build"
        die "valgrind did not build"
    }
    mkdir -p "$(dirname "$VALGRIND_DIR")"
    rm -rf "$VALGRIND_DIR"
    mv "$TMP/stage$VALGRIND_DIR" "$VALGRIND_DIR"
    rm -rf "$TMP/valgrind-3.24.0" "$TMP/valgrind.tar.bz2" "$TMP/stage"
fi
VALGRIND="$VALGRIND_DIR/bin/valgrind"
CONTROL="$VALGRIND_DIR/bin/callgrind_control"
ANNOTATE="$VALGRIND_DIR/bin/callgrind_annotate"

BINARY="no Lookout"
[[ " $TARGETS " != *" lookout "* ]] || release_binary "$REPO_ROOT"
CLIENT="$TMP/client"
cc -O2 -Wall -Wextra -o "$CLIENT" Benchmarks/longpoll/client.c
items_data_file "$TMP/items.json" 20000

# Prints the counted instructions per unit (a single-wake round, or a woken poll), by
# library, and the TOP functions.
report() { # target callgrind-file units unit-name
    "$ANNOTATE" --auto=no "$2" 2>/dev/null | python3 -c '
import re, sys
target, rounds, top, unit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
total, libraries, functions = 0, {}, []
for line in sys.stdin:
    match = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)$", line)
    if not match:
        continue
    count, name = int(match.group(1).replace(",", "")), match.group(2)
    if name == "PROGRAM TOTALS":
        total = count
        continue
    library = re.search(r"\[([^\]]*)\]\s*$", name)
    library = library.group(1).rsplit("/", 1)[-1] if library else "unnamed code (static functions of stripped libraries: libmicrohttpd, SQLite)"
    libraries[library] = libraries.get(library, 0) + count
    functions.append((count, re.sub(r"\s*\[[^\]]*\]\s*$", "", name)))
print(f"\n{target}: {total / rounds:,.0f} instructions per {unit} ({total:,} over {rounds:,})")
for library, count in sorted(libraries.items(), key=lambda item: -item[1])[:8]:
    print(f"  {count / rounds:10,.0f}  {100 * count / total:5.1f}%  {library}")
print(f"  the {top} functions with most instructions of their own, per {unit}:")
for count, name in functions[:top]:
    print(f"  {count / rounds:10,.0f}  {name[:150]}")
' "$1" "$3" "$TOP" "$4"
}

# Waits until the server holds COUNT polls on item 1, as it reports them: Lookout's
# held_sessions gauge, Nchan's channel's subscribers.
wait_until_held() { # target count
    local deadline=$((SECONDS + 600)) held
    while ((SECONDS < deadline)); do
        if [[ $1 == lookout ]]; then
            held=$(curl -fsS --max-time 30 "http://127.0.0.1:$PORT/metrics" |
                awk '$1 == "lookout_held_sessions" { print $2 }') || held=""
        else # a channel nobody has polled yet is a 404
            held=$(curl -fsS --max-time 30 -H 'Accept: text/json' "http://127.0.0.1:$PORT/pub/1" 2>/dev/null |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["subscribers"])' 2>/dev/null) || held=""
        fi
        [[ ${held%.*} == "$2" ]] && return 0
        kill -0 "$HOLD_PID" 2>/dev/null || die "$1: the holding client ended before the polls were held"
        sleep 0.5
    done
    die "$1: the server held ${held:-none} of $2 polls after 600 s"
}

# One fan-out of FANOUT polls; counted between the write and the last answer when $2 is 1.
fan_out() { # target counted value
    local name="$TMP/$1-fanout-$3" etag i
    mapfile -t etag < <(etag_args "$1")
    "$CLIENT" hold "${TARGET_ARGS[@]}" --port "$PORT" -n "$FANOUT" --same-id 1 "${etag[@]}" --wait 600 \
        --timeout 900 --keep-open >"$name.out" 2>"$name.err" &
    HOLD_PID=$!
    wait_until_held "$1" "$FANOUT"
    [[ $2 == 0 ]] || "$CONTROL" --instr=on "$SERVER_PID" >/dev/null 2>&1
    "$CLIENT" patch "${TARGET_ARGS[@]}" --port "$PORT" --ids 1 --value-base "$3" >"$name.write" ||
        die "$1: the write that wakes the fan-out failed"
    for ((i = 0; i < 18000; i++)); do
        grep -q '^result ' "$name.out" && break
        kill -0 "$HOLD_PID" 2>/dev/null || break
        sleep 0.05
    done
    [[ $2 == 0 ]] || "$CONTROL" --instr=off "$SERVER_PID" >/dev/null 2>&1
    grep -q "^result .* ok200=$FANOUT " "$name.out" || {
        cat "$name.out" "$name.err" >&2
        die "$1: the fan-out did not wake all $FANOUT polls"
    }
    kill -USR2 "$HOLD_PID"
    wait "$HOLD_PID" || true
    HOLD_PID=""
}

measure() { # target
    local target=$1 out="$TMP/callgrind.$1" round
    # Read by start_compared_lookout and start_compared_nchan (common.sh); a server under
    # valgrind starts ~50x slower.
    local -a LAUNCHER=("$VALGRIND" --tool=callgrind --instr-atstart=no --callgrind-out-file="$out")
    local STARTUP_SECONDS=300
    if [[ $target == lookout ]]; then
        LOOKOUT_SPIN_MICROSECONDS=0 start_compared_lookout "$MODE"
    else
        NCHAN_ONE_PROCESS=1 start_compared_nchan
    fi
    "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds 50 >/dev/null ||
        die "$target: the uncounted single wakes failed"
    if [[ $ROUND == single ]]; then
        "$CONTROL" --instr=on "$SERVER_PID" >/dev/null 2>&1
        "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$ROUNDS" --value-base 100000 \
            >"$TMP/$target-single.out" || die "$target: the counted single wakes failed"
    else
        for ((round = 0; round <= ROUNDS; round++)); do
            fan_out "$target" $((round > 0)) $((200000 + round))
        done
    fi
    "$CONTROL" --dump "$SERVER_PID" >/dev/null 2>&1
    # nginx without its master aborts as it exits under valgrind, after the counts are
    # written; bash's notice of that would read like a failure.
    { stop_pid "$SERVER_PID" server; } 2>/dev/null
    SERVER_PID=""
    [[ -s $out.1 ]] || die "$target: callgrind wrote no counts"
    if [[ $ROUND == single ]]; then
        report "$target" "$out.1" $((ROUNDS + 10)) round
    else
        report "$target" "$out.1" $((ROUNDS * FANOUT)) "woken poll"
    fi
}

if [[ $ROUND == single ]]; then
    printf 'Instructions per single-wake round (callgrind, valgrind 3.24.0 patched), %s, %s, %s rounds\n' \
        "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$ROUNDS"
else
    printf 'Instructions per poll a fan-out to %s wakes (callgrind, valgrind 3.24.0 patched), %s, %s, %s fan-outs\n' \
        "$FANOUT" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$ROUNDS"
fi
for target in $TARGETS; do
    if [[ $ROUND == single ]]; then
        log "$target: $ROUNDS single-wake rounds under callgrind"
    else
        log "$target: $ROUNDS fan-outs to $FANOUT under callgrind"
    fi
    measure "$target"
done
