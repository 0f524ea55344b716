"""Tunix glue: multi-turn Sokoban rollouts from a tiny random Tunix Qwen2 as Tunix batches,
trained by Tunix's GRPO loss on CPU; our envs as Tunix agentic environments.

The tiny model and the tokenizer are built here (``conftest.build_tokenizer``), nothing is
downloaded. Skipped where the ``[tunix]`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import copy

import numpy as np
import pytest

pytest.importorskip("tunix")

import gymnasium
import jax
import jax.numpy as jnp
from agent_envs.adapters import tunix as tunix_glue
from agent_envs.adapters.advantages import episode_advantages, mix_off_policy, token_advantages
from agent_envs.adapters.engines.scripted import oracle_engine
from agent_envs.adapters.loop import ChatDelta, RolloutCollector, collect_episodes
from agent_envs.adapters.loop.engine import GenerationRequest
from flax import nnx

import agent_envs  # noqa: F401
from agent_envs.core.policies import OraclePolicy
from agent_envs.core.records import Trajectory

ENV_ID = "grl/Sokoban-v0"
SEEDS = [0, 1]
GROUP = 2
TURNS = 3
NEW_TOKENS = 16


def tokenizer_pad(cluster) -> int:
    return cluster.rollout.pad_id()


def _params(model) -> list[np.ndarray]:
    return [np.array(leaf) for leaf in jax.tree.leaves(nnx.state(model, nnx.Param))]


@pytest.fixture(scope="module")
def cluster(tokenizer):
    model = tunix_glue.tiny_qwen2(len(tokenizer), seed=0)
    return tunix_glue.make_cluster(
        model, tokenizer, learning_rate=1e-2, max_new_tokens=NEW_TOKENS, kv_cache_size=1024
    )


@pytest.fixture(scope="module")
def rollouts(cluster):
    """Two groups of two 3-turn Sokoban episodes sampled by the tiny model (before any
    update: the tests that update the model come later in this file)."""
    vec = gymnasium.make_vec(
        ENV_ID, num_envs=len(SEEDS) * GROUP, group_size=GROUP, autoreset_mode="disabled"
    )
    collector = RolloutCollector(
        vec,
        tunix_glue.TunixEngine(cluster, seed=7),
        max_turns=TURNS,
        max_new_tokens=NEW_TOKENS,
        max_total_tokens=1024,
    )
    try:
        return collector.collect(SEEDS)
    finally:
        vec.close()


# --------------------------------------------------------------------- tokenizer, engine
def test_tokenizer__passes_token_ids_through_and_encodes_text(tokenizer):
    wrapped = tunix_glue.TunixTokenizer(tokenizer)
    assert wrapped.encode([5, 9, 2]) == [5, 9, 2]
    assert wrapped.encode(np.array([5, 9])) == [5, 9]
    assert wrapped.encode("<answer>Up</answer>") == tokenizer.encode(
        "<answer>Up</answer>", add_special_tokens=False
    )
    assert wrapped.bos_id() is None
    assert (wrapped.eos_id(), wrapped.pad_id()) == (tokenizer.eos_token_id, tokenizer.pad_token_id)


@pytest.mark.slow
def test_engine__refuses_bad_configuration(cluster):
    with pytest.raises(ValueError, match="mode"):
        tunix_glue.TunixEngine(cluster, mode="test")
    with pytest.raises(ValueError, match="seed"):
        tunix_glue.TunixEngine(cluster, seed=1.5)
    plain = copy.copy(cluster)
    plain.tokenizer = type("Adapter", (), {"tokenizer": object()})()
    with pytest.raises(ValueError, match="TunixTokenizer"):
        tunix_glue.TunixEngine(plain)


@pytest.mark.slow
def test_engine__multi_turn_records_carry_sampled_ids_and_logprobs(cluster, tokenizer, rollouts):
    delta = ChatDelta(tokenizer)
    assert len(rollouts) == len(SEEDS) * GROUP
    for trajectory in rollouts:
        assert trajectory.agent == "tunix" and trajectory.error is None
        assert trajectory.num_turns == TURNS  # a random tiny model never solves a level
        assert trajectory.prompt_ids == delta.prompt_ids(trajectory.messages[:2])
        for turn, (ids, logprobs) in enumerate(
            zip(trajectory.turn_completion_ids, trajectory.turn_logprobs, strict=True)
        ):
            assert 1 <= len(ids) <= NEW_TOKENS and len(logprobs) == len(ids)
            assert all(value <= 0.0 for value in logprobs)
            assert trajectory.steps[turn].reply == tokenizer.decode(ids, skip_special_tokens=True)
        assert trajectory.turn_env_ids[-1] == []
        assert all(trajectory.turn_env_ids[:-1])


@pytest.mark.slow
def test_engine__logprobs_are_the_models_logprobs_of_the_sampled_tokens(cluster, rollouts):
    """The rollout's log-probabilities equal a fresh forward pass over the whole episode at
    every model token (they are the behaviour policy's, the old log-probs of the update)."""
    example = tunix_glue.build_train_example(
        rollouts, np.zeros(len(rollouts)), pad_id=tokenizer_pad(cluster)
    )
    recomputed = np.asarray(
        cluster.rollout.get_per_token_logps(example.prompt_ids, example.completion_ids)
    )
    mask = np.asarray(example.completion_mask).astype(bool)
    sampled = np.asarray(example.old_per_token_logps)
    np.testing.assert_allclose(sampled[mask], recomputed[mask], atol=2e-4)


@pytest.mark.slow
def test_engine__eval_mode_is_greedy_and_reproducible(cluster, tokenizer):
    engine = tunix_glue.TunixEngine(cluster, mode="eval")
    delta = ChatDelta(tokenizer)
    prompt = delta.prompt_ids([{"role": "user", "content": "Up or Down?"}])
    requests = [
        GenerationRequest(max_new_tokens=8, prompt_ids=prompt, stop_token_ids=(99_999,)),
        GenerationRequest(max_new_tokens=3, prompt_ids=prompt, stop_token_ids=(99_999,)),
    ]
    first, short = engine.generate(requests)
    again, _ = engine.generate(requests)
    assert first.token_ids == again.token_ids and len(first.token_ids) == 8
    assert short.token_ids == first.token_ids[:3]  # a cut reply is a prefix of the sample
    assert (first.finish_reason, short.finish_reason) == ("length", "length")
    assert np.all(np.isfinite(first.logprobs))
    missing = engine.generate([GenerationRequest(max_new_tokens=4)])[0]
    assert missing.finish_reason == "error" and "prompt_ids" in missing.error
    # 600 prompt tokens pad to 1024, the cluster's whole KV cache: no room for new tokens
    with pytest.raises(ValueError, match="kv_cache_size=1024"):
        engine.generate([GenerationRequest(max_new_tokens=4, prompt_ids=[5] * 600)])


# --------------------------------------------------------------------- batches
def _record(prompt, turns, env, logprobs=None, error=None) -> Trajectory:
    return Trajectory(
        env_id=ENV_ID,
        seed=0,
        group_id=0,
        prompt_ids=prompt,
        turn_completion_ids=turns,
        turn_env_ids=env,
        turn_logprobs=logprobs,
        error=error,
    )


def test_build_train_example__pads_prompts_left_and_completions_right():
    records = [
        _record([1, 2, 3], [[10, 11], [12]], [[50, 51, 52], []], [[-0.5, -0.25], [-1.0]]),
        _record([4], [[13, 14, 15]], [[]], [[-0.1, -0.2, -0.3]]),
    ]
    example = tunix_glue.build_train_example(records, [1.5, -1.5], pad_id=0, pad_multiple=4)
    np.testing.assert_array_equal(example.prompt_ids, [[0, 1, 2, 3], [0, 0, 0, 4]])
    np.testing.assert_array_equal(example.prompt_mask, [[0, 1, 1, 1], [0, 0, 0, 1]])
    np.testing.assert_array_equal(
        example.completion_ids, [[10, 11, 50, 51, 52, 12, 0, 0], [13, 14, 15, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        example.completion_mask, [[1, 1, 0, 0, 0, 1, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_allclose(
        example.old_per_token_logps,
        [[-0.5, -0.25, 0, 0, 0, -1.0, 0, 0], [-0.1, -0.2, -0.3, 0, 0, 0, 0, 0]],
    )
    np.testing.assert_allclose(example.advantages, [1.5, -1.5])
    assert example.ref_per_token_logps is None


def test_build_train_example__per_token_advantages_error_rows_and_missing_logprobs():
    records = [
        _record([1], [[10, 11], [12]], [[50], []]),
        _record([2], [[13]], [[]], error="engine down"),
    ]
    turn_values = [token_advantages(records[0], [2.0, -1.0]), token_advantages(records[1], 0.5)]
    example = tunix_glue.build_train_example(records, turn_values, pad_id=0)
    np.testing.assert_allclose(example.advantages, [[2.0, 2.0, 0.0, -1.0], [0.5, 0, 0, 0]])
    np.testing.assert_array_equal(example.completion_mask, [[1, 1, 0, 1], [0, 0, 0, 0]])
    assert example.old_per_token_logps is None  # no record has sampling logprobs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt_length": 2}, "prompt_length=2"),
        ({"completion_length": 3}, "completion_length=3"),
        ({"pad_multiple": 0}, "pad_multiple"),
        ({"advantages": [1.0]}, "one entry per trajectory"),
        ({"advantages": [np.zeros(2), np.zeros(1)]}, r"advantages\[0\]"),
    ],
)
def test_build_train_example__refuses_bad_arguments(kwargs, message):
    records = [_record([1, 2, 3], [[10, 11], [12]], [[50], []]), _record([4], [[13]], [[]])]
    arguments = {"advantages": [1.0, -1.0], "pad_id": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        tunix_glue.build_train_example(records, **arguments)
    with pytest.raises(ValueError, match="no token fields"):
        tunix_glue.build_train_example([Trajectory(env_id=ENV_ID, seed=0)], [0.0], pad_id=0)


@pytest.mark.slow
def test_build_train_example__masks_equal_the_records_env_mask(cluster, rollouts):
    pad = tokenizer_pad(cluster)
    example = tunix_glue.build_train_example(
        rollouts, episode_advantages(rollouts), pad_id=pad, pad_multiple=64
    )
    width = example.completion_ids.shape[1]
    assert width % 64 == 0
    for row, trajectory in enumerate(rollouts):
        size = len(trajectory.completion_ids)
        padding = width - size
        np.testing.assert_array_equal(
            example.completion_mask[row], trajectory.env_mask + [0] * padding
        )
        np.testing.assert_array_equal(
            example.completion_ids[row], trajectory.completion_ids + [pad] * padding
        )
        np.testing.assert_allclose(
            example.old_per_token_logps[row],
            trajectory.completion_logprobs + [0.0] * padding,
            rtol=0,
            atol=0,
        )
        prompt = trajectory.prompt_ids
        np.testing.assert_array_equal(example.prompt_ids[row, -len(prompt) :], prompt)
        assert int(example.prompt_mask[row].sum()) == len(prompt)
    assert 0 in np.asarray(example.completion_mask)[:, :-1]  # env tokens inside the episodes


# --------------------------------------------------------------------- the loss and the update
def _loss_grads(cluster, example) -> list[np.ndarray]:
    from tunix.rl import function_registry
    from tunix.rl.grpo import grpo_learner

    config = grpo_learner.GRPOConfig(num_generations=GROUP, beta=0.0)
    config.temperature = 1.0
    loss_fn = function_registry.get_policy_loss_fn("grpo")
    pad, eos = cluster.rollout.pad_id(), cluster.rollout.eos_id()

    def loss(model):
        return loss_fn(model, example, algo_config=config, pad_id=pad, eos_id=eos)[0]

    grads = nnx.grad(loss)(cluster.actor_trainer.model)
    return [np.array(leaf) for leaf in jax.tree.leaves(grads)]


@pytest.mark.slow
def test_loss__environment_tokens_carry_zero_loss_weight(cluster, rollouts):
    """Tunix's GRPO loss with per-token advantages: changing the advantages and old log-probs
    on env/template tokens changes no gradient; changing them on one model token does."""
    returns = episode_advantages(rollouts)
    rng = np.random.default_rng(0)
    values = [
        token_advantages(t, rng.normal(size=t.num_turns) + a)
        for t, a in zip(rollouts, returns, strict=True)
    ]
    example = tunix_glue.build_train_example(
        rollouts, values, pad_id=tokenizer_pad(cluster), pad_multiple=64
    )
    # env/template tokens and padding, from the records (not from the batch under test)
    env = np.ones(example.completion_ids.shape, dtype=bool)
    for row, trajectory in enumerate(rollouts):
        env[row, : len(trajectory.env_mask)] = np.array(trajectory.env_mask) == 0
    assert env[:, : min(len(t.env_mask) for t in rollouts)].any()
    base = _loss_grads(cluster, example)

    def perturbed(where, advantage: float, logp: float) -> object:
        return example.replace(
            advantages=jnp.where(where, example.advantages + advantage, example.advantages),
            old_per_token_logps=jnp.where(
                where, example.old_per_token_logps + logp, example.old_per_token_logps
            ),
        )

    # inside the clip range (a weighted token would move the gradient) and far outside it
    for advantage, logp in ((7.0, -0.05), (-7.0, 3.0)):
        after = _loss_grads(cluster, perturbed(env, advantage, logp))
        for before_leaf, after_leaf in zip(base, after, strict=True):
            np.testing.assert_array_equal(before_leaf, after_leaf)
    # control: the same kind of change on one model token (inside the clip range) does move it
    model_token = np.zeros_like(env)
    model_token[0, 0] = True
    assert not env[0, 0]
    changed = _loss_grads(cluster, perturbed(model_token, 7.0, -0.05))
    assert any(not np.array_equal(a, b) for a, b in zip(base, changed, strict=True))


@pytest.mark.slow
def test_update__one_real_update_from_multi_turn_rollouts_changes_the_weights(
    cluster, tokenizer, rollouts
):
    pad = tokenizer_pad(cluster)
    # the sampled groups have one return each (every reply is invalid): zero advantage, and
    # Tunix's step leaves the weights exactly as they were
    flat = episode_advantages(rollouts)
    assert np.all(flat == 0.0)
    before = _params(cluster.actor_trainer.model)
    tunix_glue.update(
        cluster, tunix_glue.build_train_example(rollouts, flat, pad_id=pad, pad_multiple=64)
    )
    for old, new in zip(before, _params(cluster.actor_trainer.model), strict=True):
        np.testing.assert_array_equal(old, new)

    # the oracle's episode of each seed joins its group: returns differ, the update moves
    oracle = collect_episodes(ENV_ID, oracle_engine(tokenizer=tokenizer), SEEDS, max_turns=TURNS)
    mixed = mix_off_policy(rollouts, oracle)
    advantages = episode_advantages(mixed)
    assert np.any(advantages != 0.0)
    example = tunix_glue.build_train_example(mixed, advantages, pad_id=pad, pad_multiple=64)
    steps = cluster.global_steps
    tunix_glue.update(cluster, example)
    after = _params(cluster.actor_trainer.model)
    assert (
        sum(not np.array_equal(a, b) for a, b in zip(before, after, strict=True)) > len(after) // 2
    )
    assert cluster.global_steps == steps + 1
    # the rollout samples with the trained weights
    for trained, sampled in zip(after, _params(cluster.rollout.model()), strict=True):
        np.testing.assert_array_equal(trained, sampled)


# --------------------------------------------------------------------- agentic env
@pytest.mark.slow
def test_task_env__passes_a_full_episode_through_tunix_collect_engine():
    from tunix.rl.agentic.agents import agent_types, model_agent
    from tunix.rl.agentic.trajectory import trajectory_collect_engine
    from tunix.rl.rollout import base_rollout

    seed = 3
    task_env = tunix_glue.TunixTaskEnv(
        {"seed": np.array([seed])}, env_id=ENV_ID, group_id=0, pair_index=1
    )
    assert task_env.extra_kwargs == {"group_id": 0, "pair_index": 1}
    oracle = OraclePolicy()
    replies: list[str] = []

    def model_call(messages, env, max_generation_steps=None):
        reply = oracle(env.env.unwrapped, messages[-1]["content"])
        replies.append(reply)
        return base_rollout.RolloutOutput(
            text=[reply],
            logits=None,
            tokens=[np.zeros(1, np.int32)],
            left_padded_prompt_tokens=None,
            logprobs=None,
        )

    instructions = gymnasium.make(ENV_ID).unwrapped.instructions
    agent = model_agent.ModelAgent(system_prompt=instructions)
    engine = trajectory_collect_engine.TrajectoryCollectEngine(
        agent, task_env, model_call=model_call, timeout=120.0
    )
    episode = asyncio.run(engine.collect(mode="Trajectory"))

    reference = gymnasium.make(ENV_ID)
    observation, _ = reference.reset(seed=seed)
    assert agent.chat_completions[:2] == [
        {"role": "system", "content": instructions},
        {"role": "user", "content": observation},
    ]
    rewards = []
    for reply in replies:
        observation, reward, terminated, _truncated, info = reference.step(reply)
        rewards.append(reward)
    assert terminated and info["success"]
    assert episode.status == agent_types.TrajectoryStatus.SUCCEEDED
    assert [step.reward for step in episode.steps] == rewards
    assert episode.reward == pytest.approx(sum(rewards))
    assert episode.steps[-1].done and episode.steps[-1].info["success"]
    assert episode.steps[-1].observation == observation


@pytest.mark.slow
def test_task_env__model_output_never_raises_and_config_is_checked():
    task_env = tunix_glue.TunixTaskEnv({"seed": 0}, env_id=ENV_ID, max_steps=2)
    first, _ = task_env.reset()
    assert set(first) == {"prompts", "instructions", "seed"}
    _observation, reward, done, info = task_env.step("\x00\xff not an answer" * 1000)
    assert reward == pytest.approx(-0.1) and not done and info["format_ok"] is False
    _, _, done, _ = task_env.step(None)
    assert done  # the learner's max_steps cap
    with pytest.raises(ValueError, match="seed"):
        tunix_glue.TunixTaskEnv({}, env_id=ENV_ID)
    with pytest.raises(ValueError, match="max_steps"):
        tunix_glue.TunixTaskEnv({"seed": 0}, env_id=ENV_ID, max_steps=0)


@pytest.mark.slow
def test_task_env__tunix_agentic_grpo_learner_trains_a_step_on_it(tokenizer):
    """Tunix's own agentic GRPO learner, unchanged, runs a training step on Sokoban through
    the wrapper (the multi-turn learner wants max_tokens_to_generate == max_response_length
    and return_logprobs=True)."""
    import optax
    from tunix.rl import rl_cluster as rlc
    from tunix.rl.agentic import agentic_grpo_learner
    from tunix.rl.agentic.parser.chat_template_parser import parser
    from tunix.rl.rollout import base_rollout

    steps: list[tuple[int, float]] = []

    class CountingEnv(tunix_glue.TunixTaskEnv):
        def _step_impl(self, action):
            result = super()._step_impl(action)
            steps.append((self.extra_kwargs["pair_index"], result.reward))
            return result

    # Tunix's multi-turn learner gives the first reply the whole episode budget and counts
    # env tokens against it too: a random tiny model, which never samples its stop token,
    # would spend it all on one reply and never reach the env. With every token a stop token
    # its replies are empty (Tunix drops the stop token), and episodes get to the env.
    budget = 256
    stops = list(range(len(tokenizer)))
    mesh = tunix_glue.single_device_mesh()
    cluster = rlc.RLCluster(
        actor=tunix_glue.tiny_qwen2(len(tokenizer), seed=1),
        tokenizer=tunix_glue.TunixTokenizer(tokenizer),
        cluster_config=rlc.ClusterConfig(
            role_to_mesh={role: mesh for role in rlc.Role},
            rollout_engine="vanilla",
            training_config=rlc.RLTrainingConfig(
                actor_optimizer=optax.adamw(1e-2),
                eval_every_n_steps=1_000,
                max_steps=1,
                mini_batch_size=1,
                train_micro_batch_size=1,
            ),
            rollout_config=base_rollout.RolloutConfig(
                max_tokens_to_generate=budget,
                temperature=1.0,
                max_prompt_length=512,
                kv_cache_size=1024,
                return_logprobs=True,
                eos_tokens=stops,
            ),
        ),
    )
    learner = agentic_grpo_learner.GRPOLearner(
        cluster,
        agentic_grpo_learner.GRPOConfig(
            num_generations=GROUP,
            beta=0.0,
            max_response_length=budget,
            max_concurrency=GROUP,
            system_prompt=gymnasium.make(ENV_ID).unwrapped.instructions,
        ),
        chat_parser=parser.QwenChatTemplateParser(cluster.tokenizer),
        env_class=CountingEnv,
        env_kwargs={"env_id": ENV_ID, "max_steps": 3},
    )
    learner.train([{"seed": [5]}])
    assert cluster.actor_trainer.train_steps == 1
    # both episodes of the group took turns in the env (Tunix logs and drops env errors);
    # the tiny model's replies are unparsable: the format penalty
    assert {pair for pair, _ in steps} == set(range(GROUP)) and len(steps) > GROUP
    assert all(reward == pytest.approx(-0.1) for _, reward in steps)
