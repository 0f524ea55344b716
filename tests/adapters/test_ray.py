"""``mode="ray"``: sub-envs held by Ray actors on a local cluster started by the test."""

from __future__ import annotations

import faulthandler
import functools
import os
import signal
from pathlib import Path

import gymnasium
import numpy as np
import pytest

ray = pytest.importorskip("ray")

import agent_envs.adapters.ray  # noqa: E402  (registers mode="ray")
from agent_envs.adapters.engines.scripted import oracle_engine  # noqa: E402
from agent_envs.adapters.loop.collector import RolloutCollector  # noqa: E402

import agent_envs  # noqa: E402, F401
from agent_envs.vector import TextVectorEnv  # noqa: E402
from agent_envs.vector.seeding import SeedStream  # noqa: E402
from tests.core.toy_env import CounterEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
INC = "<answer>inc</answer>"
WAIT = "<answer>wait</answer>"
TIME_LIMIT_S = 240  # the whole module; a hung cluster fails the run instead of stalling it


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    faulthandler.dump_traceback_later(TIME_LIMIT_S, exit=True)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},  # tests.core.toy_env
    )
    try:
        yield
    finally:
        ray.shutdown()
        faulthandler.cancel_dump_traceback_later()


def make(num_envs=4, *, mode="ray", **kwargs):
    env_fn = functools.partial(CounterEnv, goal=2, start_high=1000, max_turns=3)
    return TextVectorEnv([env_fn] * num_envs, mode=mode, num_workers=2, **kwargs)


def _trace(envs):
    trace = [envs.reset(seed=5)[0]]
    mask = np.array([True, True, False, True, True, True])
    for turn in range(5):
        actions = [INC, WAIT, INC, INC, WAIT, INC]
        observations, rewards, terminations, truncations, info = envs.step(
            actions, mask if turn == 1 else None
        )
        trace.append((observations, rewards.tolist(), terminations.tolist()))
        trace.append((truncations.tolist(), info["episode_seed"].tolist()))
    envs.close()
    return trace


def test_ray__actors_run_the_same_episodes_as_sync():
    assert _trace(make(6, group_size=3)) == _trace(make(6, group_size=3, mode="sync"))


def test_ray__actors_are_separate_processes():
    envs = make(4)
    pids = envs.worker_pids
    envs.close()
    assert len(set(pids)) == 2 and os.getpid() not in pids


def test_ray__env_errors_in_actors_are_reported():
    envs = make(2)
    envs.reset(seed=0)
    with pytest.raises(RuntimeError, match="no attribute"):
        envs.call("not_an_attribute")
    assert envs.call("goal") == (2, 2)  # the actors keep serving
    envs.close()


def test_ray__a_killed_actor_is_respawned_and_its_episodes_end_as_worker_died():
    envs = make(4)
    before, _ = envs.reset(seed=0)
    pid = envs.worker_pids[1]  # runs envs 2 and 3
    os.kill(pid, signal.SIGKILL)
    observations, _, _, truncations, info = envs.step([WAIT] * 4)
    assert truncations.tolist() == [False, False, True, True]
    assert info["truncation_reason"].tolist() == [None, None, "worker_died", "worker_died"]
    assert observations[2:] == before[2:]
    assert [death.pid for death in envs.worker_deaths] == [pid]
    assert envs.worker_pids[1] != pid
    _, _, _, _, info = envs.step([WAIT] * 4)  # the next episode, from the stream's next seed
    seeds = []
    for key in (2, 3):
        stream = SeedStream(0, (key,))
        stream.next()
        seeds.append(stream.next())
    assert info["turn"][2:].tolist() == [0, 0]
    assert info["episode_seed"][2:].tolist() == seeds
    envs.close()


def test_ray__the_collector_drives_a_ray_vector_env_unchanged():
    trajectories = {}
    for mode in ("sync", "ray"):
        envs = gymnasium.make_vec(
            "grl/Sokoban-v0", num_envs=4, mode=mode, num_workers=2, autoreset_mode="disabled"
        )
        collector = RolloutCollector(envs, oracle_engine(), env_id="grl/Sokoban-v0")
        trajectories[mode] = [t.to_dict() for t in collector.collect([3, 4, 5, 6])]
        envs.close()
    assert trajectories["ray"] == trajectories["sync"]
    assert all(t["success"] for t in trajectories["ray"])
