#!/usr/bin/env bash
# The reliability suite in full (RELIABILITY.md), one command, from the repository root after
# the README's install:   scripts/reliability.sh
# CI runs the same tests at their quick sizes. This runs: every property test at 10,000
# examples, the soak (10,000 sessions per store), the SIGKILL trials at 1,000 kills per store,
# and the fault matrices (wire formats, MCP transports, stores with servers restarted).
set -euo pipefail
cd "$(dirname "$0")/.."
python=".venv/bin/python"
services="$(mktemp -d)"
trap 'scripts/services.sh stop "$services"' EXIT
eval "$(scripts/services.sh start "$services")"

echo "== property tests: 10,000 examples each"
"$python" bench/reliability.py --examples "${TETHER_FUZZ_EXAMPLES:-10000}"
echo "== soak: 10,000 sessions per store, 1 % of each fault"
"$python" bench/soak.py --sessions "${TETHER_SOAK_SESSIONS:-10000}"
echo "== fault matrices and SIGKILL trials"
TETHER_CRASH_TRIALS="${TETHER_CRASH_TRIALS:-1000}" "$python" -m pytest -q -p no:cacheprovider \
    tests/transports/test_wire_fault_matrix.py tests/mcp/test_mcp_fault_matrix.py \
    tests/mcp/test_hostile_lists.py tests/mcp/test_hostile_processes.py \
    tests/stores/test_faults.py tests/stores/test_server_restart.py tests/stores/test_crash.py \
    tests/session/test_session_store_faults.py tests/session/test_soak.py \
    tests/loop/test_engine_faults.py tests/tools/test_tool_faults.py tests/base/test_interrupt.py \
    tests/tracing/test_sink_failure.py tests/base/test_writes.py
echo "== durable runs of any size: 50 runs, results up to 20 MB, workers SIGKILLed"
TETHER_SIZE_SOAK_RUNS="${TETHER_SIZE_SOAK_RUNS:-50}" TETHER_SIZE_SOAK_MB="${TETHER_SIZE_SOAK_MB:-20}" \
    "$python" -m pytest -q -p no:cacheprovider tests/durable/test_size_soak.py
