"""What OpenMP's wait policy does to torch on a shared CPU machine.

``agent-envs bench omp-wait`` times the same work in fresh processes under
``OMP_WAIT_POLICY=ACTIVE`` (threads spin while they wait for work: libgomp's behaviour when
the variable is unset, for a while) and ``PASSIVE`` (they sleep), alternating ABBA per repeat
so the machine's load falls on both: greedy generation with a model of SmolLM2-135M's shape
(a batch of ``batch`` prompts of ``prompt_tokens``, ``new_tokens`` new tokens each, KV cache on)
and one forward + backward pass of a training micro-batch. It reports the wall seconds of each
policy, their ratio (median and range over repeats), and the machine's load average, which is
what decides the ratio: on an idle machine the policies are close, while with more runnable
processes than cores, spinning threads hold cores that the threads they wait on need.

This is why the ``agent-envs`` command sets ``OMP_WAIT_POLICY=PASSIVE`` unless the variable is
already set (:func:`agent_envs.benchmarks.cli.main`), and the test suite does too. Results go to
``benchmarks/results/omp_wait.md``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass

from agent_envs.benchmarks.cli import RESULTS_DIR, finish_report, parse

RESULTS = RESULTS_DIR / "omp_wait.md"
POLICIES = ("ACTIVE", "PASSIVE")


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    repeats: int = 4
    """processes per policy (ABBA order)"""
    threads: int = 2
    """torch threads in each process (the machine's cores)"""
    batch: int = 2
    """prompts per generate call and rows per training micro-batch"""
    prompt_tokens: int = 300
    """prompt length (random token ids)"""
    new_tokens: int = 48
    """tokens generated per prompt"""
    train_tokens: int = 512
    """sequence length of the training micro-batch"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def measure(args: Args) -> dict[str, float]:
    """Wall seconds of one generate call and one forward + backward pass, in this process."""
    import time

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = LlamaConfig(  # SmolLM2-135M's shape
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    prompt = torch.randint(100, 40000, (args.batch, args.prompt_tokens))
    start = time.perf_counter()
    with torch.no_grad():
        model.generate(
            input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
            max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, pad_token_id=0,
        )  # fmt: skip
    generate = time.perf_counter() - start
    model.train()
    batch = torch.randint(100, 40000, (args.batch, args.train_tokens))
    start = time.perf_counter()
    model(input_ids=batch, labels=batch).loss.backward()
    train = time.perf_counter() - start
    return {"generate": generate, "train": train}


def _child(args: Args, policy: str) -> dict[str, float]:
    flags = [f"--{name.replace('_', '-')}={getattr(args, name)}" for name in
             ("threads", "batch", "prompt_tokens", "new_tokens", "train_tokens")]  # fmt: skip
    code = (
        "import json, sys; from agent_envs.benchmarks.omp_wait import Args, measure, parse; "
        "print(json.dumps(measure(parse(Args, sys.argv[1:], prog='omp-wait'))))"
    )
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    done = subprocess.run(
        [sys.executable, "-c", code, *flags], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(args: Args) -> str:
    if args.repeats < 1:
        raise SystemExit(f"--repeats: at least 1, got {args.repeats}")
    runs: dict[str, list[dict[str, float]]] = {policy: [] for policy in POLICIES}
    loads = []
    for repeat in range(args.repeats):
        order = POLICIES if repeat % 2 == 0 else POLICIES[::-1]
        for policy in order:
            loads.append(os.getloadavg()[0])
            runs[policy].append(_child(args, policy))
            print(policy, runs[policy][-1], f"load {loads[-1]:.1f}", flush=True)
    lines = [
        "# OpenMP wait policy: spinning against sleeping threads",
        "",
        f"`agent-envs bench omp-wait --repeats {args.repeats} --threads {args.threads}` on "
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}: a "
        f"random model of SmolLM2-135M's shape, generate {args.batch} x "
        f"{args.prompt_tokens}-token prompts + {args.new_tokens} new tokens (greedy, KV cache), "
        f"and one forward + backward of {args.batch} x {args.train_tokens} tokens; one fresh "
        f"process per measurement, the policies alternating (ABBA). 1-minute load average "
        f"during the runs: {min(loads):.1f}–{max(loads):.1f} (on {os.cpu_count()} cores).",
        "",
        "| work | ACTIVE s (median) | PASSIVE s (median) | ACTIVE / PASSIVE, median [min–max] |",
        "|---|---:|---:|---|",
    ]
    for work in ("generate", "train"):
        active = [run[work] for run in runs["ACTIVE"]]
        passive = [run[work] for run in runs["PASSIVE"]]
        ratios = [a / p for a, p in zip(active, passive, strict=True)]
        lines.append(
            f"| {work} | {statistics.median(active):.2f} | {statistics.median(passive):.2f} | "
            f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}] |"
        )
    lines += [
        "",
        "A ratio above 1 is time the spinning threads cost. It grows with the number of "
        "runnable processes per core. This run had the machine's load beside it; on an idle "
        "machine the gap should close, which this run does not show (measure it there with the "
        "same command).",
    ]
    return finish_report(lines, args.output)


if __name__ == "__main__":
    main(parse(Args, prog="agent-envs bench omp-wait", description=__doc__.split("\n\n")[0]))
