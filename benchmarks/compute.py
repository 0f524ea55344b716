"""How close generation and the update come to what this machine's cores can do.

``python -m agent_envs.benchmarks.compute`` measures, in one run and side by side:

- **Generation**: tokens per second of the lockstep `RolloutCollector` driving the
  `TransformersEngine` (greedy, one batch of episodes of a real env) with the KV cache kept
  across turns and with every turn re-prefilled, against raw ``model.generate`` on the same
  batches. The raw side replays the prompt ids the collector sent to the engine, call by call
  (turn 2+ prompts are the collector's own: context, reply and chat-template delta), left-padded
  as the engine pads them, with the same ``max_new_tokens``, stop tokens, dtype and threads;
  it keeps no cache between calls and asks for no logits. Only generated tokens count (each
  row up to and including its first stop token, cut to its budget), and the replies of the
  three sides are checked equal. The collector's time is the whole ``collect`` call (env
  steps, chat templates and bookkeeping included); the raw side's is its ``generate`` calls.
- **Update**: the achieved FLOP/s of the RL stage's loss pass (forward and backward, as
  ``agent_envs.benchmarks.train`` runs it through TRL: LoRA on every linear layer, bfloat16
  autocast or float32, a micro-batch of the episodes collected above, prompt left-padded and
  completion right-padded, log-probabilities of the completion tokens at temperature 1, a
  token-advantage policy-gradient loss) against torch's measured matmul peak (square ``mm``
  in float32 and bfloat16 at the same thread count). FLOPs are counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on one pass (matmuls and attention: with LoRA
  the frozen weights get no weight gradient, so a pass is ~4, not 6, x params x tokens).
  A ``torch.profiler`` table of the bfloat16 pass names where its time goes. With
  ``--compile``, the float32 pass is also timed on the model wrapped by ``torch.compile``.

Sides alternate within each repeat (ABBA), on the same seeds and batch every repeat, so the
noise of a shared machine falls on all of them; ratios are per repeat, median [min–max].
Results go to ``benchmarks/results/compute.md`` (measured on an Intel CPU with AMX); the
same run on an AMD EPYC with AVX-512 BF16 and no AMX is ``compute_avx512.md`` (``--output``).
The peaks, and so the ratios, differ between the two by several times.
"""

from __future__ import annotations

import copy
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse

RESULTS = RESULTS_DIR / "compute.md"
GENERATION_SIDES = ("collector, KV reuse", "collector, re-prefill", "raw generate")
UPDATE_SIDES = (
    "loss pass, bfloat16 autocast",
    "loss pass, float32",
    "loss pass, bfloat16 autocast, frozen weights stored in bfloat16",
)
#: the sides whose pass runs under bfloat16 autocast
BF16_SIDES = (UPDATE_SIDES[0], UPDATE_SIDES[2])
#: with ``--compile``: the float32 pass through ``torch.compile`` (inductor), as TRL's
#: ``torch_compile=True`` wraps the model
COMPILED_SIDE = "loss pass, float32, torch.compile"
PEAKS = ("float32", "bfloat16")

