"""The vLLM code paths without vLLM: `VLLMEngine` over a stand-in ``vllm`` module that
records what the engine asks for, and the rollout_func's use of TRL's vLLM generation.
(Real vLLM needs a CUDA machine; these tests check the calls the thin layer makes.)"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from adapters.engines.base import GenerationRequest, SamplingConfig


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
    from adapters.engines.vllm import VLLMEngine

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


def test_vllm__missing_vllm_raises_dependency_error(monkeypatch):
    from gymnasium.error import DependencyNotInstalled

    from adapters.engines.vllm import VLLMEngine

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(DependencyNotInstalled, match="vllm"):
        VLLMEngine("some-model")


def test_vllm__rollout_func_uses_trl_vllm_generation_in_server_mode(tokenizer):
    from adapters.trl import episode_key, make_rollout_func

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
