"""Engines behind the one interface: transformers, scripted, and vLLM's clean skip."""

from __future__ import annotations

import gymnasium
import pytest
from agent_envs.adapters.engines import Engine, GenerationRequest, SamplingConfig
from agent_envs.adapters.engines.scripted import PolicyEngine, oracle_engine, random_engine
from agent_envs.adapters.engines.transformers import TransformersEngine

import agent_envs  # noqa: F401


def _request(tokenizer, text="<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", **kw):
    ids = tokenizer.encode(text, add_special_tokens=False)
    return GenerationRequest(prompt_ids=ids, stop_token_ids=(tokenizer.eos_token_id,), **kw)


def test_engines__all_satisfy_the_protocol(tokenizer, tiny_model):
    assert isinstance(TransformersEngine(tiny_model, tokenizer), Engine)
    assert isinstance(oracle_engine(), Engine)
    assert isinstance(random_engine(0), Engine)


def test_engines__transformers_greedy_is_deterministic_and_respects_budgets(tokenizer, tiny_model):
    engine = TransformersEngine(tiny_model, tokenizer, sampling=SamplingConfig(temperature=0))
    requests = [
        _request(tokenizer, max_new_tokens=3),
        _request(tokenizer, "<|im_start|>user\nlonger prompt here<|im_end|>\n", max_new_tokens=7),
    ]
    first = engine.generate(requests)
    second = engine.generate(requests)
    assert [g.token_ids for g in first] == [g.token_ids for g in second]
    assert len(first[0].token_ids) <= 3 and len(first[1].token_ids) <= 7
    for generation in first:
        assert len(generation.logprobs) == len(generation.token_ids)
        assert generation.finish_reason in ("stop", "length")
    # a batch of one gives the same greedy tokens as the same request inside a padded batch
    alone = engine.generate(requests[:1])[0]
    assert alone.token_ids == first[0].token_ids


def test_engines__transformers_stops_at_the_stop_token(tokenizer, tiny_model):
    engine = TransformersEngine(tiny_model, tokenizer, sampling=SamplingConfig(temperature=0))
    probe = engine.generate([_request(tokenizer, max_new_tokens=4)])[0]
    stop = probe.token_ids[0]
    request = _request(tokenizer, max_new_tokens=4)
    request.stop_token_ids = (stop,)
    generation = engine.generate([request])[0]
    assert generation.token_ids == [stop]
    assert generation.finish_reason == "stop"
    assert generation.text == ""


def test_engines__transformers_restores_training_mode(tokenizer, tiny_model):
    tiny_model.train()
    TransformersEngine(tiny_model, tokenizer).generate([_request(tokenizer, max_new_tokens=2)])
    assert tiny_model.training
    tiny_model.eval()


