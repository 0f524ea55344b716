#!/usr/bin/env bash
# The verifiers and SkyRL-gym adapters' tests, in an environment of their own (.venv-frameworks),
# and the Tunix rows of the conformance suite and the token checker in .venv-tunix.
#
# Why not .venv: verifiers 0.4 caps openai<3 (.venv has openai 3.x) and pins mcp==2.0.0 (.venv
# has 2.3.0), and it depends on PyPI's `renderers`, which the checkout's renderers/ folder
# shadows whenever the repository root is on sys.path (`python -m pytest` from the root puts it
# first). SkyRL-gym alone would fit in .venv (it adds func-timeout and omegaconf only); it is
# here so that one environment holds both frameworks of the [verifiers] and [skyrl] extras.
#
# Usage: bash .ci/frameworks.sh [pytest arguments]    (PYTHON=python3.11 to pick the interpreter)
# The first run also prepares verifiers' chat harness (a uv script: needs the package index once).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${FRAMEWORKS_VENV:-.venv-frameworks}
STAMP="$VENV/.installed"
TESTS=(tests/adapters/test_verifiers.py tests/adapters/test_skyrl.py tests/adapters/test_conformance.py)

if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ setup.cfg -nt "$STAMP" ]; then
    rm -f "$STAMP"
    "$PYTHON" -m venv "$VENV"
    # uv when it can be had (as the Makefile does), pip otherwise; uv is also what verifiers'
    # harness runs its chat program with
    if "$VENV/bin/python" -m pip install --quiet uv \
        && "$VENV/bin/uv" pip install --quiet --compile-bytecode --python "$VENV/bin/python" \
            -e ".[verifiers,skyrl]" pytest; then
        echo "frameworks: installed with uv"
    else
        echo "frameworks: uv unavailable or failed: installing with pip"
        "$VENV/bin/python" -m pip install --quiet -e ".[verifiers,skyrl]" pytest
    fi
    touch "$STAMP"
fi

# -P and --import-mode=append keep the repository root off the front of sys.path, so that
# `import renderers` (inside verifiers) finds PyPI's package; uv on PATH for the harness.
PATH="$PWD/$VENV/bin:$PATH" timeout 1800 "$VENV/bin/python" -P -m pytest -q \
    --import-mode=append -p no:cacheprovider "${TESTS[@]}" "$@"

# Tunix lives in .venv-tunix (make test builds it): its conformance row and token-checker path
if [ -x .venv-tunix/bin/python ]; then
    timeout 1800 .venv-tunix/bin/python -m pytest -q -p no:cacheprovider \
        tests/adapters/test_conformance.py tests/adapters/test_token_records.py -k "tunix" "$@"
else
    echo "frameworks: no .venv-tunix (make test-tunix builds it): Tunix rows not run"
fi
