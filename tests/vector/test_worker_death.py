"""A killed async worker is respawned: its episodes end with ``truncation_reason="worker_died"``,
its envs' seed streams continue, and the other envs (and the collector) carry on."""

from __future__ import annotations

import functools
import os
import signal

import numpy as np
import pytest
from agent_envs.adapters.loop.collector import RolloutCollector
from agent_envs.adapters.loop.engine import Generation
from gymnasium.vector import AutoresetMode

from agent_envs.vector import TextVectorEnv, WorkerDiedError
from agent_envs.vector.seeding import SeedStream
from tests.core.toy_env import CounterEnv

INC = "<answer>inc</answer>"
WAIT = "<answer>wait</answer>"


def make(num_envs=4, *, mode="async", **kwargs):
    env_fn = functools.partial(CounterEnv, goal=2, start_high=1000, max_turns=3)
    return TextVectorEnv([env_fn] * num_envs, mode=mode, num_workers=2, **kwargs)


def kill(envs, worker):
    pid = envs.worker_pids[worker]
    os.kill(pid, signal.SIGKILL)
    return pid


def test_worker_death__step_truncates_the_dead_workers_episodes_and_the_others_go_on():
    reference = make(4, mode="sync")
    envs = make(4)
    reference.reset(seed=0)
    envs.reset(seed=0)
    reference.step([WAIT] * 4)
    before, *_ = envs.step([WAIT] * 4)
    pid = kill(envs, 1)  # it runs envs 2 and 3
    expected = reference.step([WAIT] * 4)
    observations, rewards, terminations, truncations, info = envs.step([WAIT] * 4)
    assert observations[:2] == expected[0][:2] and observations[2:] == before[2:]
    assert truncations.tolist() == [False, False, True, True]
    assert terminations.tolist() == [False, False, False, False]
    assert rewards.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert info["truncation_reason"].tolist() == [None, None, "worker_died", "worker_died"]
    assert info["_truncation_reason"].all()
    assert info["_turn"].tolist() == [True, True, False, False]
    assert [death.pid for death in envs.worker_deaths] == [pid]
    assert envs.worker_deaths[0].exitcode == -signal.SIGKILL
    assert envs.worker_pids[1] != pid
    # NEXT_STEP: the dead envs start their next episode on the next step, from the next
    # seed of their streams (group_streams(0, ...) gives env i the key (i,))
    _, _, _, _, info = envs.step([WAIT] * 4)
    assert info["turn"][2:].tolist() == [0, 0]
    assert info["episode_seed"][2:].tolist() == [
        _second_seed(0, (2,)),
        _second_seed(0, (3,)),
    ]
    envs.close()


def _second_seed(entropy, key):
    stream = SeedStream(entropy, key)
    stream.next()
    return stream.next()


def _killed_run():
    envs = make(4)
    trace = [envs.reset(seed=7)[0]]
    for turn in range(6):
        if turn == 2:
            kill(envs, 0)
        observations, rewards, _, truncations, info = envs.step([INC, WAIT, INC, WAIT])
        trace.append((observations, rewards.tolist(), truncations.tolist()))
        trace.append(info["episode_seed"].tolist())
    envs.close()
    return trace


def test_worker_death__a_run_with_a_death_is_reproducible():
    assert _killed_run() == _killed_run()


def test_worker_death__reset_after_a_death_works_and_matches_a_fresh_env():
    envs = make(4)
    envs.reset(seed=0)
    kill(envs, 0)
    observations, info = envs.reset(seed=3)
    fresh = make(4, mode="sync")
    assert (observations, info["episode_seed"].tolist()) == (
        fresh.reset(seed=3)[0],
        fresh.reset(seed=3)[1]["episode_seed"].tolist(),
    )
    assert len(envs.worker_deaths) == 1
    # the reset replaced the lost episodes: no worker_died truncation follows
    _, _, _, truncations, info = envs.step([WAIT] * 4)
    assert not truncations.any() and info["truncation_reason"].tolist() == [None] * 4
    envs.close()


