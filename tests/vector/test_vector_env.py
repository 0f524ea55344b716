"""The text vector env: seeds, groups, masks, autoreset modes, sync and async."""

from __future__ import annotations

import functools
import os
import signal

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from agent_envs.vector import TextVectorEnv, WorkerDiedError, batch_infos
from tests.core.toy_env import CounterEnv

INC = "<answer>inc</answer>"
WAIT = "<answer>wait</answer>"


def make(num_envs=4, *, goal=2, start_high=1000, **kwargs):
    env_fn = functools.partial(CounterEnv, goal=goal, start_high=start_high, max_turns=3)
    return TextVectorEnv([env_fn] * num_envs, **kwargs)


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


def test_vector__reset_seed_is_reproducible_and_envs_differ(mode):
    envs = make(4, mode=mode)
    first, info = envs.reset(seed=11)
    again, _ = envs.reset(seed=11)
    envs.close()
    assert first == again
    assert len(set(first)) == 4
    assert info["_episode_seed"].all() and len(set(info["episode_seed"])) == 4


def test_vector__sync_and_async_agree():
    results = []
    for mode in ("sync", "async"):
        envs = make(4, mode=mode, num_workers=2)
        trace = [envs.reset(seed=5)[0]]
        for _ in range(5):
            observations, rewards, terminations, truncations, _ = envs.step([INC, WAIT, INC, INC])
            trace.append(
                (observations, rewards.tolist(), terminations.tolist(), truncations.tolist())
            )
        envs.close()
        results.append(trace)
    assert results[0] == results[1]


def test_vector__groups_share_their_start_and_their_autoreset_seeds(mode):
    envs = make(6, group_size=3, mode=mode)
    observations, info = envs.reset(seed=1)
    assert observations[0] == observations[1] == observations[2] != observations[3]
    assert observations[3] == observations[4] == observations[5]
    # env 0 finishes early (truncated after 3 turns either way); members autoreset at
    # different steps and still start their second episodes identically
    seeds = {}
    for _ in range(8):
        _, _, _, _, info = envs.step([WAIT] * 6)
        for index in np.flatnonzero(info["_turn"]):
            if info["turn"][index] == 0:
                seeds.setdefault(index, info["episode_seed"][index])
    envs.close()
    assert seeds[0] == seeds[1] == seeds[2] != seeds[3]


def test_vector__list_of_seeds_gives_each_env_its_seed():
    envs = make(3)
    _, info = envs.reset(seed=[4, 5, 4])
    assert info["episode_seed"].tolist() == [4, 5, 4]


def test_vector__mask_steps_only_chosen_envs(mode):
    envs = make(3, mode=mode)
    envs.reset(seed=0)
    before = envs.call("count")
    _, rewards, terminations, _, info = envs.step([INC] * 3, mask=np.array([True, False, True]))
    after = envs.call("count")
    envs.close()
    assert after[1] == before[1] and after[0] == before[0] + 1 and after[2] == before[2] + 1
    assert info["_turn"].tolist() == [True, False, True]
    assert rewards[1] == 0.0 and not terminations[1]


def test_vector__next_step_autoreset_resets_on_the_following_step():
    envs = make(1, goal=1, start_high=0, autoreset_mode="next_step")
    envs.reset(seed=0)
    _, reward, terminated, _, _ = envs.step([INC])
    assert terminated[0] and reward[0] == 1.0
    observations, reward, terminated, _, info = envs.step([INC])
    assert observations == ("count=0",) and reward[0] == 0.0 and not terminated[0]
    assert info["turn"][0] == 0


def test_vector__same_step_autoreset_keeps_the_final_observation():
    envs = make(2, goal=1, start_high=0, autoreset_mode=AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    observations, _reward, terminated, _, info = envs.step([INC, WAIT])
    assert terminated.tolist() == [True, False]
    assert observations[0] == "count=0"
    assert info["_final_obs"].tolist() == [True, False]
    assert info["final_obs"][0] == "count=1"
    assert info["final_info"]["success"][0]
    assert info["final_info"]["_success"].tolist() == [True, False]


def test_vector__disabled_autoreset_and_reset_mask():
    envs = make(2, goal=1, start_high=0, autoreset_mode="disabled")
    envs.reset(seed=0)
    envs.step([INC, WAIT])
    observations, _, terminated, _, _ = envs.step([WAIT, WAIT])
    assert observations[0] == "count=1" and terminated[0]  # finished env stays finished
    observations, info = envs.reset(options={"reset_mask": np.array([True, False])})
    assert observations == ("count=0", "count=0")
    assert info["_turn"].tolist() == [True, False]
    assert envs.call("turn") == (0, 2)


def test_vector__autoreset_seeds_are_reproducible():
    traces = []
    for _ in range(2):
        envs = make(2, goal=1, start_high=1000)
        envs.reset(seed=9)
        trace = [envs.step([WAIT, INC])[0] for _ in range(8)]
        traces.append(trace)
    assert traces[0] == traces[1]


def test_vector__env_errors_in_workers_are_reported():
    envs = TextVectorEnv([functools.partial(CounterEnv, goal=2)] * 2, mode="async")
    envs.reset(seed=0)
    with pytest.raises(RuntimeError, match="no attribute"):
        envs.call("not_an_attribute")
    envs.close()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"group_size": 3}, "group_size"), ({"mode": "threads"}, "mode"),
     ({"autoreset_mode": "sometimes"}, "autoreset_mode"), ({"num_workers": 0}, "num_workers"),
     ({"respawn_workers": 1}, "respawn_workers")],
)  # fmt: skip
def test_vector__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make(4, **kwargs)


