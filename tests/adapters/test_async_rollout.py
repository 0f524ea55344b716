"""The asynchronous collector: the lockstep collector's records on deterministic engines,
per-episode errors, the concurrency bound, groups streamed as they finish, policy versions;
the HTTP engine's async path against a scripted loopback server; the vLLM ``AsyncLLM``
engine's calls over a stand-in ``vllm`` module."""

from __future__ import annotations

import asyncio
import sys
import types
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from agent_envs.adapters.engines.scripted import PolicyEngine, oracle_engine
from agent_envs.adapters.engines.transformers import TransformersEngine
from agent_envs.adapters.loop.async_collector import (
    AsyncRolloutCollector,
    BatchingEngine,
    acollect_episodes,
    staleness,
)
from agent_envs.adapters.loop.collector import collect_episodes
from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig

import agent_envs  # noqa: F401
from agent_envs.core.policies import format_answer


def _run(coroutine):
    return asyncio.run(coroutine)


def _episode_random_policy(env, observation):
    """A random policy whose draws depend on its own episode only (the board and the turn),
    never on the order episodes are served in: deterministic for both collectors. (The
    shared-generator `random_engine` is not: its k-th draw goes to whichever episode asks
    k-th.)"""
    rng = np.random.default_rng(zlib.crc32(f"{observation}|{env.turn}".encode()))
    return format_answer(env.random_actions(rng), env.answer_format)


@pytest.mark.parametrize(
    "env_id", ["grl/Sokoban-v0", "grl/Sokoban-8x8-v0", "grl/Blocksworld-v0", "grl/GSM8K-v0"]
)
def test_async__oracle_records_equal_the_lockstep_collectors(env_id, tokenizer):
    lockstep = collect_episodes(env_id, oracle_engine(tokenizer=tokenizer), [1, 2, 3], group_size=2)
    concurrent = _run(
        acollect_episodes(
            env_id, oracle_engine(tokenizer=tokenizer), [1, 2, 3], group_size=2, max_concurrency=3
        )
    )
    assert concurrent == lockstep
    assert [t.group_id for t in concurrent] == [0, 0, 1, 1, 2, 2]
    assert all(t.success and t.has_tokens for t in concurrent)


def test_async__episode_random_records_equal_the_lockstep_collectors(tokenizer):
    engine = PolicyEngine(_episode_random_policy, tokenizer=tokenizer, name="random")
    seeds = [4, 5, 6, 7]
    lockstep = collect_episodes("grl/Sokoban-v0", engine, seeds, group_size=2, max_turns=4)
    concurrent = _run(acollect_episodes("grl/Sokoban-v0", engine, seeds, group_size=2, max_turns=4))
    assert concurrent == lockstep
    turns = sorted({t.num_turns for t in concurrent})
    assert len(turns) > 1  # episodes of different lengths: some ended before others
    assert {t.truncation_reason for t in concurrent} >= {"max_turns"}


def test_async__greedy_transformers_records_equal_the_lockstep_collectors(tokenizer, tiny_model):
    def run(collect):
        engine = TransformersEngine(tiny_model, tokenizer, sampling=SamplingConfig(temperature=0))
        return collect(engine)

    options = dict(group_size=2, max_new_tokens=6, max_turns=3)
    lockstep = run(lambda engine: collect_episodes("grl/Sokoban-v0", engine, [1, 2], **options))
    concurrent = run(
        lambda engine: _run(
            acollect_episodes("grl/Sokoban-v0", engine, [1, 2], max_concurrency=3, **options)
        )
    )
    for ours, theirs in zip(concurrent, lockstep, strict=True):
        assert ours.num_turns == theirs.num_turns == 3
        assert ours.prompt_ids == theirs.prompt_ids
        assert ours.turn_completion_ids == theirs.turn_completion_ids
        assert ours.turn_env_ids == theirs.turn_env_ids
        assert ours.messages == theirs.messages and ours.steps == theirs.steps
        for a, b in zip(ours.turn_logprobs, theirs.turn_logprobs, strict=True):
            assert a == pytest.approx(b, abs=1e-4)