def test_worker_death__found_by_call_is_reported_by_the_next_step_even_unmasked():
    envs = make(4)
    envs.reset(seed=0)
    kill(envs, 1)
    assert envs.call("goal") == (2, 2, 2, 2)  # run again on the new worker
    mask = np.array([True, True, True, False])
    _, _, _, truncations, info = envs.step([WAIT] * 4, mask)
    assert truncations.tolist() == [False, False, True, True]
    assert info["truncation_reason"][2:].tolist() == ["worker_died", "worker_died"]
    envs.close()


def test_worker_death__same_step_starts_the_next_episode_at_once():
    envs = make(4, autoreset_mode=AutoresetMode.SAME_STEP)
    before, _ = envs.reset(seed=0)
    kill(envs, 1)
    observations, _, _, truncations, info = envs.step([WAIT] * 4)
    assert truncations.tolist() == [False, False, True, True]
    assert info["_final_obs"].tolist() == [False, False, True, True]
    assert info["final_obs"][2:].tolist() == list(before[2:])
    assert info["final_info"]["truncation_reason"][2:].tolist() == ["worker_died"] * 2
    assert info["turn"][2:].tolist() == [0, 0]
    assert info["episode_seed"][2:].tolist() == [_second_seed(0, (2,)), _second_seed(0, (3,))]
    assert observations[2:] != before[2:]
    envs.close()


def test_worker_death__ended_episodes_are_not_reported_again():
    envs = make(4, autoreset_mode="disabled")
    envs.reset(seed=0)
    for _ in range(3):  # max_turns=3: every episode is truncated by the turn budget
        envs.step([WAIT] * 4)
    kill(envs, 1)
    _, _, _, truncations, info = envs.step([WAIT] * 4)
    assert truncations.tolist() == [True, True, False, False]
    assert info["_truncation_reason"].tolist() == [True, True, False, False]
    envs.close()


class FlagCounterEnv(CounterEnv):
    """A CounterEnv that cannot be built while the file ``flag`` exists.

    Extra info: ``count``.
    """

    def __init__(self, *, flag: str, **kwargs):
        if os.path.exists(flag):
            raise OSError(f"{flag} exists")
        super().__init__(**kwargs)


def test_worker_death__a_replacement_that_cannot_start_raises_worker_died_error(tmp_path):
    flag = tmp_path / "flag"
    env_fn = functools.partial(FlagCounterEnv, flag=str(flag))
    envs = TextVectorEnv([env_fn] * 2, mode="async", num_workers=2)
    envs.reset(seed=0)
    flag.touch()
    pid = kill(envs, 0)
    with pytest.raises(WorkerDiedError, match=rf"pid {pid} died .*replacement failed"):
        envs.step([WAIT] * 2)
    with pytest.raises(WorkerDiedError, match=f"pid {pid}"):  # and every later call
        envs.reset(seed=1)
    envs.close()


class KillingEngine:
    """Replies ``wait`` to every request; before the ``kill_turn``-th call it kills a worker."""

    name = "killer"

    def __init__(self, envs, worker, kill_turn):
        self.envs, self.worker, self.kill_turn, self.calls = envs, worker, kill_turn, 0

    def generate(self, requests):
        if self.calls == self.kill_turn:
            kill(self.envs, self.worker)
        self.calls += 1
        return [Generation(text=WAIT) for _ in requests]


def test_worker_death__the_collector_carries_on_with_the_other_envs():
    envs = make(4, autoreset_mode="disabled")
    collector = RolloutCollector(envs, KillingEngine(envs, 1, kill_turn=1), env_id="counter")
    trajectories = collector.collect([1, 2, 3, 4])
    reasons = [trajectory.truncation_reason for trajectory in trajectories]
    assert reasons == ["max_turns", "max_turns", "worker_died", "worker_died"]
    assert [len(trajectory.steps) for trajectory in trajectories] == [3, 3, 1, 1]
    assert all(trajectory.truncated for trajectory in trajectories)
    # the next collection runs on the new worker
    again = collector.collect([1, 2, 3, 4])
    assert [trajectory.truncation_reason for trajectory in again] == ["max_turns"] * 4
    envs.close()
