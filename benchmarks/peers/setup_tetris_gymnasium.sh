#!/usr/bin/env bash
# Create the peer venv for tetris-gymnasium (PyPI 0.3.1) at benchmarks/.peers/tetris-gymnasium.
#
# tetris-gymnasium declares jax, chex and opencv-python as dependencies (its functional JAX
# env needs them; the `Tetris` class we time imports numpy, gymnasium and cv2). They are all
# installed, pinned, so `pip check` passes and the measured package is the one users get.
# Its own venv keeps jax and numpy 2.4 away from ours.
#
# Idempotent: does nothing if the venv already imports tetris_gymnasium 0.3.1.
# Usage: bash benchmarks/peers/setup_tetris_gymnasium.sh   (PYTHON=python3.11 by default)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${ROOT}/benchmarks/.peers/tetris-gymnasium"
PY="${PYTHON:-python3.11}"
VPY="${VENV}/bin/python"

die() { echo "setup_tetris_gymnasium: ERROR: $*" >&2; exit 1; }

check() {
    "${VPY}" -c 'import importlib.metadata as m, tetris_gymnasium.envs.tetris
assert m.version("tetris-gymnasium") == "0.3.1", m.version("tetris-gymnasium")' \
        >/dev/null 2>&1
}

if [[ -x "${VPY}" ]] && check; then
    echo "setup_tetris_gymnasium: ${VENV} already has tetris-gymnasium==0.3.1; nothing to do."
    exit 0
fi

command -v "${PY}" >/dev/null 2>&1 || die "'${PY}' not found (set PYTHON=/path/to/python3.11)."

echo "setup_tetris_gymnasium: creating ${VENV} with ${PY}"
"${PY}" -m venv --clear "${VENV}" || die "could not create the venv at ${VENV}."

pip_install() {
    "${VPY}" -m pip install --disable-pip-version-check -q "$@" \
        || die "pip install $* failed (is PyPI reachable?)."
}

# The package and every dependency, pinned (the versions pip resolved for 0.3.1).
pip_install "tetris-gymnasium==0.3.1" "gymnasium==1.4.0" "numpy==2.4.6" \
    "opencv-python==4.14.0.94" "jax==0.5.3" "jaxlib==0.5.3" "chex==0.1.90" \
    "absl-py==2.5.1" "cloudpickle==3.1.2" "Farama-Notifications==0.0.6" "ml_dtypes==0.6.0" \
    "opt_einsum==3.4.0" "scipy==1.17.1" "toolz==1.2.0" "typing_extensions==4.16.0"

"${VPY}" -m pip check >/dev/null || die "pip check reports broken requirements in ${VENV}."
check || die "the venv was built but 'import tetris_gymnasium' (0.3.1) still fails."
echo "setup_tetris_gymnasium: ready: ${VPY}"
