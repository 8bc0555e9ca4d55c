#!/usr/bin/env bash
# The A2A test kit (a2aproject's a2a-tck, main branch: its A2A 1.0 tests) against `tether serve --a2a`:
#   scripts/a2a-tck.sh KIT_DIR [CATEGORY]    CATEGORY: mandatory (default), capabilities, quality,
#                                            features, transport-equivalence or all
# KIT_DIR is a checkout of the kit, with its own environment as its README sets it up
# (python3 -m venv KIT_DIR/.venv && KIT_DIR/.venv/bin/pip install -e KIT_DIR); TCK_PYTHON names
# another interpreter for it. PYTHON names the one that runs tether (default .venv/bin/python,
# else python3). The served agent is tests/a2a_serve/tck_agent.py, on a fresh SQLite store.
# The kit sends no A2A-Version header, which A2A 1.0 reads as 0.3 (the a2a-sdk server, as
# tether's, then answers -32009), so the header is added through the kit's own A2A_AUTH_HEADERS.
# Exit status: the kit's (non-zero when a test of the category fails). The report is
# KIT_DIR/tether-report.json.
set -euo pipefail
if [[ $# -lt 1 || ! -f "$1/run_tck.py" ]]; then
    echo "usage: scripts/a2a-tck.sh KIT_DIR [CATEGORY] (KIT_DIR: a checkout of a2a-tck)" >&2
    exit 2
fi
kit="$(cd "$1" && pwd)"
category="${2:-mandatory}"
cd "$(dirname "$0")/.."
python="${PYTHON:-$([[ -x .venv/bin/python ]] && echo .venv/bin/python || echo python3)}"
tck_python="${TCK_PYTHON:-$kit/.venv/bin/python}"
work="$(mktemp -d)"
server=""
cleanup() {
    if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

PYTHONUNBUFFERED=1 "$python" -m tether.cli serve --a2a --agent tests/a2a_serve/tck_agent.py:agent \
    --port 0 --store "$work/tasks.db" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    grep -q "agent-card.json" "$work/server.log" && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
base="$(grep -o 'http://[^ ]*:[0-9]*' "$work/server.log" | head -1)"
echo "tether serve --a2a at $base"
cd "$kit"
A2A_AUTH_HEADERS='{"A2A-Version": "1.0"}' "$tck_python" run_tck.py --sut-url "$base/a2a" \
    --category "$category" --compliance-report tether-report.json
