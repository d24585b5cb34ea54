#!/usr/bin/env bash
# The cold read path: list queries that miss every cache. One collection, `items`, of
# 20,000 documents with typed fields (integers, doubles, strings, a boolean, a nested
# object, an array); wrk sends a different list query each time (1 to 3 random filters,
# a random sort or none, a random page or first cursor page, sometimes `fields=`), read
# in order from a generated list of distinct URLs, so the render cache (RenderCache:
# a view is reused only for the same query at the same revision) never hits and every
# request filters, sorts, pages and encodes for real.
#
# The anchor is the hot path of the same collection in the same run: one fixed URL
# (`/v1/items?page=1`, the same page size and shape), rendered once and then served from
# the render cache. Cold and hot alternate, round by round, so drift on a shared machine
# hits both alike; the ratio cold/hot is the figure to compare across commits, absolute
# req/s on this machine swing twofold.
#
# Before any load, curl checks the hot URL and a sample of the cold ones: every answer
# must be 200 with X-Total-Count and the number of items a Python evaluation of the same
# filters over the same data gives (and most pages must hold items). A non-2xx answer or
# a socket error under load fails the run.
#
# Environment:
#   DURATION      wrk -d per run, in seconds ("5s")                      default 5s
#   ROUNDS        wrk runs per target, alternating cold / hot            default 2
#   CONNECTIONS   wrk -c                                                 default 16
#   WRK_THREADS   wrk -t                                                 default 2
#   THREADS       Lookout --threads                                      default 2
#   DOCUMENTS     documents in `items`                                   default 20000
#   URLS          distinct cold URLs for the measured runs               default 200000
#   FILL          distinct other cold URLs sent before the runs, so that the
#                 render cache is full (1024 views) as in a steady state:
#                 cold views are then rendered and dropped, not kept;
#                 0 measures the filling instead                         default 1100
#   DATABASE      Lookout --database: memory or sqlite (reads never touch it;
#                 it only changes start-up and writes)                   default memory
#   SAMPLE        cold URLs checked with curl before the load            default 60
#   PROFILE=1     one more cold run under `perf record -e cpu-clock -g` of the server;
#                 prints the top symbols (self and with children), demangled
#   PROFILE_TOP   symbols printed per profile table                      default 30
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
#                 (to compare two commits on the same machine state)
#   KEEP_TMP=1    keep the temp dir (data file, URL list, server logs, wrk output,
#                 perf.data) instead of deleting it
#
#   Benchmarks/cold-read.sh
#   PROFILE=1 Benchmarks/cold-read.sh
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

DURATION="${DURATION:-5s}"
ROUNDS="${ROUNDS:-2}"
CONNECTIONS="${CONNECTIONS:-16}"
WRK_THREADS="${WRK_THREADS:-2}"
THREADS="${THREADS:-2}"
DOCUMENTS="${DOCUMENTS:-20000}"
URLS="${URLS:-200000}"
FILL="${FILL:-1100}"
DATABASE="${DATABASE:-memory}"
SAMPLE="${SAMPLE:-60}"
PROFILE="${PROFILE:-0}"
PROFILE_TOP="${PROFILE_TOP:-30}"
KEEP_TMP="${KEEP_TMP:-0}"
LOOKOUT_BIN="${LOOKOUT_BIN:-}"
HOT_PATH='/v1/items?page=1'

