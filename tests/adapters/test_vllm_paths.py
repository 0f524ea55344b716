"""The vLLM code paths without vLLM: `VLLMEngine` over a stand-in ``vllm`` module that
records what the engine asks for, and the rollout_func's use of TRL's vLLM generation.
(Real vLLM needs a CUDA machine; these tests check the calls the thin layer makes.)"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agent_envs.adapters.loop.engine import GenerationRequest, SamplingConfig


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _Completion:
    token_ids: list[int]
    text: str
    finish_reason: str
    logprobs: list[dict[int, _Logprob]] | None


@dataclass
class _Output:
    outputs: list[_Completion]


@dataclass
class FakeLLM:
    calls: list = field(default_factory=list)
    resets: int = 0

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))
        outputs = []
        for prompt, param in zip(prompts, params, strict=True):
            ids = [prompt["prompt_token_ids"][-1] + 1, 2][: param.max_tokens]
            finish = "stop" if ids[-1] in param.stop_token_ids else "length"
            logprobs = [{token: _Logprob(-0.5)} for token in ids]
            outputs.append(_Output([_Completion(ids, f"t{ids[0]}", finish, logprobs)]))
        return outputs

    def reset_prefix_cache(self):
        self.resets += 1


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.SamplingParams = lambda **kwargs: types.SimpleNamespace(**kwargs)
    module.inputs = types.SimpleNamespace(TokensPrompt=lambda **kwargs: dict(kwargs))
    module.LLM = None
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_vllm__per_request_sampling_params_and_logprobs(fake_vllm, tokenizer):
    from agent_envs.adapters.engines.vllm import VLLMEngine

    llm = FakeLLM()
    engine = VLLMEngine(llm, tokenizer=tokenizer, sampling=SamplingConfig(temperature=0.5))
    requests = [
        GenerationRequest(max_new_tokens=1, prompt_ids=[5, 6], stop_token_ids=(2,)),
        GenerationRequest(max_new_tokens=4, prompt_ids=[9], stop_token_ids=(2,)),
    ]
    generations = engine.generate(requests)
    ((prompts, params),) = llm.calls  # one batched call for the turn
    assert prompts == [{"prompt_token_ids": [5, 6]}, {"prompt_token_ids": [9]}]
    assert [p.max_tokens for p in params] == [1, 4]
    assert all(p.logprobs == 0 and p.stop_token_ids == [2] for p in params)
    assert params[0].temperature == 0.5 and params[0].top_k == -1
    assert [g.token_ids for g in generations] == [[7], [10, 2]]
    assert [g.finish_reason for g in generations] == ["length", "stop"]
    assert generations[1].logprobs == [-0.5, -0.5]
    engine.weights_updated()
    assert llm.resets == 1


def _seeds_of_two_turns(engine, llm):
    group = [GenerationRequest(max_new_tokens=2, prompt_ids=[5, 6]) for _ in range(3)]
    engine.generate(group)  # turn 1: a group of 3 members with the same prompt
    engine.generate(group[:2])  # turn 2: two members still live
    return [[param.seed for param in params] for _, params in llm.calls]


def test_vllm__each_group_member_gets_its_own_reproducible_seed(fake_vllm, tokenizer):
    """With one seed for every request, the G members of a seeded group sample G identical
    episodes; request k of the engine's life gets seed + k instead."""
    from agent_envs.adapters.engines.vllm import VLLMEngine

    runs = []
    for _ in range(2):  # the same run twice
        llm = FakeLLM()
        engine = VLLMEngine(llm, tokenizer=tokenizer, sampling=SamplingConfig(seed=100))
        runs.append(_seeds_of_two_turns(engine, llm))
    assert runs[0] == [[100, 101, 102], [103, 104]]
    assert runs[1] == runs[0]
    llm = FakeLLM()
    unseeded = VLLMEngine(llm, tokenizer=tokenizer, sampling=SamplingConfig())
    assert _seeds_of_two_turns(unseeded, llm) == [[None] * 3, [None] * 2]


def test_vllm__missing_vllm_raises_dependency_error(monkeypatch):
    from agent_envs.adapters.engines.vllm import VLLMEngine
    from gymnasium.error import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(DependencyNotInstalled, match="vllm"):
        VLLMEngine("some-model")


def test_vllm__rollout_func_uses_trl_vllm_generation_in_server_mode(tokenizer):
    from agent_envs.adapters.trl import episode_key, make_rollout_func

    class Generation:
        mode = "server"

        def __init__(self):
            self.calls = 0

        def generate(self, prompts, images, num_generations):
            self.calls += 1
            answer = tokenizer.encode("<answer>Up</answer>", add_special_tokens=False)
            completions = [[*answer, tokenizer.eos_token_id, 7, 7] for _ in prompts]
            logprobs = [[[-0.1]] * len(ids) for ids in completions]
            return prompts, completions, logprobs, None

    trainer = types.SimpleNamespace(
        use_vllm=True,
        vllm_generation=Generation(),
        processing_class=tokenizer,
        args=types.SimpleNamespace(temperature=1.0, top_p=1.0, top_k=0),
    )
    rollout = make_rollout_func("grl/Sokoban-v0", max_new_tokens=16, max_turns=2)
    output = rollout([episode_key("grl/Sokoban-v0", 1)] * 2, trainer)
    assert trainer.vllm_generation.calls == 2  # one call per turn
    assert output["num_turns"] == [2, 2]
    first_turn = output["completion_ids"][0][: output["env_mask"][0].index(0)]
    assert tokenizer.decode(first_turn) == "<answer>Up</answer><|im_end|>"
    assert output["logprobs"][0][0] == pytest.approx(-0.1)


def _vllm_specifier(requirements):
    from packaging.requirements import Requirement

    found = [Requirement(text) for text in requirements]
    found = [req for req in found if req.name == "vllm"]
    assert len(found) == 1, requirements
    return found[0].specifier


def test_vllm__extra_pins_the_vllm_range_the_pinned_trl_supports():
    """TRL declares the vLLM versions it supports in its own ``[vllm]`` extra (and warns at
    import outside them); ours must be the same range, or pip resolves a vLLM TRL rejects."""
    import importlib.metadata

    pytest.importorskip("trl")
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extra = re.search(r"^vllm = \[(.*)\]", pyproject.read_text(), re.MULTILINE)
    assert extra is not None, "pyproject.toml has no vllm extra"
    ours = _vllm_specifier(re.findall(r'"([^"]+)"', extra.group(1)))
    trl_extra = [
        text.split(";")[0]
        for text in importlib.metadata.requires("trl") or []
        if 'extra == "vllm"' in text
    ]
    assert ours == _vllm_specifier(trl_extra)
    assert {"0.22.0", "0.31.0"} <= set(ours.filter(["0.21.0", "0.22.0", "0.31.0", "0.33.0"]))
    assert not set(ours.filter(["0.21.0", "0.33.0"]))
