#!/usr/bin/env bash
# Create the peer venv for gym-sokoban (PyPI 0.0.6) at benchmarks/.peers/gym-sokoban.
#
# gym-sokoban needs the old `gym` package (not gymnasium); gym 0.26.2 ships only
# as an sdist, which we build with `wheel` pre-installed and --no-build-isolation
# (so it uses the pinned setuptools below instead of fetching a build env).
# numpy is pinned < 2 (gym 0.26.2 predates numpy 2; gym-sokoban needs >=1.14.1).
# setuptools is pinned because gym_sokoban imports pkg_resources at import time.
#
# Idempotent: does nothing if the venv already imports gym_sokoban with gym 0.26.2.
# Usage: bash benchmarks/peers/setup_gym_sokoban.sh   (PYTHON=python3.11 by default)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${ROOT}/benchmarks/.peers/gym-sokoban"
PY="${PYTHON:-python3.11}"
VPY="${VENV}/bin/python"

die() { echo "setup_gym_sokoban: ERROR: $*" >&2; exit 1; }

check() {
    "${VPY}" -c 'import gym, gym_sokoban.envs.room_utils; assert gym.__version__ == "0.26.2", gym.__version__' \
        >/dev/null 2>&1
}

if [[ -x "${VPY}" ]] && check; then
    echo "setup_gym_sokoban: ${VENV} already has gym==0.26.2 + gym-sokoban; nothing to do."
    exit 0
fi

command -v "${PY}" >/dev/null 2>&1 || die "'${PY}' not found (set PYTHON=/path/to/python3.11)."

echo "setup_gym_sokoban: creating ${VENV} with ${PY}"
"${PY}" -m venv --clear "${VENV}" || die "could not create the venv at ${VENV}."

pip_install() {
    "${VPY}" -m pip install --disable-pip-version-check -q "$@" \
        || die "pip install $* failed (is PyPI reachable?)."
}

# 1. Build tooling first, so the gym sdist can be built without isolation.
pip_install "setuptools==69.5.1" "wheel==0.43.0"
# 2. gym's runtime deps, then gym itself from its sdist.
pip_install "numpy==1.26.4" "cloudpickle==3.0.0" "gym_notices==0.0.8"
pip_install --no-build-isolation "gym==0.26.2"
# 3. gym-sokoban and its (pinned) runtime deps.
pip_install "gym-sokoban==0.0.6" "tqdm==4.66.4" "imageio==2.34.1" "pillow==10.3.0" \
    "requests==2.32.3" "certifi==2024.6.2" "charset-normalizer==3.3.2" "idna==3.7" "urllib3==2.2.2"

"${VPY}" -m pip check >/dev/null || die "pip check reports broken requirements in ${VENV}."
check || die "the venv was built but 'import gym_sokoban' with gym==0.26.2 still fails."
echo "setup_gym_sokoban: ready: ${VPY}"
