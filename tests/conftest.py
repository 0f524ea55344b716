"""Settings for every test process (and the processes tests start, which inherit them)."""

import os

# torch's OpenMP threads sleep rather than spin while they wait, as under the `agent-envs`
# command: on a loaded machine spinning costs several times the time (`agent-envs bench
# omp-wait`). Set before any test module imports torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