def test_engines__sampling_config_validates():
    with pytest.raises(ValueError, match="temperature"):
        SamplingConfig(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        SamplingConfig(top_p=0)
    with pytest.raises(ValueError, match="top_k"):
        SamplingConfig(top_k=-2)


def test_engines__scripted_oracle_and_random_read_the_env(tokenizer):
    env = gymnasium.make("grl/Sokoban-v0")
    env.reset(seed=1)
    request = GenerationRequest(max_new_tokens=8, env=env, stop_token_ids=(tokenizer.eos_token_id,))
    (oracle,) = oracle_engine(tokenizer=tokenizer).generate([request])
    assert oracle.text == "<answer>Left || Down || Down || Left || Down</answer>"
    assert oracle.token_ids[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(oracle.token_ids[:-1]) == oracle.text
    first = random_engine(3).generate([request])[0].text
    assert first == random_engine(3).generate([request])[0].text
    assert first.startswith("<answer>")


def test_engines__scripted_errors_are_per_request():
    def broken(env, observation):
        raise RuntimeError("policy bug")

    env = gymnasium.make("grl/Sokoban-v0")
    env.reset(seed=1)
    generations = PolicyEngine(broken).generate(
        [GenerationRequest(4, env=env), GenerationRequest(4)]
    )
    assert generations[0].error == "RuntimeError('policy bug')"
    assert generations[1].error == "scripted engine needs the env"


def test_engines__vllm_on_gpu(checkpoint_dir, tokenizer):
    """Real vLLM on the tiny checkpoint: only where vLLM and a CUDA device exist."""
    pytest.importorskip("vllm", reason="vLLM needs a CUDA machine")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a CUDA device")
    from agent_envs.adapters.engines.vllm import VLLMEngine

    engine = VLLMEngine(str(checkpoint_dir), tokenizer=tokenizer, gpu_memory_utilization=0.2)
    generations = engine.generate([_request(tokenizer, max_new_tokens=5)] * 2)
    for generation in generations:
        assert 1 <= len(generation.token_ids) == len(generation.logprobs) <= 5
    engine.weights_updated()


def test_engines__transformers_logprobs_are_the_models_at_the_sampling_temperature(
    tokenizer, tiny_model
):
    """Top-p must not renormalise the reported logprobs: they are what a trainer recomputes,
    log_softmax(logits / temperature) of the model on prompt + sampled tokens."""
    import torch

    sampling = SamplingConfig(temperature=0.7, top_p=0.5, seed=3)
    engine = TransformersEngine(tiny_model, tokenizer, sampling=sampling)
    request = _request(tokenizer, max_new_tokens=6)
    generation = engine.generate([request])[0]
    ids = torch.tensor([request.prompt_ids + generation.token_ids])
    with torch.no_grad():
        logits = tiny_model(input_ids=ids).logits[0].float() / sampling.temperature
    start = len(request.prompt_ids)
    expected = torch.log_softmax(logits[start - 1 : -1], dim=-1)
    expected = expected.gather(-1, torch.tensor(generation.token_ids)[:, None])[:, 0]
    assert generation.logprobs == pytest.approx(expected.tolist(), abs=1e-4)


def _fed_tokens(model):
    """A forward pre-hook counting the token positions the model runs on, per forward call."""
    fed: list[int] = []

    def hook(module, args, kwargs):
        ids = kwargs.get("input_ids")
        fed.append(int(ids.numel()) if ids is not None else 0)

    return fed, model.model.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=0), SamplingConfig(seed=5)])
def test_engines__transformers_prefix_reuse_equals_a_full_reprefill(
    tokenizer, tiny_model, sampling
):
    """A multi-turn episode batch through the collector: with the previous turn's KV cache
    reused, replies and logprobs are those of re-prefilling every context whole, and the model
    runs on far fewer positions."""
    from agent_envs.adapters.loop.collector import collect_episodes

    runs, fed = {}, {}
    for reuse in (False, True):
        engine = TransformersEngine(tiny_model, tokenizer, sampling=sampling, prefix_cache=reuse)
        fed[reuse], handle = _fed_tokens(tiny_model)
        try:
            runs[reuse] = collect_episodes(
                "grl/Sokoban-v0", engine, [1, 2, 3], max_turns=4, max_new_tokens=6
            )
        finally:
            handle.remove()
    assert [len(t.steps) for t in runs[True]] == [4, 4, 4]
    for cached, full in zip(runs[True], runs[False], strict=True):
        assert cached.turn_completion_ids == full.turn_completion_ids
        assert cached.prompt_ids == full.prompt_ids
        for cached_turn, full_turn in zip(cached.turn_logprobs, full.turn_logprobs, strict=True):
            assert cached_turn == pytest.approx(full_turn, abs=1e-4)
    # turn 1 prefills the same prompts; turns 2..4 run on the new tokens only
    assert fed[True][0] == fed[False][0]
    assert sum(fed[True]) < 0.5 * sum(fed[False])


