#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL on 127.0.0.1 for the store tests.
#   eval "$(scripts/services.sh start DIR)"   # prints: export TETHER_PG_DSN=...
#   scripts/services.sh stop DIR
# Installs Debian's postgresql when no initdb is found. Runs the server as the postgres user
# when started as root (initdb refuses root).
set -euo pipefail
action="$1"; dir="$(mkdir -p "$2" && cd "$2" && pwd)"

find_bin() {
    command -v "$1" 2> /dev/null || ls /usr/lib/postgresql/*/bin/"$1" 2> /dev/null | tail -1
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$action" = stop ]; then
    pg_ctl="$(find_bin pg_ctl)"
    [ -f "$dir/pg/postmaster.pid" ] && as_owner "$pg_ctl" -D "$dir/pg" -m immediate stop > /dev/null
    exit 0
fi

if [ -z "$(find_bin initdb)" ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq > /dev/null && $SUDO apt-get install -y -qq postgresql > /dev/null
fi
initdb="$(find_bin initdb)"; pg_ctl="$(find_bin pg_ctl)"
if [ "$(id -u)" -eq 0 ]; then
    id postgres > /dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_owner "$initdb" -D "$dir/pg" -U tether --auth=trust > /dev/null
as_owner "$pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start > /dev/null
echo "export TETHER_PG_DSN=postgresql://tether@127.0.0.1:$port/postgres"
