#!/usr/bin/env bash
# The bench environment of bench/bfcl.py: a virtual environment of its own (never tether's dev
# one) with the Berkeley Function Calling Leaderboard's package `bfcl-eval` installed WITHOUT its
# dependencies (they include sentence-transformers and torch, for categories bench/bfcl.py does
# not run), plus what the package's checkers and its OpenAI-compatible handler import (its model
# registry imports every vendor SDK it has a handler for, so those are here; none of them is
# called), plus this checkout of tether with the `local` extra (editable).
#
# Idempotent: the environment lives in $TETHER_CACHE_DIR/bfcl-venv and is reinstalled only when
# the pins below change or tether is not this checkout's. Prints the environment's python as its
# last line, so CI can run:  py=$(bash scripts/bench-env.sh | tail -n 1) && "$py" bench/bfcl.py --quick
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

export TETHER_CACHE_DIR="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
venv="$TETHER_CACHE_DIR/bfcl-venv"
py="$venv/bin/python"

BFCL="bfcl-eval==2026.3.23"
# What `import bfcl_eval.eval_checker.eval_runner` and the OpenAI-compatible handler need, found
# by importing them until nothing was missing; pinned to the versions measured with.
NEEDS=(
    "numpy==1.26.4" "pandas==3.0.6" "tree_sitter==0.21.3" "tree-sitter-java==0.21.0"
    "tree-sitter-javascript==0.21.4" "openai==3.63.0" "mistralai==1.7.0" "anthropic==2.17.0"
    "cohere==5.18.0" "datamodel-code-generator==0.25.7" "google-genai==3.6.1"
    "qwen-agent==0.0.34" "soundfile==0.14.0" "mpmath==1.3.0" "tenacity==9.1.4"
    "writer-sdk==3.0.0" "overrides==7.7.0" "boto3==1.44.18" "filelock==3.20.0"
    "python-dotenv==1.2.4" "tqdm==4.70.1" "requests==2.34.2"
)
stamp="$venv/.tether-bench-stamp"
want="$BFCL ${NEEDS[*]} tether@$repo"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$py" ]; then
    echo "scripts/bench-env.sh: $venv is up to date" >&2
else
    echo "scripts/bench-env.sh: installing the bench environment into $venv" >&2
    mkdir -p "$TETHER_CACHE_DIR"
    [ -x "$py" ] || python3 -m venv "$venv"
    "$py" -m pip install -q --disable-pip-version-check --no-deps "$BFCL" >&2
    "$py" -m pip install -q --disable-pip-version-check "${NEEDS[@]}" -e "$repo[local]" >&2
    "$py" -c "import bfcl_eval.eval_checker.eval_runner, tether.local" >&2
    echo "$want" > "$stamp"
fi
echo "$py"
