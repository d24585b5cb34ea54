#!/usr/bin/env bash
# What a hostile body costs before any token check: a 1 MiB JSON object of small keys
# (issue 16: it took 48.5 s of CPU when object members were searched key by key), sent
# to the endpoints that parse a body before anything else.
#
#   Benchmarks/hostile.sh            # ROUNDS=5 by default
#
# Builds the release binary, starts it on a free loopback port with the demo data,
# sends the body ROUNDS times to each endpoint with curl, and prints the median time to
# the answer (loopback transfer of the megabyte included), then stops the server.
#
# Environment:
#   ROUNDS        requests per endpoint                                  default 5
#   LOOKOUT_BIN   measure this binary instead of building .build/release/lookout
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT="$(pwd)"
source Benchmarks/common.sh

ROUNDS=${ROUNDS:-5}
work=$(mktemp -d)
pid=
trap 'stop_pid "$pid" lookout; rm -rf "$work"' EXIT

release_binary "$REPO_ROOT"

# {"k0":0,"k1":0,...} up to 1 MiB, then a login's fields so every endpoint parses it whole.
python3 - "$work/body.json" <<'EOF'
import sys
parts, size, n = [], 2, 0
tail = '"email":"editor@example.com","password":"wrong"'
while size + len('"k%d":0,' % n) + len(tail) < 1048576:
    parts.append('"k%d":0' % n); size += len(parts[-1]) + 1; n += 1
open(sys.argv[1], "w").write("{" + ",".join(parts) + "," + tail + "}")
print("%d keys, %d bytes" % (n + 2, size + len(tail)), file=sys.stderr)
EOF

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$LOOKOUT_BIN" --port "$port" --bind 127.0.0.1 --data-dir "$work/data" --database memory \
    --log-level warning >"$work/lookout.log" 2>&1 &
pid=$!
wait_until_answers "http://127.0.0.1:$port/healthz" "$pid" lookout

printf '%-18s %8s %14s\n' endpoint status "median ms"
for path in /v1/auth/verify /v1/watch /v1/auth/login; do
    times=()
    for ((round = 0; round < ROUNDS; round++)); do
        read -r status seconds < <(curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST \
            "http://127.0.0.1:$port$path" -H 'Content-Type: application/json' --data-binary "@$work/body.json")
        times+=("$(awk -v s="$seconds" 'BEGIN { printf "%.1f", s * 1000 }')")
    done
    printf '%-18s %8s %14s\n' "$path" "$status" "$(median "${times[@]}")"
done