def test_async__context_budget_ends_episodes_as_lockstep_does(tokenizer):
    (full,) = collect_episodes("grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1])
    budget = len(full.prompt_ids) + len(full.turn_completion_ids[0]) + 5
    options = dict(max_total_tokens=budget)
    lockstep = collect_episodes(
        "grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1, 2], **options
    )
    concurrent = _run(
        acollect_episodes("grl/Sokoban-v0", oracle_engine(tokenizer=tokenizer), [1, 2], **options)
    )
    assert concurrent == lockstep
    assert concurrent[0].truncation_reason == "context"


class SleepyEngine:
    """An async oracle whose replies take ``delay(request)`` seconds; counts requests in
    flight. ``fail(request)`` may return an error text or raise."""

    needs_env = True

    def __init__(self, delay=lambda request: 0.0, fail=lambda request: None, tokenizer=None):
        self.oracle = oracle_engine(tokenizer=tokenizer)
        self.name, self.tokenizer = "sleepy-oracle", tokenizer
        self.delay, self.fail = delay, fail
        self.in_flight = self.max_in_flight = self.calls = 0

    async def agenerate(self, request):
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay(request))
            error = self.fail(request)
            if error is not None:
                return Generation("", finish_reason="error", error=error)
            (generation,) = self.oracle.generate([request])
            return generation
        finally:
            self.in_flight -= 1


def _first_board(request):
    return request.messages[1]["content"]


def test_async__an_engine_error_ends_only_that_episode():
    boards = {}

    def fail(request):
        board = _first_board(request)
        boards.setdefault(board, len(boards))
        if boards[board] == 0 and len(request.messages) == 2:
            return "HTTP 503"
        if boards[board] == 1:
            raise ConnectionError("server gone")
        return None

    engine = SleepyEngine(fail=fail)
    trajectories = _run(acollect_episodes("grl/Sokoban-v0", engine, [1, 2, 3], max_concurrency=1))
    first, second, third = trajectories
    assert first.truncation_reason == "error" and first.error == "HTTP 503"
    assert first.num_turns == 0
    assert second.truncation_reason == "error" and "server gone" in second.error
    assert third.success and third.error is None


@pytest.mark.parametrize("bound", [1, 3])
def test_async__concurrency_bound_is_respected_and_reached(bound):
    engine = SleepyEngine(delay=lambda request: 0.01)
    collector = AsyncRolloutCollector(
        lambda: __import__("gymnasium").make("grl/Sokoban-v0").unwrapped,
        engine,
        max_concurrency=bound,
    )
    trajectories = _run(collector.collect(list(range(8)), group_size=1))
    assert len(trajectories) == 8 and all(t.success for t in trajectories)
    assert engine.max_in_flight == bound
    assert collector.envs_made == bound  # envs are handed on, never more than the bound


def test_async__groups_are_streamed_as_they_finish_not_in_seed_order():
    # seed 1 needs 2 turns of 0.2 s each; seed 2 is solved in one turn at once
    make = lambda: __import__("gymnasium").make("grl/Sokoban-v0").unwrapped  # noqa: E731
    slow_board = make().reset(seed=1)[0]

    def delay(request):
        return 0.2 if _first_board(request) == slow_board else 0.0

    engine = SleepyEngine(delay=delay)
    collector = AsyncRolloutCollector(make, engine, max_concurrency=4)

    async def order():
        return [[t.seed for t in group] async for group in collector.stream([1, 2], group_size=2)]

    assert _run(order()) == [[2, 2], [1, 1]]
    # collect() returns the same episodes in seed order
    assert [t.seed for t in _run(collector.collect([1, 2], group_size=2))] == [1, 1, 2, 2]


def test_async__policy_versions_are_recorded_per_turn():
    version = {"now": 3}

    def delay(request):
        version["now"] += 1  # the trainer syncs weights while episodes run
        return 0.0

    engine = SleepyEngine(delay=delay)
    (trajectory,) = _run(
        acollect_episodes(
            "grl/Sokoban-v0", engine, [1], max_concurrency=1, policy_version=lambda: version["now"]
        )
    )
    assert trajectory.num_turns == 2
    assert trajectory.metadata["policy_versions"] == [3, 4]
    assert staleness(trajectory, 6) == 3
    (plain,) = _run(acollect_episodes("grl/Sokoban-v0", oracle_engine(), [1]))
    assert "policy_versions" not in plain.metadata and staleness(plain, 6) == 0


def test_async__batching_engine_batches_the_waiting_requests(tokenizer):
    engine = BatchingEngine(oracle_engine(tokenizer=tokenizer))
    trajectories = _run(
        acollect_episodes("grl/Sokoban-v0", engine, [1, 2, 3], group_size=2, max_concurrency=6)
    )
    assert all(t.success for t in trajectories)
    assert engine.batch_sizes[0] == 6  # every episode's first turn in one call
    assert sum(engine.batch_sizes) == sum(t.num_turns for t in trajectories)


def test_async__a_batch_engine_that_raises_ends_its_batch_only():
    class Broken:
        name, tokenizer, needs_env = "broken", None, True

        def __init__(self):
            self.calls = 0
            self.oracle = oracle_engine()

        def generate(self, requests):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("CUDA error")
            return self.oracle.generate(requests)

    trajectories = _run(acollect_episodes("grl/Sokoban-v0", Broken(), [1, 2], max_concurrency=1))
    assert trajectories[0].truncation_reason == "error" and "CUDA error" in trajectories[0].error
    assert trajectories[1].success