#: the end of the report: what a GPU run would change (not measured here)
GPU_NOTE = [
    "## On a GPU (untested)",
    "",
    "Nothing here ran on a GPU; where the recipe would differ there:",
    "",
    "- **Generation**: `agent-envs train --use-vllm` generates the training episodes with "
    "TRL's colocated vLLM (paged KV cache, continuous batching, CUDA graphs) instead of the "
    "transformers engine; the comparison to make is then the collector over the vLLM engine "
    "(`agent_envs.adapters.engines.vllm`) against vLLM's own `generate` on the same prompt ids, "
    "with vLLM's prefix caching in the place of the engine's KV reuse.",
    "- **Batches**: 4-8 rows of a 135M model leave a GPU mostly idle; larger groups and "
    "micro-batches (`--num-generations`, `--rl-prompts`, `--rl-micro-batch` of 16-64 episodes), "
    "a bigger `--model` and `--no-lora` move the loss pass towards the peak, which there is the "
    "bfloat16 tensor-core `mm` measured the same way (`torch.mm` on the GPU, synchronised).",
    "- The ratios measured here (casts, attention backward and elementwise work against AMX "
    "matmuls on two cores) say nothing about a GPU's.",
    "",
]


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    env_id: str = "grl/Sokoban-v0"
    """the env whose episodes are generated (and trained on in the loss pass)"""
    num_envs: int = 8
    """episodes per batch (one generate call per turn holds all live ones)"""
    turns: int = 4
    """turns per episode at most (the collector's max_turns)"""
    max_new_tokens: int = 32
    """generation budget of one turn (``agent-envs train``'s default)"""
    repeats: int = 4
    """repeats of every side (generation and update)"""
    threads: int = 2
    """torch threads, for every side and the matmul peak"""
    model: str = "smollm2"
    """``smollm2`` (the embedded SmolLM2-135M-Instruct, float32) or a checkpoint folder"""
    micro_batch: int = 4
    """episodes per loss pass (``agent-envs train --rl-micro-batch``)"""
    lora: bool = True
    """train LoRA adapters (``agent-envs train``'s default) rather than every weight"""
    lora_r: int = 32
    """LoRA rank (``agent-envs train``'s default)"""
    lora_alpha: int = 64
    """LoRA alpha (``agent-envs train``'s default)"""
    matmul_size: int = 2048
    """side of the square matrices of the matmul peak"""
    peak_seconds: float = 1.0
    """seconds of ``mm`` calls per peak measurement (the best call counts)"""
    profile: bool = True
    """profile one bfloat16 loss pass and report its costliest operators"""
    compile: bool = False
    """also time the float32 pass of the model wrapped by ``torch.compile`` (inductor: needs a
    C++ compiler; its compile time is reported, not timed with the pass)"""
    output: str = str(RESULTS)
    """where the Markdown report goes ("" to only print it)"""


# --------------------------------------------------------------------------- model
def load(folder: str) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the embedded SmolLM2 or a checkpoint folder, in eval mode."""
    from agent_envs.adapters.trl.stages import load_model

    if folder == "smollm2":
        from agent_envs.adapters.engines.transformers import load_smollm2

        model, tokenizer = load_smollm2()
    else:
        model, tokenizer = load_model(Path(folder))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.eval(), tokenizer


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


# --------------------------------------------------------------------------- generation
class RecordingEngine:
    """Forwards to an engine; records each ``generate`` call's prompts, budgets and stops."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.name = engine.name
        self.calls: list[dict[str, Any]] = []

    def generate(self, requests: Any) -> Any:
        generations = self.engine.generate(requests)
        self.calls.append(
            {
                "prompts": [list(request.prompt_ids) for request in requests],
                "budgets": [request.max_new_tokens for request in requests],
                "stops": sorted({t for request in requests for t in request.stop_token_ids}),
                "replies": [list(generation.token_ids) for generation in generations],
            }
        )
        return generations


def raw_generate(model: Any, tokenizer: Any, call: dict[str, Any]) -> list[list[int]]:
    """One recorded call replayed on ``model.generate`` (greedy, no cache kept, no logits):
    each row's tokens up to and including its first stop, cut to its budget."""
    import torch
    from agent_envs.adapters.engines.transformers import left_padded

    pad = tokenizer.pad_token_id
    prompts = call["prompts"]
    width = max(map(len, prompts))
    input_ids, attention = left_padded(prompts, width, pad)
    stops = call["stops"] or [tokenizer.eos_token_id]
    with torch.inference_mode():
        sequences = model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=max(call["budgets"]),
            do_sample=False,
            eos_token_id=stops,
            pad_token_id=pad,
        )
    replies = []
    for row, budget in zip(sequences[:, width:].tolist(), call["budgets"], strict=True):
        stop_at = next((i for i, token in enumerate(row) if token in stops), None)
        end = stop_at + 1 if stop_at is not None and stop_at < budget else min(len(row), budget)
        replies.append(row[:end])
    return replies


