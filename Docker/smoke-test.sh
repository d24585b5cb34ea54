#!/usr/bin/env bash
# Smoke test of the real container image, as a user runs it (issue 7):
#
#   1. makes the Dockerfile's base images locally (Docker/base-images.sh; nothing is pulled),
#   2. builds Docker/Dockerfile unchanged with podman (`--pull=never --format docker`),
#   3. runs it with a published port and a named volume, and checks: healthy, not root, the
#      seed app's six endpoints through the port, a long-poll held through the container
#      woken by a write, data surviving a new container on the same volume, and `stop`
#      exiting 0 with the server's own exit status 0;
#   4. runs two containers of the image on one PostgreSQL (the installed server, started
#      here on loopback; the containers on the host's network) and checks that a
#      long-poll held on one is woken by a write on the other.
#
# Podman stands in for Docker (same flags); its configuration and storage are private to
# this run, in a temp directory removed at the end with every container, volume and image
# the test made. KEEP=1 keeps the directory (images, logs) for a second, faster run:
# STORE=DIR reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."

store=${STORE:-$(mktemp -d /tmp/lookout-smoke.XXXXXX)}
mkdir -p "$store/work"
image=localhost/lookout:smoke
name=lookout-smoke
volume=lookout-smoke-data
started=$(date +%s)
failures=0

log() { printf 'smoke: %s\n' "$*"; }
pass() { printf 'smoke: ok    %s\n' "$*"; }
fail() {
    printf 'smoke: FAIL  %s\n' "$*"
    failures=$((failures + 1))
}
check() { # description command...
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

install_tools() {
    local -a missing=() sudo=()
    for tool in podman runc debootstrap curl; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
    ((${#missing[@]} == 0)) && return 0
    ((EUID == 0)) || sudo=(sudo)
    log "installing podman runc netavark aardvark-dns iptables debootstrap curl"
    "${sudo[@]}" apt-get update -q >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc netavark aardvark-dns \
        iptables debootstrap curl >/dev/null
}
install_tools
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ ! -x $PG_BIN/initdb ]]; then
    log "installing postgresql"
    ((EUID == 0)) || sudo=(sudo)
    ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi

# The sandbox cannot raise rlimits and has hybrid cgroups: runc, cgroupfs, explicit ulimits.
cat >"$store/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
cat >"$store/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$store/storage"
runroot = "$store/run"
CONF
export CONTAINERS_CONF="$store/containers.conf" CONTAINERS_STORAGE_CONF="$store/storage.conf"

pg_pid=""
pg_dir=""
cleanup() {
    local status=$?
    podman rm -f -t 0 "$name" "$name-2" "$name-a" "$name-b" >/dev/null 2>&1 || true
    if [[ -n $pg_pid ]]; then
        kill -INT "$pg_pid" 2>/dev/null || true
        wait "$pg_pid" 2>/dev/null || true
    fi
    [[ -z $pg_dir ]] || rm -rf "$pg_dir"
    podman volume rm -f "$volume" >/dev/null 2>&1 || true
    if [[ ${KEEP:-0} == 1 ]]; then
        log "kept $store (STORE=$store reuses it)"
    else
        podman rmi -f "$image" >/dev/null 2>&1 || true
        podman system reset -f >/dev/null 2>&1 || true
        rm -rf "$store"
    fi
    exit "$status"
}
trap cleanup EXIT

log "base images (made locally, never pulled)"
bash Docker/base-images.sh "$store/work"

log "podman build --pull=never --format docker -f Docker/Dockerfile -t $image ."
build_started=$(date +%s)
podman build --pull=never --format docker --network=host -f Docker/Dockerfile -t "$image" . >"$store/build.log" 2>&1 ||
    { tail -n 40 "$store/build.log"; fail "the image builds"; exit 1; }
pass "the image builds ($(($(date +%s) - build_started)) s; $(podman image inspect "$image" --format '{{.Size}}' | awk '{ printf "%.0f MB", $1 / 1e6 }'))"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# The README's run command, with podman for docker and a free port.
run_container() { # name
    # Podman's complaints that there is no systemd for periodic health timers are harmless.
    podman run -d --name "$1" -p "127.0.0.1:$port:3001" -v "$volume:/var/lib/lookout/data" "$image" \
        >/dev/null 2>>"$store/podman.log"
}

wait_healthy() { # name
    local i
    for ((i = 0; i < 60; i++)); do
        if podman healthcheck run "$1" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    podman logs "$1" | tail -n 20
    return 1
}

run_container "$name"
check "the container becomes healthy (its HEALTHCHECK against /healthz)" wait_healthy "$name"
check "the HEALTHCHECK survived the build (docker format)" \
    test -n "$(podman image inspect "$image" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0].get("Healthcheck") or "")' | grep healthz)"
uid=$(podman exec "$name" id -u)
check "the server runs as a non-root user (uid $uid)" test "$uid" != 0
check "the image's user is lookout" test "$(podman image inspect "$image" --format '{{.Config.User}}')" = lookout
server_uid=$(podman top "$name" user | awk 'NR == 2 { print $1 }')
check "the server process is not root ($server_uid)" test "$server_uid" != root

# The seed app's six endpoints, as contract/seed-app.md describes them.
json=(-H 'Content-Type: application/json')
login=$(curl -s -o "$store/login.json" -w '%{http_code}' -X POST "$base/v1/auth/login" "${json[@]}" \
    -d '{"email":"demo@example.com","password":"demo-password"}')
token=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["token"])' "$store/login.json" 2>/dev/null || true)
check "login: 200 with a token" test "$login" = 200 -a -n "$token"
check "login with a wrong password: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/v1/auth/login" \
    "${json[@]}" -d '{"email":"demo@example.com","password":"wrong"}')" = 401
