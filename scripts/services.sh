#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL and Redis on 127.0.0.1 for the store tests.
#   eval "$(scripts/services.sh start DIR)"   # prints: export TETHER_PG_DSN=... TETHER_REDIS_URL=...
#   scripts/services.sh stop DIR
#   scripts/services.sh restart DIR   # kill both at once (no shutdown) and start them again,
#                                     # same ports and data: a crash and a restart
# Installs Debian's postgresql / redis-server when missing. Runs PostgreSQL as the postgres user
# when started as root (initdb refuses root). Redis keeps an append-only file fsynced on every
# write (appendfsync always): an append is on disk when it returns.
set -euo pipefail
action="$1"; dir="$(mkdir -p "$2" && cd "$2" && pwd)"

find_bin() {
    command -v "$1" 2> /dev/null || ls /usr/lib/postgresql/*/bin/"$1" 2> /dev/null | tail -1
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_pg() {  # DIR PORT
    as_owner "$pg_ctl" -D "$1/pg" -l "$1/pg.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $2 -k $1" start > /dev/null
}

start_redis() {  # DIR PORT
    redis-server --bind 127.0.0.1 --port "$2" --dir "$1" --daemonize yes \
        --pidfile "$1/redis.pid" --logfile "$1/redis.log" --save "" \
        --appendonly yes --appendfsync always > /dev/null
    for _ in $(seq 100); do
        redis-cli -p "$2" ping > /dev/null 2>&1 && break
        sleep 0.05
    done
}

if [ "$action" = restart ]; then
    pg_ctl="$(find_bin pg_ctl)"
    as_owner "$pg_ctl" -D "$dir/pg" -m immediate stop > /dev/null
    redis_pid="$(cat "$dir/redis.pid")"
    kill -9 "$redis_pid" 2> /dev/null || true
    while kill -0 "$redis_pid" 2> /dev/null; do sleep 0.05; done
    rm -f "$dir/redis.pid"
    start_pg "$dir" "$(cat "$dir/pg.port")"
    start_redis "$dir" "$(cat "$dir/redis.port")"
    exit 0
fi

if [ "$action" = stop ]; then
    pg_ctl="$(find_bin pg_ctl)"
    if [ -f "$dir/pg/postmaster.pid" ]; then
        as_owner "$pg_ctl" -D "$dir/pg" -m immediate stop > /dev/null
    fi
    if [ -f "$dir/redis.pid" ]; then kill "$(cat "$dir/redis.pid")" 2> /dev/null || true; fi
    exit 0
fi

missing=""
[ -z "$(find_bin initdb)" ] && missing="$missing postgresql"
command -v redis-server > /dev/null || missing="$missing redis-server"
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq > /dev/null && $SUDO apt-get install -y -qq $missing > /dev/null
fi
initdb="$(find_bin initdb)"; pg_ctl="$(find_bin pg_ctl)"
if [ "$(id -u)" -eq 0 ]; then
    id postgres > /dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
fi
port="$(free_port)"
echo "$port" > "$dir/pg.port"
as_owner "$initdb" -D "$dir/pg" -U tether --auth=trust > /dev/null
start_pg "$dir" "$port"
echo "export TETHER_PG_DSN=postgresql://tether@127.0.0.1:$port/postgres"

redis_port="$(free_port)"
echo "$redis_port" > "$dir/redis.port"
start_redis "$dir" "$redis_port"
echo "export TETHER_REDIS_URL=redis://127.0.0.1:$redis_port/0"