def measure_generation(args: Args, model: Any, tokenizer: Any) -> dict[str, Any]:
    """Per side and repeat: generated tokens, wall and CPU seconds; the recorded calls and the
    episodes (for the loss pass); how many replies differed from the collector's."""
    import gymnasium
    from agent_envs.adapters.engines.transformers import TransformersEngine
    from agent_envs.adapters.loop.collector import RolloutCollector
    from agent_envs.adapters.loop.engine import SamplingConfig

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    vec = gymnasium.make_vec(args.env_id, num_envs=args.num_envs, autoreset_mode="disabled")
    seeds = list(range(args.num_envs))
    greedy = SamplingConfig(temperature=0)

    def collect(reuse: bool) -> tuple[RecordingEngine, list[Any]]:
        engine = RecordingEngine(
            TransformersEngine(model, tokenizer, sampling=greedy, prefix_cache=reuse)
        )
        collector = RolloutCollector(
            vec, engine, env_id=args.env_id, max_turns=args.turns,
            max_new_tokens=args.max_new_tokens,
        )  # fmt: skip
        return engine, collector.collect(seeds)

    recorded, trajectories = collect(True)  # warm-up; its calls are what the raw side replays
    reference = [reply for call in recorded.calls for reply in call["replies"]]
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in GENERATION_SIDES}
    mismatched = 0
    try:
        for repeat in range(args.repeats):
            order = GENERATION_SIDES if repeat % 2 == 0 else GENERATION_SIDES[::-1]
            for side in order:
                start = _clocks()
                if side == "raw generate":
                    replies = [
                        reply
                        for call in recorded.calls
                        for reply in raw_generate(model, tokenizer, call)
                    ]
                else:
                    engine, _ = collect(side == "collector, KV reuse")
                    replies = [reply for call in engine.calls for reply in call["replies"]]
                wall, cpu = _since(start)
                mismatched += replies != reference
                runs[side].append({"tokens": sum(map(len, replies)), "wall": wall, "cpu": cpu})
    finally:
        vec.close()
    return {
        "runs": runs,
        "mismatched": mismatched,
        "calls": recorded.calls,
        "trajectories": trajectories,
    }


# --------------------------------------------------------------------------- update
def matmul_peak(dtype_name: str, size: int, seconds: float = 1.0) -> float:
    """FLOP/s of ``torch.mm`` on two ``size x size`` matrices of ``dtype_name`` (the best of
    batches of calls run for about ``seconds``)."""
    import torch

    dtype = getattr(torch, dtype_name)
    a = torch.randn(size, size).to(dtype)
    b = torch.randn(size, size).to(dtype)
    torch.mm(a, b)  # warm-up (oneDNN picks its kernel)
    best, spent = 0.0, 0.0
    while spent < seconds:
        start = time.perf_counter()
        torch.mm(a, b)
        elapsed = time.perf_counter() - start
        spent += elapsed
        best = max(best, 2 * size**3 / elapsed)
    return best


def loss_batch(trajectories: list[Any], size: int, pad: int) -> dict[str, Any]:
    """``size`` episodes (cycled) as TRL's RL batch: prompt ids left-padded, completion ids
    right-padded, a loss mask of model tokens, unit advantages."""
    import torch

    rows = [trajectories[index % len(trajectories)] for index in range(size)]
    prompts = [list(row.prompt_ids) for row in rows]
    completions = [list(row.completion_ids) for row in rows]
    masks = [list(row.env_mask) for row in rows]
    p, c = max(map(len, prompts)), max(map(len, completions))
    input_ids = torch.full((size, p + c), pad, dtype=torch.long)
    attention = torch.zeros((size, p + c), dtype=torch.long)
    loss_mask = torch.zeros((size, c))
    for row, (prompt, completion, mask) in enumerate(zip(prompts, completions, masks, strict=True)):
        input_ids[row, p - len(prompt) : p] = torch.tensor(prompt)
        input_ids[row, p : p + len(completion)] = torch.tensor(completion)
        attention[row, p - len(prompt) : p + len(completion)] = 1
        loss_mask[row, : len(completion)] = torch.tensor(mask, dtype=torch.float32)
    real = int(attention.sum())
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "loss_mask": loss_mask,
        "completion": c,
        "tokens": size * (p + c),
        "real_tokens": real,
    }


