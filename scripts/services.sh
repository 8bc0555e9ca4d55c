#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL and Redis on 127.0.0.1 for the store tests.
#   eval "$(scripts/services.sh start DIR)"   # prints: export TETHER_PG_DSN=... TETHER_REDIS_URL=...
#   scripts/services.sh stop DIR
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
as_owner "$initdb" -D "$dir/pg" -U tether --auth=trust > /dev/null
as_owner "$pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start > /dev/null
echo "export TETHER_PG_DSN=postgresql://tether@127.0.0.1:$port/postgres"

redis_port="$(free_port)"
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save "" \
    --appendonly yes --appendfsync always > /dev/null
for _ in $(seq 100); do
    redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break
    sleep 0.05
done
echo "export TETHER_REDIS_URL=redis://127.0.0.1:$redis_port/0"
