"""Settings for every test process (and the processes tests start, which inherit them), and
the real BIRD sample under ``../shared/data/bird`` (tests that need it skip without it)."""

import os
from pathlib import Path

import pytest

#: the official data samples beside the repository (``../shared/data``)
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_BIRD = SHARED_DATA / "bird"

# torch's OpenMP threads sleep rather than spin while they wait, as under the `agent-envs`
# command: on a loaded machine spinning costs several times the time (`agent-envs bench
# omp-wait`). Set before any test module imports torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def mini_dev() -> Path:
    """BIRD's Mini-Dev questions file, its ``dev_databases/`` beside it (3 of its 11)."""
    questions, databases = SHARED_BIRD / "mini_dev_sqlite.json", SHARED_BIRD / "dev_databases"
    if not questions.is_file() or not databases.is_dir():
        pytest.skip(
            f"the BIRD sample is not at {SHARED_BIRD} (mini_dev_sqlite.json, dev_databases/)"
        )
    return questions