def test_async__configuration_errors():
    import gymnasium
    from agent_envs.adapters.engines.lockstep import LockstepEngine

    make = lambda: gymnasium.make("grl/Sokoban-v0").unwrapped  # noqa: E731
    with pytest.raises(ValueError, match="max_concurrency"):
        AsyncRolloutCollector(make, oracle_engine(), max_concurrency=0)
    with pytest.raises(ValueError, match="make_env"):
        AsyncRolloutCollector("grl/Sokoban-v0", oracle_engine())
    with pytest.raises(ValueError, match="max_new_tokens"):
        AsyncRolloutCollector(make, oracle_engine(), max_new_tokens=0)
    with pytest.raises(ValueError, match="LockstepEngine"):
        AsyncRolloutCollector(make, LockstepEngine(oracle_engine()))
    with pytest.raises(ValueError, match="max_batch_size"):
        BatchingEngine(oracle_engine(), max_batch_size=0)
    collector = AsyncRolloutCollector(make, oracle_engine())
    with pytest.raises(ValueError, match="group_size"):
        _run(collector.collect([1], group_size=0))
    assert collector.env_id == "grl/Sokoban-v0"


# --------------------------------------------------------------------------- HTTP async path
def _chat(text):
    return GenerationRequest(max_new_tokens=4, messages=[{"role": "user", "content": text}])


def test_http_async__retries_errors_and_token_downgrade(tmp_path):
    pytest.importorskip("httpx")
    from tests.adapters.test_openai_http import ScriptedServer, fail, ok

    def script(key, body):
        if "return_token_ids" in body:
            return [(422, {"detail": "Unexpected fields: {'return_token_ids'}"}, 0, {})]
        if key == "poison":
            return [fail(500)]
        if key == "flaky":
            return [fail(503), ok("recovered")]
        return [ok(f"reply to {key}", delay=0.3)]  # long enough to overlap under load

    from agent_envs.adapters.engines.openai_http import OpenAIEngine

    server = ScriptedServer(script)
    try:
        engine = OpenAIEngine(
            server.url, "tiny", max_concurrency=2, timeout=2.0, max_retries=2,
            sampling=SamplingConfig(seed=10),
        )  # fmt: skip

        async def ask():
            requests = [_chat(key) for key in ("a", "poison", "flaky", "b", "c")]
            return await asyncio.gather(*(engine.agenerate(r) for r in requests))

        generations = _run(ask())
        assert [g.text for g in generations] == ["reply to a", "", "recovered", "reply to b",
                                                 "reply to c"]  # fmt: skip
        assert "HTTP 500" in generations[1].error and "(after 3 attempts)" in generations[1].error
        assert server.attempts["flaky"] == 2 and not engine.ask_token_data
        assert server.max_in_flight == 2  # max_concurrency holds for the async path too
        seeds = {p["messages"][-1]["content"]: p["seed"] for p in server.payloads}
        assert seeds == {"a": 10, "poison": 11, "flaky": 12, "b": 13, "c": 14}  # request order
        # a second event loop gets its own client
        again = _run(engine.agenerate(_chat("d")))
        assert again.text == "reply to d"
        bad = _run(engine.agenerate(GenerationRequest(max_new_tokens=4)))
        assert bad.error == "the chat endpoint needs messages in every request"
        _run(engine.aclose())
    finally:
        server.close()


def test_http_async__collector_episodes_over_the_chat_endpoint():
    pytest.importorskip("httpx")
    from agent_envs.adapters.engines.openai_http import OpenAIEngine

    from tests.adapters.test_openai_http import ScriptedServer, ok

    server = ScriptedServer(lambda key, body: [ok("<answer>Up</answer>", delay=0.02)])
    try:
        engine = OpenAIEngine(server.url, "tiny", max_concurrency=4, timeout=2.0)
        trajectories = _run(
            acollect_episodes("grl/Sokoban-v0", engine, [1, 2], group_size=2, max_turns=2)
        )
        assert [t.num_turns for t in trajectories] == [2, 2, 2, 2]
        assert all(
            t.error is None and t.steps[0].reply == "<answer>Up</answer>" for t in trajectories
        )
        assert server.max_in_flight <= 4
    finally:
        server.close()


# --------------------------------------------------------------------------- vLLM AsyncLLM
@dataclass
class _Logprob:
    logprob: float


