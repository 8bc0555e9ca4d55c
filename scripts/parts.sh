#!/usr/bin/env bash
# Install, where missing, the real parts the tests use on a Debian machine: node with
# @modelcontextprotocol/server-everything (into $TETHER_CACHE_DIR/npm), the MCP conformance suite
# with the newer node it needs (into $TETHER_CACHE_DIR/npm-conformance, pinned in
# scripts/mcp-conformance.sh), the official AG-UI client (@ag-ui/client, into
# $TETHER_CACHE_DIR/npm-agui, run by the conformance suite's node), a CopilotKit runtime
# (@copilotkit/runtime, into $TETHER_CACHE_DIR/npm-copilotkit), Chromium, PostgreSQL and Redis.
# Idempotent; after the first run it fetches nothing. scripts/test.sh and .ci/run call it.
set -euo pipefail
cd "$(dirname "$0")/.."

EVERYTHING_VERSION=2026.8.31
AGUI_CLIENT_VERSION=1.0.4
COPILOTKIT_VERSION=1.75.0
export TETHER_CACHE_DIR="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"

has_pg() { command -v initdb > /dev/null || ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1; }
missing=""
command -v npm > /dev/null || missing="$missing nodejs npm"
command -v chromium > /dev/null || command -v chromium-browser > /dev/null || missing="$missing chromium"
has_pg || missing="$missing postgresql"
command -v redis-server > /dev/null || missing="$missing redis-server"
if [ -n "$missing" ]; then
    echo "scripts/parts.sh: installing$missing" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq > /dev/null
    # shellcheck disable=SC2086  # one word per package
    $SUDO apt-get install -y -qq $missing > /dev/null
fi

npm_dir="$TETHER_CACHE_DIR/npm"
installed="$npm_dir/node_modules/@modelcontextprotocol/server-everything/package.json"
if ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$installed" 2> /dev/null; then
    mkdir -p "$npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --silent \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi

scripts/mcp-conformance.sh --install  # its own node; the system's stays as it is

agui_dir="$TETHER_CACHE_DIR/npm-agui"  # tests/serve/test_agui_client.py
if ! grep -q "\"version\": \"$AGUI_CLIENT_VERSION\"" \
    "$agui_dir/node_modules/@ag-ui/client/package.json" 2> /dev/null; then
    mkdir -p "$agui_dir"
    npm install --prefix "$agui_dir" --no-audit --no-fund --silent --save-exact \
        "@ag-ui/client@$AGUI_CLIENT_VERSION"
fi

copilotkit_dir="$TETHER_CACHE_DIR/npm-copilotkit"  # tests/serve/test_copilotkit.py
if ! grep -q "\"version\": \"$COPILOTKIT_VERSION\"" \
    "$copilotkit_dir/node_modules/@copilotkit/runtime/package.json" 2> /dev/null; then
    mkdir -p "$copilotkit_dir"
    npm install --prefix "$copilotkit_dir" --no-audit --no-fund --silent --save-exact \
        "@copilotkit/runtime@$COPILOTKIT_VERSION"
fi