def trainable(model: Any, args: Args) -> Any:
    """A copy of ``model`` in train mode, with LoRA adapters as ``agent-envs train`` adds them."""
    trained = copy.deepcopy(model)
    if args.lora:
        from agent_envs.adapters.trl.stages import lora_config
        from peft import get_peft_model

        trained = get_peft_model(trained, lora_config(args.lora_r, args.lora_alpha))
    return trained.train()


def loss_pass(model: Any, batch: dict[str, Any], bf16: bool) -> float:
    """Forward and backward of the RL loss on ``batch`` (TRL's GRPO pass: logits of the
    completion positions, their log-probabilities, ratio to a detached copy times the
    advantage, averaged over the loss mask); the gradients are cleared. Returns the loss."""
    import torch

    completion = batch["completion"]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            logits_to_keep=completion + 1,
        ).logits
    logits = logits[:, :-1].float()
    targets = batch["input_ids"][:, -completion:]
    logps = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(logps - logps.detach())
    mask = batch["loss_mask"]
    loss = -(ratio * mask).sum() / mask.sum().clamp(min=1.0)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return float(loss.detach())


def count_flops(model: Any, batch: dict[str, Any], bf16: bool) -> dict[str, int]:
    """FLOPs of one loss pass as ``FlopCounterMode`` counts them: ``total``, and ``matmul``
    (``mm``, ``addmm``: the linear layers)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        loss_pass(model, batch, bf16)
    ops = counter.get_flop_counts().get("Global", {})
    linear = sum(count for op, count in ops.items() if str(op).split(".")[-1] in ("mm", "addmm"))
    return {"total": counter.get_total_flops(), "matmul": linear}


def with_eager_attention(model: Any) -> Any:
    """A copy of ``model`` computing attention with plain matmuls, which ``FlopCounterMode``
    counts (it has no formula for the CPU kernel of ``scaled_dot_product_attention``)."""
    eager = copy.deepcopy(model)
    eager.config._attn_implementation = "eager"
    return eager


def profile_pass(model: Any, batch: dict[str, Any], bf16: bool, rows: int = 10) -> dict[str, Any]:
    """One loss pass under ``torch.profiler``: the ``rows`` operators with the most self CPU
    time (table rows), and the self seconds of the linear layers' ``mm``/``addmm`` and of all."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss_pass(model, batch, bf16)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(event.self_cpu_time_total for event in events) or 1
    matmul = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::addmm"))
    table = [
        f"| `{event.key}` | {event.count} | {event.self_cpu_time_total / 1e3:.0f} | "
        f"{100 * event.self_cpu_time_total / total:.1f}% |"
        for event in events[:rows]
    ]
    return {"rows": table, "matmul_s": matmul / 1e6, "total_s": total / 1e6}


def measure_update(
    args: Args, model: Any, tokenizer: Any, trajectories: list[Any]
) -> dict[str, Any]:
    """Per repeat: the matmul peaks and each loss pass's seconds; FLOPs of one pass."""
    import torch

    batch = loss_batch(trajectories, args.micro_batch, tokenizer.pad_token_id)
    trained = {
        UPDATE_SIDES[0]: trainable(model, args),
        UPDATE_SIDES[1]: trainable(model, args),
        UPDATE_SIDES[2]: trainable(copy.deepcopy(model).to(torch.bfloat16), args),
    }
    flops = count_flops(trainable(with_eager_attention(model), args), batch, True)
    linear = count_flops(trained[UPDATE_SIDES[0]], batch, True)["matmul"]
    compile_s = None
    if args.compile:
        trained[COMPILED_SIDE] = torch.compile(trainable(model, args))
        start = time.perf_counter()
        loss_pass(trained[COMPILED_SIDE], batch, bf16=False)  # compiles forward and backward
        compile_s = time.perf_counter() - start
    for side, pass_model in trained.items():  # warm-up
        loss_pass(pass_model, batch, bf16=side in BF16_SIDES)
    sides = (*PEAKS, *trained)
    runs: dict[str, list[float]] = {side: [] for side in sides}
    for repeat in range(args.repeats):
        for side in sides if repeat % 2 == 0 else sides[::-1]:
            if side in PEAKS:
                runs[side].append(matmul_peak(side, args.matmul_size, args.peak_seconds))
            else:
                start = time.perf_counter()
                loss_pass(trained[side], batch, bf16=side in BF16_SIDES)
                runs[side].append(time.perf_counter() - start)
    profile = profile_pass(trained[UPDATE_SIDES[0]], batch, True) if args.profile else None
    params = sum(p.numel() for p in model.parameters())
    return {
        "runs": runs,
        "flops": flops["total"],
        "linear_flops": linear,
        "batch": batch,
        "params": params,
        "profile": profile,
        "compile_s": compile_s,
    }