def test_engines__transformers_prefix_reuse_with_uneven_rows(tokenizer, tiny_model):
    """Rows with different reply budgets, a row whose continuation is longer than the others'
    and a fresh prompt with nothing to reuse, in one batch: the same as re-prefilling."""
    greedy = SamplingConfig(temperature=0)
    engines = [
        TransformersEngine(tiny_model, tokenizer, sampling=greedy, prefix_cache=reuse)
        for reuse in (True, False)
    ]
    first = [
        _request(tokenizer, max_new_tokens=2),
        _request(tokenizer, "<|im_start|>user\nlonger prompt here<|im_end|>\n", max_new_tokens=7),
    ]
    replies = engines[0].generate(first)
    assert [g.token_ids for g in replies] == [g.token_ids for g in engines[1].generate(first)]
    follows = ["<|im_start|>user\nUp<|im_end|>\n", "<|im_start|>user\n" + "Left " * 20]
    second = [
        GenerationRequest(
            max_new_tokens=5,
            prompt_ids=request.prompt_ids
            + reply.token_ids
            + tokenizer.encode(follow, add_special_tokens=False),
            stop_token_ids=request.stop_token_ids,
        )
        for request, reply, follow in zip(first, replies, follows, strict=True)
    ]
    second.append(_request(tokenizer, "<|im_start|>user\nhi", max_new_tokens=5))
    cached, full = (engine.generate(second) for engine in engines)
    assert [g.token_ids for g in cached] == [g.token_ids for g in full]
    for a, b in zip(cached, full, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert len(engines[0]._store) == 3 and not engines[1]._store
    engines[0].weights_updated()
    assert not engines[0]._store


def test_engines__transformers_prefix_cache_is_dropped_after_a_weight_update(tokenizer, tiny_model):
    """A cache computed with the old weights is never reused: an in-place parameter update
    (what an optimizer step does) empties the store."""
    import copy

    import torch

    model = copy.deepcopy(tiny_model)
    greedy = SamplingConfig(temperature=0)
    engine = TransformersEngine(model, tokenizer, sampling=greedy)
    first = _request(tokenizer, max_new_tokens=4)
    reply = engine.generate([first])[0]
    follow = tokenizer.encode("<|im_start|>user\nnext<|im_end|>\n", add_special_tokens=False)
    second = GenerationRequest(
        max_new_tokens=4,
        prompt_ids=first.prompt_ids + reply.token_ids + follow,
        stop_token_ids=first.stop_token_ids,
    )
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.v_proj.weight.mul_(10.0)
    reused = engine.generate([second])[0]
    fresh = TransformersEngine(model, tokenizer, sampling=greedy, prefix_cache=False)
    expected = fresh.generate([second])[0]
    assert reused.token_ids == expected.token_ids
    assert reused.logprobs == pytest.approx(expected.logprobs, abs=1e-5)
    # a fused optimizer writes the weights without bumping their version counters
    reply = engine.generate([first])[0]
    second = GenerationRequest(
        max_new_tokens=4,
        prompt_ids=first.prompt_ids + reply.token_ids + follow,
        stop_token_ids=first.stop_token_ids,
    )
    weights = [layer.self_attn.v_proj.weight for layer in model.model.layers]
    optimizer = torch.optim.AdamW(weights, lr=1.0, fused=True)
    versions = [weight._version for weight in weights]
    for weight in weights:
        weight.grad = torch.ones_like(weight)
    optimizer.step()
    assert [weight._version for weight in weights] == versions  # what makes the hook needed
    reused = engine.generate([second])[0]
    expected = fresh.generate([second])[0]
    assert reused.logprobs == pytest.approx(expected.logprobs, abs=1e-5)


def test_engines__transformers_prefix_cache_options_are_validated(tokenizer, tiny_model):
    with pytest.raises(ValueError, match="prefix_cache must be a bool"):
        TransformersEngine(tiny_model, tokenizer, prefix_cache="yes")
    with pytest.raises(ValueError, match="prefix_cache_bytes"):
        TransformersEngine(tiny_model, tokenizer, prefix_cache_bytes=-1)


def test_engines__transformers_prefix_cache_keeps_within_its_byte_bound(tokenizer, tiny_model):
    requests = [
        _request(tokenizer, max_new_tokens=3),
        _request(tokenizer, "<|im_start|>user\nlonger prompt here<|im_end|>\n", max_new_tokens=3),
    ]
    unbounded = TransformersEngine(tiny_model, tokenizer, sampling=SamplingConfig(temperature=0))
    unbounded.generate(requests)
    sizes = [
        sum(t.numel() * t.element_size() for pair in entry for t in pair)
        for entry in unbounded._store.values()
    ]
    assert len(sizes) == 2 and unbounded._store_bytes == sum(sizes)
    bounded = TransformersEngine(
        tiny_model, tokenizer, sampling=SamplingConfig(temperature=0), prefix_cache_bytes=sizes[1]
    )
    bounded.generate(requests)
    assert list(bounded._store) == list(unbounded._store)[1:]  # the call's first entry dropped
    assert bounded._store_bytes == sizes[1]
