#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance), both directions:
#   scripts/mcp-conformance.sh [RESULTS_DIR]    run it; the last line is "N passed, M failed"
#   scripts/mcp-conformance.sh --install        only install the suite (scripts/parts.sh does)
# Server scenarios run against `tether mcp-serve --http` serving tests/mcp_conformance/
# fixture_agent.py; client scenarios run tests/mcp_conformance/everything_client.py (tether's MCP
# client) against the suite's own servers. The suite needs a newer node than Debian's: the npm
# package `node` brings one into $TETHER_CACHE_DIR/npm-conformance, used by the suite alone (the
# system's node stays as it is). Pinned; after the first run nothing is fetched.
# Exit status: non-zero when a scenario fails that tests/mcp_conformance/expected-failures.yml
# does not list, or one it lists passes (the suite's own --expected-failures verdict).
# PYTHON names the interpreter that runs tether (default .venv/bin/python, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION=0.1.16
NODE_VERSION=26.10.0
export TETHER_CACHE_DIR="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
npm_dir="$TETHER_CACHE_DIR/npm-conformance"
suite="$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node="$npm_dir/node_modules/node/bin/node"

installed() {  # both pinned versions there, and the node runs
    grep -q "\"version\": \"$CONFORMANCE_VERSION\"" \
        "$npm_dir/node_modules/@modelcontextprotocol/conformance/package.json" 2> /dev/null \
        && [ "$("$node" --version 2> /dev/null)" = "v$NODE_VERSION" ]
}

if ! installed; then
    mkdir -p "$npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --silent --save-exact \
        "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
    installed || { echo "scripts/mcp-conformance.sh: the install left no node $NODE_VERSION" >&2; exit 1; }
fi
[ "${1:-}" = "--install" ] && exit 0

if [ -n "${PYTHON:-}" ]; then python="$PYTHON"
elif [ -x .venv/bin/python ]; then python="$PWD/.venv/bin/python"
else python="$(command -v python3)"; fi
here="tests/mcp_conformance"
results="${1:-$(mktemp -d)}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"

# tether's server, on a free port of 127.0.0.1; it prints its address first
"$python" -m tether.cli mcp-serve --agent "$here/fixture_agent.py:agent" --http --port 0 \
    > "$results/serve.out" 2> "$results/serve.err" < /dev/null &
served=$!
trap 'kill "$served" 2> /dev/null; wait "$served" 2> /dev/null || true' EXIT
url=""
for _ in $(seq 200); do
    url="$(grep -o 'http://[^ ]*/mcp' "$results/serve.out" 2> /dev/null || true)"
    [ -n "$url" ] && break
    kill -0 "$served" 2> /dev/null || break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "scripts/mcp-conformance.sh: tether mcp-serve printed no address:" >&2
    cat "$results/serve.err" >&2
    exit 1
fi

verdict=0
"$node" "$suite" server --url "$url" --suite all -o "$results/server" \
    --expected-failures "$here/expected-failures.yml" > "$results/server.log" 2>&1 || verdict=1
# one client scenario at a time: the suite's --suite starts every client at once, more Python
# processes than a small machine starts within the suite's timeout
for scenario in $("$node" "$suite" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p'); do
    "$node" "$suite" client --scenario "$scenario" --timeout 60000 -o "$results/client" \
        --command "$python $PWD/$here/everything_client.py" \
        --expected-failures "$here/expected-failures.yml" >> "$results/client.log" 2>&1 || verdict=1
done

"$python" "$here/summary.py" "$results" "$here/expected-failures.yml"
exit "$verdict"
