#!/usr/bin/env bash
# Instructions a server executes per single-wake round, counted by callgrind. A count is
# the same on a busy machine as on a quiet one, so a change to the request path can be
# measured before and after without the 2x swings of this machine's clocks; it says
# nothing of cache misses or of time in the kernel (system calls run uncounted).
#
# A round is `client single`'s: for Lookout the GET that learns the poll's cursor, the
# poll, the PATCH that wakes it, and later a PATCH with nothing held; for Nchan (nginx in
# one process, no master) the poll, the publish and a lone publish. ROUNDS rounds and
# the client's 10 warm-up rounds are counted, after 50 uncounted ones. Lookout runs with
# LOOKOUT_SPIN_MICROSECONDS=0: how long a loop polls depends on the clock, not the work.
#
# Debian 12's valgrind (3.19) cannot run Lookout: it stops at the DWARF 5 that Swift 6.3
# writes, and any Swift program whose main is async dies at start, because libdispatch's
# main thread waits in sigsuspend with its mask in read-only memory, which valgrind
# writes to. So this builds Debian 13's valgrind 3.24 from its source once, into
# VALGRIND_DIR, with Benchmarks/valgrind/sigsuspend.patch (valgrind changes a copy of the
# mask instead).
#
# Environment:
#   ROUNDS        counted rounds                                  default 300
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

ROUNDS="${ROUNDS:-300}"
TARGETS="${TARGETS:-lookout}"
MODE="${MODE:-memory}"
TOP="${TOP:-25}"
KEEP_TMP="${KEEP_TMP:-0}"
VALGRIND_DIR="${VALGRIND_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lookout/valgrind-3.24.0}"
VALGRIND_SOURCE=http://deb.debian.org/debian/pool/main/v/valgrind/valgrind_3.24.0.orig.tar.bz2
VALGRIND_SHA256=71aee202bdef1ae73898ccf7e9c315134fa7db6c246063afc503aef702ec03bd
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
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
cleanup_at_exit server:SERVER_PID

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

# Prints the counted instructions per round, by library, and the TOP functions.
report() { # target callgrind-file
    local rounds=$((ROUNDS + 10))
    "$ANNOTATE" --auto=no "$2" 2>/dev/null | python3 -c '
import re, sys
target, rounds, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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
    library = library.group(1).rsplit("/", 1)[-1] if library else "unnamed code (static functions of a library, mostly SQLite)"
    libraries[library] = libraries.get(library, 0) + count
    functions.append((count, re.sub(r"\s*\[[^\]]*\]\s*$", "", name)))
print(f"\n{target}: {total / rounds:,.0f} instructions per round ({total:,} over {rounds} rounds)")
for library, count in sorted(libraries.items(), key=lambda item: -item[1])[:8]:
    print(f"  {count / rounds:10,.0f}  {100 * count / total:5.1f}%  {library}")
print(f"  the {top} functions with most instructions of their own, per round:")
for count, name in functions[:top]:
    print(f"  {count / rounds:10,.0f}  {name[:150]}")
' "$1" "$rounds" "$TOP"
}

measure() { # target
    local target=$1 out="$TMP/callgrind.$1"
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
    "$CONTROL" --instr=on "$SERVER_PID" >/dev/null 2>&1
    "$CLIENT" single "${TARGET_ARGS[@]}" --port "$PORT" --id 7 --rounds "$ROUNDS" --value-base 100000 \
        >"$TMP/$target-single.out" || die "$target: the counted single wakes failed"
    "$CONTROL" --dump "$SERVER_PID" >/dev/null 2>&1
    # nginx without its master aborts as it exits under valgrind, after the counts are
    # written; bash's notice of that would read like a failure.
    { stop_pid "$SERVER_PID" server; } 2>/dev/null
    SERVER_PID=""
    [[ -s $out.1 ]] || die "$target: callgrind wrote no counts"
    report "$target" "$out.1"
}

printf 'Instructions per single-wake round (callgrind, valgrind 3.24.0 patched), %s, %s, %s rounds\n' \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$BINARY" "$ROUNDS"
for target in $TARGETS; do
    log "$target: $ROUNDS single wakes under callgrind"
    measure "$target"
done