for name in ROUNDS CONNECTIONS WRK_THREADS THREADS DOCUMENTS URLS SAMPLE PROFILE_TOP; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || { printf 'error: %s must be a positive integer, got %q\n' "$name" "${!name}" >&2; exit 2; }
done
[[ $DURATION =~ ^([1-9][0-9]*)s$ ]] || { printf 'error: DURATION must be whole seconds such as 5s, got %q\n' "$DURATION" >&2; exit 2; }
SECONDS_PER_RUN="${BASH_REMATCH[1]}"
[[ $FILL =~ ^[0-9]+$ ]] || { printf 'error: FILL must be a number of URLs, got %q\n' "$FILL" >&2; exit 2; }
[[ $DATABASE == memory || $DATABASE == sqlite ]] || { printf 'error: DATABASE must be memory or sqlite, got %q\n' "$DATABASE" >&2; exit 2; }
[[ $PROFILE == 0 || $PROFILE == 1 ]] || { printf 'error: PROFILE must be 0 or 1, got %q\n' "$PROFILE" >&2; exit 2; }
((DOCUMENTS >= 1000)) || { echo "error: DOCUMENTS must be at least 1000 (the queries expect pages of matches)" >&2; exit 2; }
COLD_RUNS=$((ROUNDS + PROFILE))
LOAD_SECONDS=$(((2 * ROUNDS + PROFILE) * SECONDS_PER_RUN))
((LOAD_SECONDS <= 150)) || { echo "error: ROUNDS and DURATION give ${LOAD_SECONDS}s of load; keep it within 150s" >&2; exit 2; }
((URLS >= COLD_RUNS * WRK_THREADS * 100)) || { echo "error: URLS is too small for $COLD_RUNS cold runs of $WRK_THREADS threads" >&2; exit 2; }

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT="$(pwd)"

# --- tools -----------------------------------------------------------------------

install_missing() {
    local -a packages=() package
    for package in libmicrohttpd-dev libsqlite3-dev; do
        package_installed "$package" || packages+=("$package")
    done
    command -v wrk >/dev/null 2>&1 || packages+=(wrk)
    command -v curl >/dev/null 2>&1 || packages+=(curl)
    command -v jq >/dev/null 2>&1 || packages+=(jq)
    command -v python3 >/dev/null 2>&1 || packages+=(python3)
    if [[ $PROFILE == 1 ]] && ! command -v perf >/dev/null 2>&1; then packages+=(linux-perf); fi
    apt_install "${packages[@]}"
}

# The given percentile from a wrk --latency report, in milliseconds.
wrk_latency_ms() { # percentile file
    awk -v p="$1%" '$1 == p {
        v = $2; n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000
        else if (u == "m") n *= 60000; else if (u == "h") n *= 3600000
        printf "%.3f\n", n
    }' "$2"
}

# Requests completed, from a wrk report.
wrk_requests() { awk '$2 == "requests" && $3 == "in" { print $1 }' "$1"; }

# --- server, perf and cleanup ----------------------------------------------------------

TMP=""
LOOKOUT_PID=""
PERF_PID=""
cleanup_at_exit perf:PERF_PID lookout:LOOKOUT_PID

# --- build, data and URLs ------------------------------------------------------------

install_missing

release_binary "$REPO_ROOT"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lookout-cold-read.XXXXXX")"
FAILURE_LOGS=("Lookout stderr:$TMP/lookout.stderr")
mkdir -p "$TMP/data"
chmod 700 "$TMP/data"
DATA_FILE="$TMP/items.json"
PATHS_FILE="$TMP/cold-paths.txt"
FILL_FILE="$TMP/fill-paths.txt"
SAMPLE_FILE="$TMP/sample.tsv"

# The data file and the cold URLs, all distinct, in a fixed pseudo-random order (the same
# every run, so runs compare): first max(SAMPLE, FILL) for the checks and the filling,
# each of the first SAMPLE with the total and the item count a correct server answers,
# from the same filters evaluated here; then URLS for the measured runs.
python3 - "$DATA_FILE" "$PATHS_FILE" "$FILL_FILE" "$SAMPLE_FILE" "$DOCUMENTS" "$URLS" "$FILL" "$SAMPLE" <<'PY'
import json, random, sys

data_file, paths_file, fill_file, sample_file = sys.argv[1:5]
documents, urls, fill, sample = map(int, sys.argv[5:9])
before = max(fill, sample)
rng = random.Random(18)

WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper kelp lumen maple "
         "nectar onyx pepper quartz river saffron tundra umber velvet willow xenon yarrow zephyr").split()
CATEGORIES = ["books", "music", "garden", "kitchen", "toys", "sports", "tools", "games",
              "office", "travel", "health", "beauty"]
CITIES = ["Tokyo", "Osaka", "Kyoto", "Sapporo", "Fukuoka", "Nagoya", "Sendai", "Kobe"]

docs = []
for i in range(1, documents + 1):
    docs.append({
        "id": i,
        "title": " ".join(rng.choice(WORDS).capitalize() for _ in range(3)) + f" {i:05d}",
        "category": rng.choice(CATEGORIES),
        "price": rng.randint(100, 50000),
        "rating": round(rng.uniform(1.0, 5.0), 1),
        "stock": rng.randint(0, 500),
        "active": rng.random() < 0.7,
        "created_at": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
        "seller": {"name": f"seller {rng.randint(1, 2000)}", "city": rng.choice(CITIES)},
        "tags": rng.sample(WORDS, 2),
    })
collection = {"name": "items", "public": True, "page_size": 20, "documents": docs}
with open(data_file, "w") as out:
    json.dump({"collections": [collection], "users": []}, out, separators=(",", ":"), ensure_ascii=False)

# Filters: (parameter, value, test). At most one narrow one (a twelfth to a tenth of the
# documents) and up to two wide ones (at least a third), so most pages hold items.
def narrow():
    kind = rng.randrange(3)
    if kind == 0:
        value = rng.choice(CATEGORIES)
        return ("category", value, lambda d: d["category"] == value)
    if kind == 1:
        value = rng.choice(CITIES)
        return ("seller.city", value, lambda d: d["seller"]["city"] == value)
    value = rng.choice(WORDS)[: rng.randint(3, 5)]
    return ("title_like", value, lambda d: value in d["title"].lower())

def wide():
    kind = rng.randrange(5)
    if kind == 0:
        value = rng.randint(100, 33000)
        return ("price_gte", str(value), lambda d: d["price"] >= value)
    if kind == 1:
        value = rng.randint(17000, 50000)
        return ("price_lte", str(value), lambda d: d["price"] <= value)
    if kind == 2:
        value = round(rng.uniform(1.0, 3.6), 1)
        return ("rating_gte", str(value), lambda d: d["rating"] >= value)
    if kind == 3:
        value = rng.random() < 0.8
        return ("active", "true" if value else "false", lambda d: d["active"] == value)
    value = rng.randint(150, 500)
    return ("stock_lt", str(value), lambda d: d["stock"] < value)

SORTS = [None, "price", "-price", "rating,-price", "-rating,title", "title", "-created_at", "seller.city,-stock"]
FIELDS = [None, None, None, "title,price", "title,category,rating,seller"]

seen = set()
with open(paths_file, "w") as paths, open(fill_file, "w") as fills, open(sample_file, "w") as checks:
    while len(seen) < before + urls:
        filters = []
        if rng.random() < 0.8:
            filters.append(narrow())
        for _ in range(rng.randint(0 if filters else 1, 2)):
            filter = wide()
            if all(f[0] != filter[0] for f in filters):
                filters.append(filter)
        parameters = [(name, value) for name, value, _ in filters]
        sort = rng.choice(SORTS)
        if sort:
            parameters.append(("sort", sort))
        if rng.random() < 0.8:
            size = rng.choice([10, 20, 50])
            page = rng.randint(1, 4)
            parameters += [("page", str(page)), ("per_page", str(size))]
        else:
            size, page = rng.choice([10, 20, 50]), 1
            parameters.append(("limit", str(size)))
        fields = rng.choice(FIELDS)
        if fields:
            parameters.append(("fields", fields))
        path = "/v1/items?" + "&".join(f"{name}={value}" for name, value in parameters)
        if path in seen:
            continue
        seen.add(path)
        (fills if len(seen) <= before else paths).write(path + "\n")
        if len(seen) <= sample:
            total = sum(1 for d in docs if all(test(d) for _, _, test in filters))
            items = max(0, min(size, total - (page - 1) * size))
            checks.write(f"{total}\t{items}\t{path}\n")
