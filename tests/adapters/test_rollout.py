"""The rollout collector: batching, groups, token-in token-out ids, limits, errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from agent_envs.adapters.engines.scripted import PolicyEngine, oracle_engine, random_engine
from agent_envs.adapters.engines.transformers import TransformersEngine
from agent_envs.adapters.loop import ChatDelta, RolloutCollector, collect_episodes
from agent_envs.adapters.loop.engine import Generation

import agent_envs  # noqa: F401
from agent_envs.core.policies import OraclePolicy


class CountingEngine:
    """Wraps an engine and records how many requests each turn's call carried."""

    def __init__(self, engine):
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.needs_env = getattr(engine, "needs_env", False)
        self.name = engine.name
        self.batches = []

    def generate(self, requests):
        self.batches.append(len(requests))
        return self.engine.generate(requests)


def _full_render_ids(tokenizer, trajectory):
    """The ids of re-rendering the whole final conversation (up to the last reply)."""
    delta = ChatDelta(tokenizer)  # vision ids' messages hold pictures: a text template reads
    messages = [{**m, "content": delta._content(m["content"])} for m in trajectory.messages]
    text = tokenizer.apply_chat_template(messages[:-1], tokenize=False)
    closing = delta.closing_text(trajectory.turn_completion_ids[-1])
    return tokenizer.encode(text[: len(text) - len(closing)], add_special_tokens=False)


def test_rollout__incremental_ids_equal_a_full_rerender_for_chatml(tokenizer):
    trajectories = collect_episodes(
        "grl/Sokoban-8x8-v0", oracle_engine(tokenizer=tokenizer), [1, 2, 3, 4]
    )
    assert max(trajectory.num_turns for trajectory in trajectories) >= 3
    for trajectory in trajectories:
        assert trajectory.success
        full = _full_render_ids(tokenizer, trajectory)
        assert trajectory.prompt_ids + trajectory.completion_ids == full


def test_rollout__think_stripping_template_cannot_match_a_rerender(think_tokenizer):
    oracle = OraclePolicy()
    engine = PolicyEngine(
        lambda env, observation: "<think>plan the pushes</think>" + oracle(env, observation),
        tokenizer=think_tokenizer,
        name="thinking-oracle",
    )
    (trajectory,) = collect_episodes("grl/Sokoban-v0", engine, [1])
    assert trajectory.num_turns == 2
    ids = trajectory.prompt_ids + trajectory.completion_ids
    # the collector keeps the first turn's thinking, as the model saw it while acting ...
    assert think_tokenizer.decode(ids).count("<think>") == 2
    # ... which a re-render of the history drops (Qwen3-style templates): documented mismatch
    full = _full_render_ids(think_tokenizer, trajectory)
    assert think_tokenizer.decode(full).count("<think>") == 1
    assert ids != full