class FakeAsyncLLM:
    """Answers ``generate`` as an async generator of one final output; request ids and
    parameters are recorded; a prompt ending in token 99 fails."""

    def __init__(self):
        self.calls = []
        self.resets = 0
        self.tokenizer = object()

    async def generate(self, prompt, params, request_id):
        self.calls.append((prompt, params, request_id))
        await asyncio.sleep(0)
        if prompt["prompt_token_ids"][-1] == 99:
            raise RuntimeError("prompt too long")
        ids = [prompt["prompt_token_ids"][-1] + 1, 2][: params.max_tokens]
        finish = "stop" if ids[-1] in params.stop_token_ids else "length"
        completion = types.SimpleNamespace(
            token_ids=ids,
            text=f"t{ids[0]}",
            finish_reason=finish,
            logprobs=[{token: _Logprob(-0.25)} for token in ids],
        )
        yield types.SimpleNamespace(outputs=[completion], finished=True)

    async def reset_prefix_cache(self):
        self.resets += 1


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.SamplingParams = lambda **kwargs: types.SimpleNamespace(**kwargs)
    module.inputs = types.SimpleNamespace(TokensPrompt=lambda **kwargs: dict(kwargs))
    sampling_params = types.ModuleType("vllm.sampling_params")
    sampling_params.RequestOutputKind = types.SimpleNamespace(FINAL_ONLY="final-only")
    module.sampling_params = sampling_params
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling_params)
    return module


def test_vllm_async__one_request_per_turn_with_its_own_params(fake_vllm, tokenizer):
    from agent_envs.adapters.engines.vllm_async import VLLMAsyncEngine

    llm = FakeAsyncLLM()
    engine = VLLMAsyncEngine(llm, tokenizer=tokenizer, sampling=SamplingConfig(seed=7))
    requests = [
        GenerationRequest(max_new_tokens=1, prompt_ids=[5, 6], stop_token_ids=(2,)),
        GenerationRequest(max_new_tokens=4, prompt_ids=[9], stop_token_ids=(2,)),
        GenerationRequest(max_new_tokens=4, prompt_ids=[98, 99], stop_token_ids=(2,)),
        GenerationRequest(max_new_tokens=4, messages=[{"role": "user", "content": "x"}]),
    ]

    async def ask():
        return await asyncio.gather(*(engine.agenerate(r) for r in requests))

    generations = _run(ask())
    prompts, params, ids = zip(*llm.calls, strict=True)
    assert list(prompts) == [{"prompt_token_ids": [5, 6]}, {"prompt_token_ids": [9]},
                             {"prompt_token_ids": [98, 99]}]  # fmt: skip
    assert len(set(ids)) == 3  # distinct request ids
    assert [p.max_tokens for p in params] == [1, 4, 4]
    assert [p.seed for p in params] == [7, 8, 9]
    assert all(p.output_kind == "final-only" and p.logprobs == 0 for p in params)
    assert all(p.stop_token_ids == [2] and p.top_k == -1 for p in params)
    assert [g.token_ids for g in generations[:2]] == [[7], [10, 2]]
    assert [g.finish_reason for g in generations[:2]] == ["length", "stop"]
    assert generations[1].logprobs == [-0.25, -0.25]
    assert "prompt too long" in generations[2].error  # one failed request, the rest answered
    assert "prompt_ids" in generations[3].error
    _run(engine.weights_updated())
    assert llm.resets == 1


def test_vllm_async__collector_episodes(fake_vllm, tokenizer):
    from agent_envs.adapters.engines.vllm_async import VLLMAsyncEngine

    llm = FakeAsyncLLM()
    engine = VLLMAsyncEngine(llm, tokenizer=tokenizer)
    trajectories = _run(
        acollect_episodes(
            "grl/Sokoban-v0", engine, [1, 2], group_size=2, max_new_tokens=4, max_turns=2
        )
    )
    assert [t.num_turns for t in trajectories] == [2, 2, 2, 2]
    assert all(t.turn_logprobs[0] == [-0.25, -0.25] for t in trajectories)
    assert len(llm.calls) == 8


def test_vllm_async__missing_vllm_raises_dependency_error(monkeypatch):
    from agent_envs.adapters.engines.vllm_async import VLLMAsyncEngine
    from gymnasium.error import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(DependencyNotInstalled, match="vllm"):
        VLLMAsyncEngine("some-model")


def test_async__on_episode_end_fires_as_each_episode_ends():
    make = lambda: __import__("gymnasium").make("grl/Sokoban-v0").unwrapped  # noqa: E731
    slow_board = make().reset(seed=1)[0]
    ended: list[int] = []
    engine = SleepyEngine(delay=lambda request: 0.2 if _first_board(request) == slow_board else 0)
    collector = AsyncRolloutCollector(
        make, engine, max_concurrency=4, on_episode_end=lambda t: ended.append(t.seed)
    )
    trajectories = _run(collector.collect([1, 2]))
    assert ended == [2, 1]  # in the order they ended, not seed order
    assert [t.seed for t in trajectories] == [1, 2]