PY
log "data file: items, $DOCUMENTS documents ($(wc -c <"$DATA_FILE") bytes); $URLS distinct cold URLs"

cat >"$TMP/cold.lua" <<'LUA'
-- Sends the URLs of COLD_PATHS in order, each thread from its own slot of the list:
-- slot COLD_SLOT + thread index of COLD_SLOTS equal slots, so no URL is sent twice in a
-- run or across the runs of one benchmark (unless a slot runs out and wraps).
local count = 0
function setup(thread)
    thread:set("index", count)
    count = count + 1
end
function init(args)
    paths = {}
    for line in io.lines(os.getenv("COLD_PATHS")) do paths[#paths + 1] = line end
    local slots = tonumber(os.getenv("COLD_SLOTS"))
    local slot = tonumber(os.getenv("COLD_SLOT")) + index
    first = math.floor(#paths * slot / slots)
    size = math.floor(#paths / slots)
    sent = 0
end
function request()
    local path = paths[first + sent % size + 1]
    sent = sent + 1
    return wrk.format("GET", path)
end
LUA

# --- server and checks ---------------------------------------------------------------

PORT="$(free_port)"
BASE="http://127.0.0.1:$PORT"
log "starting Lookout on 127.0.0.1:$PORT (--database $DATABASE --threads $THREADS)"
"$LOOKOUT_BIN" --port "$PORT" --bind 127.0.0.1 --data-dir "$TMP/data" --data-file "$DATA_FILE" \
    --database "$DATABASE" --log-level warning --threads "$THREADS" \
    >"$TMP/lookout.stdout" 2>"$TMP/lookout.stderr" &
LOOKOUT_PID=$!
wait_until_answers "$BASE/readyz" "$LOOKOUT_PID" lookout

# The hot URL first: the render cache keeps the first views it renders at a revision
# (1024 of them) and nothing writes here, so it stays cached whatever the cold runs add.
status="$(curl -sS -o "$TMP/hot.json" -w '%{http_code}' "$BASE$HOT_PATH")"
[[ $status == 200 ]] || die "GET $HOT_PATH answered $status"
HOT_BYTES="$(wc -c <"$TMP/hot.json")"
[[ "$(jq length "$TMP/hot.json")" == 20 ]] || die "GET $HOT_PATH did not answer 20 items"

checked=0
empty=0
cold_bytes=0
while IFS=$'\t' read -r total items path; do
    read -r status count < <(curl -sS -o "$TMP/cold.json" -w '%{http_code} %header{x-total-count}\n' "$BASE$path")
    [[ $status == 200 ]] || { cat "$TMP/cold.json" >&2; printf '\n' >&2; die "GET $path answered $status"; }
    [[ $count == "$total" ]] || die "GET $path: X-Total-Count $count, expected $total"
    got="$(jq length "$TMP/cold.json")"
    [[ $got == "$items" ]] || die "GET $path: $got items, expected $items"
    ((items > 0)) || empty=$((empty + 1))
    cold_bytes=$((cold_bytes + $(wc -c <"$TMP/cold.json")))
    checked=$((checked + 1))
done <"$SAMPLE_FILE"
((checked == SAMPLE)) || die "checked $checked sample URLs, expected $SAMPLE"
((empty * 5 <= checked)) || die "$empty of $checked sample pages are empty; the queries match too little"
log "checked $checked cold URLs with curl: all 200 with the expected totals and items ($empty empty pages, mean body $((cold_bytes / checked)) bytes); hot page $HOT_BYTES bytes"

if ((FILL > 0)); then
    log "filling the render cache: $FILL other cold URLs, 4 keep-alive connections"
    python3 - "$FILL_FILE" "$PORT" "$FILL" <<'PY' >&2 || die "filling the render cache failed"
import http.client, sys, threading, time

paths = open(sys.argv[1]).read().split()[: int(sys.argv[3])]
failures = []

def send(part):
    connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[2]), timeout=120)
    for path in part:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            failures.append(f"{response.status} {path}")

start = time.monotonic()
threads = [threading.Thread(target=send, args=(paths[i::4],)) for i in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    sys.exit("not 200: " + "; ".join(failures[:5]))
elapsed = time.monotonic() - start
print(f"==> filled: {len(paths)} cold URLs in {elapsed:.1f}s ({len(paths) / elapsed:.1f} req/s)")
PY
fi

# --- load ----------------------------------------------------------------------------

declare -a cold_rps=() cold_p50=() cold_p99=() hot_rps=() hot_p50=() hot_p99=()
cold_sent=0
SLOT_SIZE=$((URLS / (COLD_RUNS * WRK_THREADS)))

run_wrk() { # target run out
    local target=$1 run=$2 out=$3 rps p50 p99 errors requests
    kill -0 "$LOOKOUT_PID" 2>/dev/null || die "Lookout (pid $LOOKOUT_PID) is gone before $target run $run"
    if [[ $target == cold ]]; then
        COLD_PATHS="$PATHS_FILE" COLD_SLOTS=$((COLD_RUNS * WRK_THREADS)) COLD_SLOT=$(((run - 1) * WRK_THREADS)) \
            wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$TMP/cold.lua" "$BASE" >"$out" 2>&1 ||
            { cat "$out" >&2; die "wrk failed ($target)"; }
    else
        wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$BASE$HOT_PATH" >"$out" 2>&1 ||
            { cat "$out" >&2; die "wrk failed ($target)"; }
    fi
    rps="$(wrk_rps "$out")"
    p50="$(wrk_latency_ms 50 "$out")"
    p99="$(wrk_latency_ms 99 "$out")"
    errors="$(wrk_errors "$out")"
    requests="$(wrk_requests "$out")"
    [[ -n $rps && -n $p50 && -n $p99 && -n $requests ]] || { cat "$out" >&2; die "could not parse wrk output ($target)"; }
    ((errors == 0)) || { cat "$out" >&2; die "wrk saw $errors non-2xx answers or socket errors ($target run $run)"; }
    kill -0 "$LOOKOUT_PID" 2>/dev/null || die "Lookout (pid $LOOKOUT_PID) died during $target run $run"
    if [[ $target == cold ]] && ((requests > SLOT_SIZE * WRK_THREADS)); then
        log "note: cold run $run sent $requests requests, more than its $((SLOT_SIZE * WRK_THREADS)) distinct URLs; raise URLS"
    fi
    printf '  %-4s run %d  %10.1f req/s   p50 %9.3f ms   p99 %9.3f ms   %d requests\n' \
        "$target" "$run" "$rps" "$p50" "$p99" "$requests" >&2
    LAST=("$rps" "$p50" "$p99" "$requests")
}

log "wrk -t$WRK_THREADS -c$CONNECTIONS -d$DURATION --latency, $ROUNDS rounds alternating cold / hot"
for ((round = 1; round <= ROUNDS; round++)); do
    run_wrk cold "$round" "$TMP/wrk-cold-$round.txt"
    cold_rps+=("${LAST[0]}") cold_p50+=("${LAST[1]}") cold_p99+=("${LAST[2]}")
    cold_sent=$((cold_sent + LAST[3]))
    run_wrk hot "$round" "$TMP/wrk-hot-$round.txt"
    hot_rps+=("${LAST[0]}") hot_p50+=("${LAST[1]}") hot_p99+=("${LAST[2]}")
done

status="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE$HOT_PATH")"
[[ $status == 200 ]] || die "after the runs GET $HOT_PATH answered $status"
if [[ -s $TMP/lookout.stderr ]]; then
    log "Lookout wrote to stderr during the run:"
    show_tail "$TMP/lookout.stderr" "Lookout stderr"
fi

# Each cached view keeps what it read (every document's filtered and sorted fields, for a
# long-poll on it): the render cache full of cold views is most of the server's memory.
RSS_MIB="$(awk '$1 == "VmRSS:" { printf "%.0f", $2 / 1024 }' "/proc/$LOOKOUT_PID/status")"

cold_med="$(median "${cold_rps[@]}")"
hot_med="$(median "${hot_rps[@]}")"
printf '\n'
printf 'items: %s documents; cold: %s distinct list queries (random filters, sort, page), after %s filling the render cache; hot: GET %s (%s bytes)\n' \
    "$DOCUMENTS" "$cold_sent" "$FILL" "$HOT_PATH" "$HOT_BYTES"
printf 'wrk -t%s -c%s -d%s, %s rounds alternating; Lookout --threads %s --database %s (%s)\n' \
    "$WRK_THREADS" "$CONNECTIONS" "$DURATION" "$ROUNDS" "$THREADS" "$DATABASE" "$BINARY"
printf '%-6s %14s %24s %14s %14s\n' target 'median req/s' 'per round req/s' 'median p50 ms' 'median p99 ms'
printf '%-6s %14.1f %24s %14.3f %14.3f\n' cold "$cold_med" "$(printf '%.0f ' "${cold_rps[@]}")" \
    "$(median "${cold_p50[@]}")" "$(median "${cold_p99[@]}")"
printf '%-6s %14.1f %24s %14.3f %14.3f\n' hot "$hot_med" "$(printf '%.0f ' "${hot_rps[@]}")" \
    "$(median "${hot_p50[@]}")" "$(median "${hot_p99[@]}")"
awk -v a="$cold_med" -v b="$hot_med" 'BEGIN { printf "cold/hot (median req/s): %.4f  (hot is %.1fx cold)\n", a / b, b / a }'
printf 'Lookout RSS after the rounds: %s MiB\n' "$RSS_MIB"

# --- profile ---------------------------------------------------------------------------

if [[ $PROFILE == 1 ]]; then
    log "profiling a cold run: perf record -e cpu-clock -g -p $LOOKOUT_PID for ${SECONDS_PER_RUN}s"
    perf record -e cpu-clock -F 999 -g -p "$LOOKOUT_PID" -o "$TMP/perf.data" -- sleep "$SECONDS_PER_RUN" \
        >"$TMP/perf.stdout" 2>"$TMP/perf.stderr" &
    PERF_PID=$!
    run_wrk cold "$COLD_RUNS" "$TMP/wrk-cold-profiled.txt"
    wait "$PERF_PID" || { show_tail "$TMP/perf.stderr" "perf stderr"; die "perf record failed"; }
    PERF_PID=""
    # The first PROFILE_TOP symbols (awk reads everything: no SIGPIPE under pipefail),
    # without unresolved addresses, demangled and trimmed of perf's trailing columns.
    report() { # extra perf report flags...
        perf report -i "$TMP/perf.data" --stdio --sort symbol -g none --percent-limit 0.3 "$@" 2>/dev/null |
            awk -v n="$PROFILE_TOP" '/^#/ || !NF { next }
                { sub(/([[:space:]]+-)*[[:space:]]*$/, "") }
                $NF !~ /^0x[0-9a-f]+$/ && shown < n { print; shown++ }' |
            swift demangle --simplified | cut -c 1-160
    }
    printf '\nprofile of the server during cold run (%s samples), self time, top %s:\n' \
        "$(perf report -i "$TMP/perf.data" --stdio -g none 2>/dev/null | awk '/^# Samples/ { print $3; exit }')" "$PROFILE_TOP"
    report --no-children
    printf '\nwith children (inclusive), top %s:\n' "$PROFILE_TOP"
    report --children
fi