def test_rollout__env_mask_marks_model_tokens(tokenizer):
    (trajectory,) = collect_episodes("grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1])
    ids, mask = trajectory.completion_ids, trajectory.env_mask
    model_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    env_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    assert model_text == "".join(step.reply + "<|im_end|>" for step in trajectory.steps)
    assert env_text == "\n<|im_start|>user\n" + trajectory.steps[1].observation + (
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    assert trajectory.turn_env_ids[-1] == []


def test_rollout__groups_start_identically_and_finished_episodes_are_not_sent(tokenizer):
    engine = CountingEngine(oracle_engine(tokenizer=tokenizer))
    trajectories = collect_episodes("grl/Sokoban-v0", engine, [1, 2], group_size=2)
    assert [trajectory.group_id for trajectory in trajectories] == [0, 0, 1, 1]
    assert [trajectory.seed for trajectory in trajectories] == [1, 1, 2, 2]
    first, second = trajectories[0], trajectories[1]
    assert first.prompt_ids == second.prompt_ids
    assert first.steps[0].observation == second.steps[0].observation
    assert [trajectory.num_turns for trajectory in trajectories] == [2, 2, 1, 1]
    assert engine.batches == [4, 2]  # seed 2 is solved in one turn: not sent again


def test_rollout__max_total_tokens_truncates_with_context_reason(tokenizer):
    (full,) = collect_episodes("grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1])
    budget = len(full.prompt_ids) + len(full.turn_completion_ids[0]) + 5
    (trajectory,) = collect_episodes(
        "grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1], max_total_tokens=budget
    )
    assert trajectory.truncated and trajectory.truncation_reason == "context"
    assert trajectory.num_turns == 1 and trajectory.turn_env_ids == [[]]
    assert len(trajectory.prompt_ids) + len(trajectory.completion_ids) <= budget


def test_rollout__turn_budget_is_the_room_left(tokenizer, tiny_model):
    engine = TransformersEngine(tiny_model, tokenizer)
    (full,) = collect_episodes("grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1])
    budget = len(full.prompt_ids) + 10
    (trajectory,) = collect_episodes(
        "grl/Sokoban-v0", engine, [1], max_new_tokens=64, max_total_tokens=budget
    )
    assert len(trajectory.prompt_ids) + len(trajectory.completion_ids) <= budget
    assert trajectory.truncation_reason == "context"


def test_rollout__collector_max_turns():
    trajectories = collect_episodes("grl/Sokoban-v0", random_engine(0), [1, 2], max_turns=2)
    for trajectory in trajectories:
        assert trajectory.num_turns <= 2
        if trajectory.num_turns == 2 and not trajectory.terminated:
            assert trajectory.truncation_reason in ("max_turns", "action_budget")


def test_rollout__an_engine_error_ends_only_that_episode():
    class FlakyEngine:
        name, tokenizer, needs_env = "flaky", None, True

        def __init__(self):
            self.oracle = oracle_engine()

        def generate(self, requests):
            generations = self.oracle.generate(requests)
            generations[0] = Generation("", finish_reason="error", error="HTTP 503")
            return generations

    trajectories = collect_episodes("grl/Sokoban-v0", FlakyEngine(), [1, 2])
    assert trajectories[0].truncation_reason == "error" and trajectories[0].error == "HTTP 503"
    assert trajectories[0].num_turns == 0
    assert trajectories[1].success


def test_rollout__text_engine_records_no_tokens():
    (trajectory,) = collect_episodes("grl/Sokoban-v0", oracle_engine(), [1])
    assert not trajectory.has_tokens and trajectory.success
    assert trajectory.messages[-2]["role"] == "assistant"


def test_rollout__configuration_errors():
    vec = gymnasium.make_vec("grl/Sokoban-v0", num_envs=2)
    with pytest.raises(ValueError, match="autoreset_mode"):
        RolloutCollector(vec, oracle_engine())
    vec = gymnasium.make_vec("grl/Sokoban-v0", num_envs=2, autoreset_mode="disabled")
    with pytest.raises(ValueError, match="max_new_tokens"):
        RolloutCollector(vec, oracle_engine(), max_new_tokens=0)
    collector = RolloutCollector(vec, oracle_engine(), env_id="grl/Sokoban-v0")
    with pytest.raises(ValueError, match="seeds"):
        collector.collect([1, 2, 3])
    assert len(collector.collect([4, 5])) == 2
    assert len(collector.collect(np.array([6, 7]))) == 2


def test_rollout__hf_engine_episodes_carry_logprobs(tokenizer, tiny_model):
    engine = TransformersEngine(tiny_model, tokenizer)
    trajectories = collect_episodes(
        "grl/Sokoban-v0", engine, [1], group_size=2, max_new_tokens=8, max_turns=2
    )
    for trajectory in trajectories:
        assert trajectory.num_turns == 2
        for ids, logprobs in zip(
            trajectory.turn_completion_ids, trajectory.turn_logprobs, strict=True
        ):
            assert 1 <= len(ids) == len(logprobs) <= 8
            assert all(np.isfinite(logprobs)) and max(logprobs) <= 0


@pytest.mark.parametrize(
    "env_id", sorted(env_id for env_id in gymnasium.registry if env_id.startswith("grl/"))
)
def test_rollout__oracle_episodes_of_every_registered_id(env_id, tokenizer, tmp_path):
    from agent_envs.core.records import read_jsonl, write_jsonl

    trajectories = collect_episodes(env_id, oracle_engine(tokenizer=tokenizer), [0, 1])
    assert all(trajectory.success for trajectory in trajectories)
    for trajectory in trajectories:
        assert trajectory.prompt_ids + trajectory.completion_ids == _full_render_ids(
            tokenizer, trajectory
        )
    write_jsonl(trajectories, tmp_path / "episodes.jsonl")
    back = list(read_jsonl(tmp_path / "episodes.jsonl"))
    assert [t.completion_ids for t in back] == [t.completion_ids for t in trajectories]
    assert [t.episode_return for t in back] == [t.episode_return for t in trajectories]


def test_rollout__template_that_rerenders_history_is_refused(tokenizer):
    import copy

    moving = copy.deepcopy(tokenizer)
    # the system prompt travels with the latest user message (as in some Mistral templates)
    moving.chat_template = (
        "{% set system = messages[0]['content'] %}"
        "{% for message in messages[1:] %}"
        "{% if message['role'] == 'user' %}[INST] "
        "{% if loop.last %}{{ system }} {% endif %}{{ message['content'] }}[/INST]"
        "{% else %}{{ message['content'] }}<|im_end|>{% endif %}"
        "{% endfor %}"
    )
    with pytest.raises(ValueError, match="re-renders earlier messages"):
        ChatDelta(moving)


def test_rollout__on_episode_end_sees_each_record_once_as_it_ends():
    ended: list[tuple[int, int, int]] = []  # (seed, turns, generate calls so far)
    live_per_call: list[int] = []

    class CountingEngine:
        """The oracle, except seed 2's episode fails its first turn with an engine error."""

        name, tokenizer, needs_env = "counting", None, True

        def __init__(self):
            self.oracle = oracle_engine()

        def generate(self, requests):
            live_per_call.append(len(requests))
            generations = self.oracle.generate(requests)
            if len(live_per_call) == 1:  # the first call: requests in seed order
                generations[1] = Generation("", finish_reason="error", error="boom")
            return generations

    vec = gymnasium.make_vec("grl/Sokoban-v0", num_envs=3, autoreset_mode="disabled")
    collector = RolloutCollector(
        vec,
        CountingEngine(),
        max_turns=2,
        on_episode_end=lambda t: ended.append((t.seed, t.num_turns, len(live_per_call))),
    )
    trajectories = collector.collect([1, 2, 3])
    assert sorted(seed for seed, *_ in ended) == [1, 2, 3]  # each once
    by_seed = {seed: (turns, calls) for seed, turns, calls in ended}
    assert by_seed[2] == (0, 1)  # the error ends it during the first call, not at the end
    for trajectory in trajectories:  # the hook saw the finished record itself
        assert by_seed[trajectory.seed][0] == trajectory.num_turns
    with pytest.raises(ValueError, match="on_episode_end"):
        RolloutCollector(vec, oracle_engine(), on_episode_end="print")