verified=$(curl -s -X POST "$base/v1/auth/verify" "${json[@]}" -H "Authorization: Bearer $token" -d '{}')
check "verify with the token: 200, the same token" test "$verified" = "{\"token\":\"$token\"}"
check "verify without a token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/v1/auth/verify" \
    "${json[@]}" -d '{}')" = 401
feeds_ok() { # path: 200 and a non-empty JSON array (or the info_feed envelope)
    curl -s -f "${json[@]}" "$base$1" | python3 -c '
import json, sys
body = json.load(sys.stdin)
items = body["information"] if isinstance(body, dict) else body
sys.exit(0 if isinstance(items, list) and items else 1)'
}
check "info_feed: 200 with items" feeds_ok "/v1/info_feed?page=1"
check "pickup_feeds: 200 with items" feeds_ok /v1/pickup_feeds
check "galleries: 200 with items" feeds_ok /v1/galleries
ranks=$(curl -s -f "${json[@]}" "$base/v1/category_feeds" | python3 -c '
import json, sys
ranks = [c["rank"] for c in json.load(sys.stdin)]
print("sorted" if ranks and ranks == sorted(ranks) else "unsorted")')
check "category_feeds: 200, sorted by rank" test "$ranks" = sorted

# The README's user command, inside the running container.
printf '%s\n' 'a long pass phrase' | podman exec -i "$name" lookout user add ops@example.com --role admin >/dev/null
check "lookout user add inside the container; the new user logs in" test "$(curl -s -o /dev/null -w '%{http_code}' \
    -X POST "$base/v1/auth/login" "${json[@]}" -d '{"email":"ops@example.com","password":"a long pass phrase"}')" = 200

# A long-poll held through the published port, woken by a write.
editor=$(curl -s -X POST "$base/v1/auth/login" "${json[@]}" \
    -d '{"email":"editor@example.com","password":"editor-password"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
etag=$(curl -s -o /dev/null -w '%header{etag}' "$base/v1/pickup_feeds/1?fields=title")
curl -s -o "$store/poll.json" -w '%{http_code} %{time_total}' -H "If-None-Match: $etag" \
    "$base/v1/pickup_feeds/1?fields=title&wait=30" >"$store/poll.status" &
poll=$!
sleep 1
check "the long-poll is held (no answer after 1 s)" kill -0 "$poll"
curl -s -o /dev/null -X PATCH "$base/v1/pickup_feeds/1" "${json[@]}" -H "Authorization: Bearer $editor" \
    -d '{"title":"changed in the container"}'
wait "$poll" || true
check "the write wakes it: 200 with the new title ($(cat "$store/poll.status") s)" \
    grep -q '"changed in the container"' "$store/poll.json"

# Stop: SIGTERM, the server exits 0; a new container on the same volume has the write.
stop() { podman stop -t 15 "$1" >/dev/null 2>>"$store/podman.log"; }
check "podman stop exits 0" stop "$name"
check "the server's exit status is 0" test "$(podman inspect "$name" --format '{{.State.ExitCode}}')" = 0
podman rm "$name" >/dev/null 2>>"$store/podman.log"
run_container "$name-2"
check "a new container on the same volume becomes healthy" wait_healthy "$name-2"
check "the data survived: the written title is there" test "$(curl -s "$base/v1/pickup_feeds/1?fields=title")" = \
    '{"id":1,"title":"changed in the container"}'
check "tokens survived too (the signing keys are on the volume)" test "$(curl -s -o /dev/null -w '%{http_code}' \
    -X POST "$base/v1/auth/verify" "${json[@]}" -H "Authorization: Bearer $token" -d '{}')" = 200
check "the second container stops cleanly too" stop "$name-2"

# Two containers on one PostgreSQL: the image's PostgreSQL client, and a write on one
# waking a poll held on the other. PostgreSQL refuses root: as root it runs as nobody,
# through an array rather than a function, so the server started in the background is
# this shell's child, with its PID in $!.
as_pg=()
[[ $(id -u) != 0 ]] || as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Its own directory, outside the store (mode 0700, root's): as nobody it must reach it.
pg_dir=$(mktemp -d /tmp/lookout-smoke-pg.XXXXXX)
chmod 755 "$pg_dir"
((EUID != 0)) || chown nobody:nogroup "$pg_dir"
${as_pg[@]+"${as_pg[@]}"} "$PG_BIN/initdb" -D "$pg_dir/data" -U lookout --auth=trust -E UTF8 --no-locale --no-sync >/dev/null
pg_port=$(free_port)
${as_pg[@]+"${as_pg[@]}"} "$PG_BIN/postgres" -D "$pg_dir/data" -p "$pg_port" -k "$pg_dir" -c listen_addresses=127.0.0.1 \
    >"$store/pg.log" 2>&1 &
pg_pid=$!
for ((i = 0; i < 100; i++)); do "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done
"$PG_BIN/createdb" -h 127.0.0.1 -p "$pg_port" -U lookout lookout
token_key=$(head -c 32 /dev/urandom | base64)
port_a=$(free_port)
port_b=$(free_port)
run_on_postgres() { # name port
    podman run -d --name "$1" --network host -e LOOKOUT_BIND=127.0.0.1 -e LOOKOUT_PORT="$2" \
        -e LOOKOUT_DATABASE="postgres://lookout@127.0.0.1:$pg_port/lookout" -e LOOKOUT_TOKEN_KEY="$token_key" \
        "$image" >/dev/null 2>>"$store/podman.log"
}
ready() { # port
    local i
    for ((i = 0; i < 60; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz") == 200 ]] && return 0
        sleep 0.5
    done
    return 1
}
run_on_postgres "$name-a" "$port_a"
check "a container on PostgreSQL is ready" ready "$port_a"
run_on_postgres "$name-b" "$port_b"
check "a second container on the same database is ready" ready "$port_b"
editor=$(curl -s -X POST "http://127.0.0.1:$port_a/v1/auth/login" "${json[@]}" \
    -d '{"email":"editor@example.com","password":"editor-password"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
etag=$(curl -s -o /dev/null -w '%header{etag}' "http://127.0.0.1:$port_b/v1/galleries/1?fields=title")
curl -s -o "$store/poll-b.json" -H "If-None-Match: $etag" \
    "http://127.0.0.1:$port_b/v1/galleries/1?fields=title&wait=30" &
poll=$!
sleep 1
check "a long-poll is held on the second" kill -0 "$poll"
check "the first takes a write with the first's token" test "$(curl -s -o /dev/null -w '%{http_code}' -X PATCH \
    "http://127.0.0.1:$port_a/v1/galleries/1" "${json[@]}" -H "Authorization: Bearer $editor" \
    -d '{"title":"written on the first container"}')" = 200
wait "$poll" || true
check "the write on the first wakes the poll on the second" \
    grep -q '"written on the first container"' "$store/poll-b.json"
stop_both() { podman stop -t 15 "$name-a" "$name-b" >/dev/null 2>>"$store/podman.log"; }
check "both stop cleanly" stop_both

log "$failures failure(s) in $(($(date +%s) - started)) s"
((failures == 0))