# --------------------------------------------------------------------------- report
def spread(values: list[float], digits: int = 2) -> str:
    """``median [min–max]``."""
    return (
        f"{statistics.median(values):.{digits}f} "
        f"[{min(values):.{digits}f}–{max(values):.{digits}f}]"
    )


def generation_table(result: dict[str, Any]) -> tuple[list[str], dict[str, list[float]]]:
    runs = result["runs"]
    raw = runs["raw generate"]
    ratios = {
        side: [
            (a["tokens"] / a["wall"]) / (b["tokens"] / b["wall"])
            for a, b in zip(runs[side], raw, strict=True)
        ]
        for side in GENERATION_SIDES
    }
    lines = [
        "| side | generated tokens | wall s | CPU s | tokens/s (wall) | / raw generate |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for side in GENERATION_SIDES:
        tokens = runs[side][0]["tokens"]
        walls = [run["wall"] for run in runs[side]]
        cpus = [run["cpu"] for run in runs[side]]
        speed = [run["tokens"] / run["wall"] for run in runs[side]]
        lines.append(
            f"| {side} | {tokens} | {spread(walls)} | {spread(cpus)} | {spread(speed, 1)} | "
            f"{spread(ratios[side])} |"
        )
    return lines, ratios


def update_table(result: dict[str, Any]) -> tuple[list[str], dict[str, list[float]]]:
    runs, flops = result["runs"], result["flops"]
    ratios: dict[str, list[float]] = {}
    lines = [
        "| side | seconds | GFLOP/s | / float32 peak | / bfloat16 peak |",
        "|---|---:|---:|---|---|",
    ]
    for side in PEAKS:
        rate = [value / 1e9 for value in runs[side]]
        lines.append(f"| matmul peak, {side} ({side} `mm`) | | {spread(rate, 0)} | | |")
    for side in (s for s in runs if s not in PEAKS):
        rate = [flops / seconds for seconds in runs[side]]
        of = {peak: [r / p for r, p in zip(rate, runs[peak], strict=True)] for peak in PEAKS}
        ratios[side] = of["bfloat16" if side in BF16_SIDES else "float32"]
        lines.append(
            f"| {side} | {spread(runs[side])} | {spread([r / 1e9 for r in rate], 0)} | "
            f"{spread(of['float32'])} | {spread(of['bfloat16'])} |"
        )
    return lines, ratios


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def to_markdown(
    args: Args, generation: dict[str, Any], update: dict[str, Any], uptimes: list[str]
) -> list[str]:
    gen_lines, gen_ratios = generation_table(generation)
    upd_lines, upd_ratios = update_table(update)
    batch = update["batch"]
    calls = generation["calls"]
    model = (
        "SmolLM2-135M-Instruct (the embedded GGUF, dequantized to float32)"
        if args.model == "smollm2"
        else f"`{args.model}`"
    )
    reuse = statistics.median(gen_ratios["collector, KV reuse"])
    prefill = statistics.median(gen_ratios["collector, re-prefill"])
    bf16 = statistics.median(upd_ratios[UPDATE_SIDES[0]])
    fp32 = statistics.median(upd_ratios[UPDATE_SIDES[1]])
    lines = [
        "# Compute: generation and the update against what this machine can do",
        "",
        f"`python -m agent_envs.benchmarks.compute --env-id {args.env_id} --num-envs "
        f"{args.num_envs} --turns {args.turns} --max-new-tokens {args.max_new_tokens} "
        f"--repeats {args.repeats} --threads {args.threads} --micro-batch {args.micro_batch}"
        f"{' --compile' if args.compile else ''}` on {_cpu_model()}, {os.cpu_count()} CPUs, "
        f"{args.threads} torch threads, Python {platform.python_version()}, torch "
        f"{_torch_version()}: {model}. Load (`uptime`) before and after the run:",
        "",
        *[f"    {line}" for line in uptimes],
        "",
        "The machine is shared (other jobs may run beside this one), so the sides alternate in "
        "each repeat (ABBA) on the same work, and ratios are per repeat, median [min–max] over "
        f"{args.repeats} repeats.",
        "",
        "## Generation",
        "",
        f"`{args.env_id}`, {args.num_envs} episodes (seeds 0–{args.num_envs - 1}) of at most "
        f"{args.turns} turns, {args.max_new_tokens} new tokens per turn, greedy, float32; "
        f"{len(calls)} `generate` calls of up to {args.num_envs} rows, prompts of "
        f"{min(len(p) for c in calls for p in c['prompts'])}–"
        f"{max(len(p) for c in calls for p in c['prompts'])} tokens. The raw side replays the "
        "prompt ids the collector sent to the engine in each call (turn 2+: the collector's "
        "context, reply and chat-template delta) through `model.generate`, left-padded as the "
        "engine pads them, same budgets and stop tokens, no cache kept between calls, no logits "
        "returned. Only generated tokens count; the collector sides are timed over the whole "
        "`collect` call (env steps and chat templates included). Replies differing from the "
        f"reference run: {generation['mismatched']} of {3 * args.repeats} side runs.",
        "",
        *gen_lines,
        "",
        f"Target ≥ 0.90× raw generate: the collector with the KV cache kept reaches "
        f"**{reuse:.2f}×** ({'met' if reuse >= 0.9 else 'missed'}); re-prefilling every turn, "
        f"as raw generate does, **{prefill:.2f}×** ({'met' if prefill >= 0.9 else 'missed'}).",
        "",
        "## Update",
        "",
        f"The RL loss pass (forward and backward) of {args.micro_batch} of those episodes "
        f"(`--rl-micro-batch {args.micro_batch}`): {batch['input_ids'].shape[1]} positions per "
        f"row ({batch['completion']} completion positions), {batch['tokens']} positions in all, "
        f"{batch['real_tokens']} of them tokens (the rest padding), "
        + (f"LoRA r={args.lora_r} on every linear layer" if args.lora else "every weight trained")
        + f"; {update['params'] / 1e6:.1f} M parameters. FLOPs by `FlopCounterMode` on a "
        "copy with eager attention (it has no formula for the CPU `scaled_dot_product_attention` "
        "kernel the timed passes run; eager attention's FLOPs include the masked half of each "
        f"causal score matrix): {update['flops'] / 1e9:.1f} GFLOP per pass "
        f"({update['flops'] / (update['params'] * batch['tokens']):.2f} x params x positions; "
        f"the linear layers' `mm`/`addmm`: {update['linear_flops'] / 1e9:.1f} GFLOP). "
        f"Matmul peak: `torch.mm` of {args.matmul_size}x{args.matmul_size} matrices, the best "
        f"call of {args.peak_seconds:g} s of calls, measured between the passes. The third "
        "pass is a candidate fix, not what `agent-envs train` runs today: the frozen base "
        "weights stored in bfloat16 (LoRA adapters in float32, as peft keeps them), so "
        "autocast stops casting every weight on every pass.",
        "",
        *upd_lines,
        "",
        f"Target ≥ 40% of peak in the loss pass: bfloat16 autocast (`agent-envs train`'s "
        f"default) reaches **{100 * bf16:.0f}%** of the bfloat16 peak "
        f"({'met' if bf16 >= 0.4 else 'missed'}); float32 reaches **{100 * fp32:.0f}%** of the "
        f"float32 peak ({'met' if fp32 >= 0.4 else 'missed'}).",
        "",
    ]
    if update["compile_s"] is not None:
        compiled = statistics.median(upd_ratios[COMPILED_SIDE])
        lines += [
            f"The float32 pass with the model wrapped by `torch.compile` (inductor, the wrapping "
            f"TRL's `torch_compile=True` does; {update['compile_s']:.0f} s to compile its "
            f"forward and backward on this batch, before the timed passes) reaches "
            f"**{100 * compiled:.0f}%** of the float32 peak "
            f"({'met' if compiled >= 0.4 else 'missed'}).",
            "",
        ]
    profile = update["profile"]
    if profile:
        runs = update["runs"]
        rate = update["linear_flops"] / max(profile["matmul_s"], 1e-9) / 1e9
        bf16_peak = statistics.median(runs["bfloat16"])
        speedup = [f / b for f, b in zip(runs[UPDATE_SIDES[1]], runs[UPDATE_SIDES[0]], strict=True)]
        flags = _cpu_flags(("amx_bf16", "avx512_bf16"))
        lines += [
            "Where one bfloat16-autocast loss pass spends its time (`torch.profiler`: each "
            "operator's self time, measured on the thread that calls it, "
            f"{profile['total_s']:.2f} s in all): the linear "
            f"layers' `mm`/`addmm` take {100 * profile['matmul_s'] / profile['total_s']:.0f}% "
            f"of it, at {rate:.0f} GFLOP/s while they run: "
            f"{100 * rate * 1e9 / bf16_peak:.0f}% of the bfloat16 peak, the most a pass made of "
            "nothing but these matmuls could reach.",
            "",
            "| operator | calls | self ms | share |",
            "|---|---:|---:|---:|",
            *profile["rows"],
            "",
            _bfloat16_reason(bf16, runs, flags)
            + f" bfloat16 autocast stays `agent-envs train`'s default: {spread(speedup)}x "
            "faster than the float32 pass.",
            "",
        ]
    return lines + GPU_NOTE


def _bfloat16_reason(ratio: float, runs: dict[str, list[float]], flags: list[str]) -> str:
    """Why the bfloat16 pass reaches ``ratio`` of its peak, from how far that peak stands above
    the float32 one on this CPU."""
    units = ", ".join(f"`{flag}`" for flag in flags) or "no bfloat16 flags"
    over = statistics.median(runs["bfloat16"]) / statistics.median(runs["float32"])
    rest = (
        "the rest of the pass (autocast's casts, `copy_`; the CPU flash-attention backward; the "
        "elementwise work of RMSNorm, RoPE, SiLU gating and LoRA's scale-and-add) gets no "
        "speed-up from them."
    )
    if ratio < 0.4:
        return (
            f"Why the bfloat16 pass stays far from its peak: that peak, {over:.1f}x the float32 "
            f"one, is the CPU's bfloat16 matmul units' ({units}), which speed up square matmuls "
            "but nothing else. The model is narrow (hidden 576) and LoRA puts a rank-32 matmul "
            "pair beside every linear layer, so the pass's matmuls run well below the square "
            f"peak (above); {rest}"
        )
    return (
        f"Why the bfloat16 pass comes this close to its peak: on this CPU ({units}) that peak is "
        f"only {over:.1f}x the float32 one, so the pass's narrow matmuls (hidden 576, LoRA's "
        f"rank-32 pairs) run near it, while {rest}"
    )


def _cpuinfo() -> str:
    """``/proc/cpuinfo`` ("" where it cannot be read)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else its architecture."""
    for line in _cpuinfo().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({platform.machine()})"
    return platform.processor() or platform.machine()


def _cpu_flags(wanted: tuple[str, ...]) -> list[str]:
    """Which of ``wanted`` ``/proc/cpuinfo`` lists (none where it cannot be read)."""
    flags = set(_cpuinfo().split())
    return [flag for flag in wanted if flag in flags]


def _torch_version() -> str:
    import torch

    return torch.__version__


def main(args: Args) -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its threads
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    uptimes = [_uptime()]
    model, tokenizer = load(args.model)
    generation = measure_generation(args, model, tokenizer)
    update = measure_update(args, model, tokenizer, generation["trajectories"])
    uptimes.append(_uptime())
    return finish_report(to_markdown(args, generation, update, uptimes), args.output)


if __name__ == "__main__":
    prog = "python -m agent_envs.benchmarks.compute"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
