#!/usr/bin/env bash
# The verifiers and SkyRL-gym adapters' tests, and their conformance rows, in the environment
# of their own that `make test` builds (.venv-frameworks; `make test-frameworks` runs this).
#
# Why not .venv: verifiers 0.4 caps openai<3 (.venv has openai 3.x) and pins mcp==2.0.0 (.venv
# has 2.3.0), and it depends on PyPI's `renderers`, which the checkout's renderers/ folder
# shadows whenever the repository root is on sys.path (`python -m pytest` from the root puts it
# first). SkyRL-gym alone would fit in .venv (it adds func-timeout and omegaconf only); it is
# here so that one environment holds both frameworks of the [verifiers] and [skyrl] extras.
#
# Usage: bash .ci/frameworks.sh [pytest arguments]    (FRAMEWORKS_VENV=... to pick the venv)
# The first run also prepares verifiers' chat harness (a uv script: needs the package index once).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${FRAMEWORKS_VENV:-.venv-frameworks}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
TESTS=(tests/adapters/test_verifiers.py tests/adapters/test_skyrl.py tests/adapters/test_conformance.py)
# the whole run (it took about a minute on a busy 2-core machine)
TIME_LIMIT_S=900

if [ ! -f "$VENV/.installed" ]; then
    echo "frameworks: no $VENV (make test-frameworks builds it)" >&2
    exit 1
fi
# the tests skip where a framework is missing; here that would hide a broken install: fail
"$VENV/bin/python" -P -c "import verifiers.v1, skyrl_gym" \
    || { echo "frameworks: verifiers or skyrl_gym does not import in $VENV" >&2; exit 1; }

# -P and --import-mode=append keep the repository root off the front of sys.path, so that
# `import renderers` (inside verifiers) finds PyPI's package; uv on PATH for the harness.
PATH="$VENV/bin:$PATH" timeout "$TIME_LIMIT_S" "$VENV/bin/python" -P -m pytest -q \
    --import-mode=append -p no:cacheprovider "${TESTS[@]}" "$@"