def test_vector__bad_step_arguments_name_the_argument():
    envs = make(2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        envs.step([INC])
    with pytest.raises(ValueError, match="mask"):
        envs.step([INC, INC], mask=[1, 0])


def test_batch_infos__masks_and_dtypes():
    batched = batch_infos([{"a": 1, "b": "x"}, None, {"a": 3, "c": [1]}])
    assert batched["a"].dtype == np.int64 and batched["a"].tolist() == [1, 0, 3]
    assert batched["_a"].tolist() == [True, False, True]
    assert batched["b"].tolist() == ["x", None, None] and batched["_b"].tolist() == [
        True,
        False,
        False,
    ]
    assert batched["c"][2] == [1]


def test_seed_stream__depends_only_on_entropy_key_and_count():
    from agent_envs.vector.seeding import SeedStream

    a, b = SeedStream(5, (1,)), SeedStream(5, (1,))
    first = [a.next() for _ in range(300)]
    assert first == [b.next() for _ in range(300)]
    assert len(set(first)) == 300 and all(0 <= seed < 2**63 for seed in first)
    assert SeedStream(5, (2,)).next() != first[0] and SeedStream(6, (1,)).next() != first[0]
    resumed = SeedStream(5, (1,), count=257)
    assert resumed.next() == first[257]


def test_seed_stream__seed_k_is_word_k_mod_256_of_block_k_div_256():
    from agent_envs.vector.seeding import SeedStream

    stream = SeedStream(5, (1,))
    drawn = [stream.next() for _ in range(600)]
    words = [
        int(word) >> 1
        for block in range(3)
        for word in np.random.SeedSequence(5, spawn_key=(1, block)).generate_state(256, np.uint64)
    ]
    assert drawn == words[:600]


def test_vector__without_respawn_a_killed_worker_raises_naming_pid_and_envs():
    envs = make(4, mode="async", num_workers=2, respawn_workers=False)
    envs.reset(seed=0)
    pid = envs.worker_pids[1]  # runs envs 2 and 3
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerDiedError) as raised:
        envs.step([WAIT] * 4)
    error = raised.value
    assert isinstance(error, RuntimeError)
    assert (error.pid, error.exitcode, error.env_indices) == (pid, -signal.SIGKILL, [2, 3])
    assert f"pid {pid} died (killed by SIGKILL); it ran envs [2, 3]" in str(error)
    assert "respawn_workers=False" in str(error)
    with pytest.raises(WorkerDiedError, match=f"pid {pid}"):  # and every later call
        envs.reset(seed=1)
    envs.close()


class ExitingCounterEnv(CounterEnv):
    """A CounterEnv whose process exits with code 3 on the reply ``exit``.

    Extra info: ``count``.
    """

    def step(self, action):
        if action == "exit":
            os._exit(3)
        return super().step(action)


def test_vector__a_worker_that_exits_is_reported_with_its_exit_code():
    envs = TextVectorEnv(
        [ExitingCounterEnv] * 3, mode="async", num_workers=3, respawn_workers=False
    )
    envs.reset(seed=0)
    pid = envs.worker_pids[0]
    expected = rf"pid {pid} died \(exit code 3\); it ran envs \[0\]"
    with pytest.raises(WorkerDiedError, match=expected):
        envs.step(["exit", WAIT, WAIT])
    envs.close()


def test_batch_infos__same_keys_in_another_order_and_mixed_types():
    batched = batch_infos([{"a": 1, "b": True}, {"b": False, "a": 2.5}])
    assert batched["a"].dtype == object and batched["a"].tolist() == [1, 2.5]
    assert batched["b"].dtype == np.bool_ and batched["b"].tolist() == [True, False]
    assert batched["_a"].all() and batched["_b"].all()


def test_vector__batched_spaces_share_the_single_env_space():
    envs = make(8)
    assert all(space is envs.single_observation_space for space in envs.observation_space)
    assert all(space is envs.single_action_space for space in envs.action_space)
    assert envs.observation_space.contains(envs.reset(seed=0)[0])
