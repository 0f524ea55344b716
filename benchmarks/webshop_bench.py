"""WebShop benchmark: search quality and speed, env step cost, index build, oracle, random.

Writes ``benchmarks/results/webshop.md``. Run ``agent-envs bench webshop-bench`` (add
``--data-path DIR`` for WebShop's data; the 1k-set rows are skipped without it). Every
catalog build runs in a fresh process with an empty cache so its time and peak memory are
its own.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.benchmarks.cli import RESULTS_DIR, parse

from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.envs.webshop import WebShopEnv
from agent_envs.envs.webshop.catalog import Catalog, CatalogSpec, load_catalog
from agent_envs.envs.webshop.text import to_ascii

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    data_path: str = str(ROOT.parent / "shared" / "data" / "webshop")
    """WebShop's data folder (documents_1k.jsonl, items_ins_v2_1000.json); without it the 1k-set
    rows are skipped"""
    large_products: int = 100_000
    """products of the large generated catalog"""
    random_episodes: int = 300
    """episodes of the random baseline per catalog"""
    output: str = str(RESULTS_DIR / "webshop.md")
    """where the Markdown report goes"""


# ---------------------------------------------------------------------- helpers
def _memory_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB (Linux ``/proc``; else the peak twice)."""
    try:
        with open("/proc/self/status", encoding="ascii") as file:
            fields = dict(line.split(":", 1) for line in file if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return peak, peak


def _build_in_child(spec: CatalogSpec) -> dict[str, float]:
    before, _ = _memory_mb()
    start = time.perf_counter()
    catalog = load_catalog(spec)
    seconds = time.perf_counter() - start
    after, peak = _memory_mb()
    return {"seconds": seconds, "rss_mb": after - before, "peak_mb": peak - before,
            "products": len(catalog)}  # fmt: skip


def _measure_build(spec: CatalogSpec) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return pool.apply(_build_in_child, (spec,))


def _keywords(text: str) -> str:
    return " ".join(to_ascii(text).lower().split())[:500]


def _recall(catalog: Catalog, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    top10 = top50 = 0
    for asin, text in pairs:
        found = [catalog.asins[i] for i in catalog.index.search(_keywords(text))]
        top10 += asin in found[:10]
        top50 += asin in found
    return top10 / len(pairs), top50 / len(pairs)


def _plain_bm25s_recall(catalog: Catalog, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """The reference: bm25s with its defaults (k1 1.5, b 0.75, no stop words or stemming)."""
    import bm25s

    from agent_envs.envs.webshop.data import document_text

    documents = [document_text(catalog.product(asin)) for asin in catalog.asins]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(documents, stopwords=None, show_progress=False),
                    show_progress=False)  # fmt: skip
    top10 = top50 = 0
    for asin, text in pairs:
        tokens = bm25s.tokenize([text], stopwords=None, show_progress=False)
        found, _ = retriever.retrieve(tokens, k=50, show_progress=False)
        asins = [catalog.asins[i] for i in found[0]]
        top10 += asin in asins[:10]
        top50 += asin in asins
    return top10 / len(pairs), top50 / len(pairs)


def _search_latency_ms(catalog: Catalog, texts: list[str]) -> tuple[float, float]:
    times = []
    for text in texts:
        keywords = _keywords(text)
        start = time.perf_counter()
        catalog.index.search(keywords)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), 1000 * float(np.percentile(times, 95))


def _step_latency_ms(env: WebShopEnv, goals: list[dict]) -> float:
    """p50 of one step from the search page to a results page (fresh keywords each time)."""
    times = []
    for goal in goals:
        env.reset(seed=0, options={"item": goal})
        reply = f"<answer>search[{_keywords(goal['instruction_text'])}]</answer>"
        start = time.perf_counter()
        env.step(reply)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _episodes(env: WebShopEnv, policy: Any, goals: list[dict], seed: int = 0) -> dict[str, float]:
    rewards, turns = [], []
    for number, goal in enumerate(goals):
        observation, _ = env.reset(seed=seed + number, options={"item": goal})
        reward = 0.0
        turn = 0
        while turn < env.max_turns:
            turn += 1
            observation, reward, terminated, truncated, _ = env.step(policy(env, observation))
            if terminated or truncated:
                break
        rewards.append(float(reward))
        turns.append(turn)
    return {
        "episodes": len(rewards),
        "mean_reward": float(np.mean(rewards)),
        "success": float(np.mean([r == 1.0 for r in rewards])),
        "mean_turns": float(np.mean(turns)),
    }


def _sample(goals: list[dict], count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(goals), size=min(count, len(goals)), replace=False)
    return [goals[i] for i in sorted(picks.tolist())]


# ---------------------------------------------------------------------- sections
def bench_1k(args: Args, cache: str, lines: list[str]) -> None:
    spec = CatalogSpec("webshop", os.path.abspath(args.data_path), "1k", cache_dir=cache)
    build = _measure_build(spec)
    cached = _measure_build(spec)
    env = WebShopEnv(data_path=args.data_path, cache_dir=cache, split="test")
    catalog = env.catalog
    base = [(asin, catalog.product(asin)["instruction_text"]) for asin in catalog.asins
            if "instruction_text" in catalog.product(asin)]  # fmt: skip
    synthetic = catalog.goal_lists["synthetic"]
    test_goals = catalog.goals("synthetic", "test")
    r_base = _recall(catalog, base)
    r_goal = _recall(catalog, [(g["asin"], g["instruction_text"]) for g in synthetic])
    fts = load_catalog(spec._replace(search_backend="fts5"))
    r_fts = _recall(fts, base)
    r_plain = _plain_bm25s_recall(catalog, base)
    texts = [text for _, text in base] + [g["instruction_text"] for g in test_goals]
    p50, p95 = _search_latency_ms(catalog, texts)
    f50, f95 = _search_latency_ms(fts, texts)
    step = _step_latency_ms(env, test_goals)
    oracle = _episodes(env, OraclePolicy(), synthetic)
    human_env = WebShopEnv(data_path=args.data_path, cache_dir=cache, goals="human", split="test")
    human = _episodes(human_env, OraclePolicy(), human_env.goal_list)
    random = _episodes(env, RandomPolicy(seed=0), _sample(test_goals, args.random_episodes, 0))
    lines += [
        "## WebShop 1k product set",
        "",
        f"{build['products']:.0f} products, {len(synthetic)} synthetic goals, "
        f"{len(catalog.goal_lists['human'])} human goals (the 13 human instructions kept in "
        "`documents_1k.jsonl`).",
        "",
        "**Search recall**: is the goal's product among the results of a search with the "
        "goal text? (top 10 = page 1; top 50 = the five pages an agent can reach)",
        "",
        "| queries | backend | top 10 | top 50 |",
        "|---|---|---|---|",
        f"| {len(base)} synthetic instructions (`items_ins_v2_1000.json`) | bm25s | "
        f"{r_base[0]:.1%} | {r_base[1]:.1%} |",
        f"| {len(synthetic)} full goal texts (with options and price cap) | bm25s | "
        f"{r_goal[0]:.1%} | {r_goal[1]:.1%} |",
        f"| {len(base)} synthetic instructions | fts5 (fallback) | {r_fts[0]:.1%} | "
        f"{r_fts[1]:.1%} |",
        f"| {len(base)} synthetic instructions | plain bm25s (defaults: k1 1.5, b 0.75, no "
        f"stop words or stemming; the reference) | {r_plain[0]:.1%} | {r_plain[1]:.1%} |",
        "",
        "The reference figure quoted for a plain bm25s index of WebShop's document text is "
        "77% / 93%.",
        "",
        "**Speed**",
        "",
        "| measure | value |",
        "|---|---|",
        f"| search p50 / p95 (bm25s, {len(texts)} queries) | {p50:.2f} ms / {p95:.2f} ms |",
        f"| search p50 / p95 (fts5) | {f50:.2f} ms / {f95:.2f} ms |",
        f"| env step, search page to results, p50 ({len(test_goals)} goals) | {step:.2f} ms |",
        f"| catalog load + index build (empty cache) | {build['seconds']:.2f} s; RSS "
        f"+{build['rss_mb']:.0f} MB (peak +{build['peak_mb']:.0f} MB) |",
        f"| catalog load, index from the disk cache | {cached['seconds']:.2f} s; RSS "
        f"+{cached['rss_mb']:.0f} MB (peak +{cached['peak_mb']:.0f} MB) |",
        "",
        "**Policies** (15 turns)",
        "",
        "| policy | goals | episodes | mean reward | success (reward 1) | mean turns |",
        "|---|---|---|---|---|---|",
        _policy_row("oracle", "all synthetic", oracle),
        _policy_row("oracle", "human (test)", human),
        _policy_row("random", "synthetic test", random),
        "",
    ]


def bench_generated(args: Args, cache: str, lines: list[str]) -> None:
    default = _measure_build(CatalogSpec("generated", cache_dir=cache))
    env = WebShopEnv(cache_dir=cache, split="test")
    test_goals = env.goal_list
    oracle = _episodes(env, OraclePolicy(), test_goals)
    random = _episodes(env, RandomPolicy(seed=0), _sample(test_goals, args.random_episodes, 0))
    large_spec = CatalogSpec("generated", num_products=args.large_products, cache_dir=cache)
    large = _measure_build(large_spec)
    large_cached = _measure_build(large_spec)
    large_env = WebShopEnv(num_products=args.large_products, cache_dir=cache, split="test")
    texts = [g["instruction_text"] for g in large_env.goal_list]
    p50, p95 = _search_latency_ms(large_env.catalog, texts)
    step = _step_latency_ms(large_env, large_env.goal_list)
    small_texts = [g["instruction_text"] for g in test_goals]
    s50, s95 = _search_latency_ms(env.catalog, small_texts)
    lines += [
        "## Built-in generated catalog",
        "",
        "| catalog | build (empty cache) | RSS growth (peak) | load (cached index) | search "
        "p50 / p95 | env step p50 |",
        "|---|---|---|---|---|---|",
        f"| {len(env.catalog)} products (default), {len(env.catalog.goal_lists['synthetic'])} "
        f"goals | {default['seconds']:.2f} s | +{default['rss_mb']:.0f} MB "
        f"(+{default['peak_mb']:.0f} MB) | - | {s50:.2f} / {s95:.2f} ms | "
        f"{_step_latency_ms(env, test_goals):.2f} ms |",
        f"| {args.large_products} products, {len(large_env.catalog.goal_lists['synthetic'])} "
        f"goals | {large['seconds']:.1f} s | +{large['rss_mb']:.0f} MB "
        f"(+{large['peak_mb']:.0f} MB) | {large_cached['seconds']:.1f} s | {p50:.2f} / "
        f"{p95:.2f} ms | {step:.2f} ms |",
        "",
        "Generation itself is most of a generated catalog's build; the cached load still "
        "generates the products (from the seed) and only reads the index from disk.",
        "",
        "| policy | goals | episodes | mean reward | success (reward 1) | mean turns |",
        "|---|---|---|---|---|---|",
        _policy_row("oracle", "generated test", oracle),
        _policy_row("random", "generated test", random),
        "",
    ]


def _policy_row(name: str, goals: str, result: dict[str, float]) -> str:
    return (
        f"| {name} | {goals} | {result['episodes']:.0f} | {result['mean_reward']:.3f} | "
        f"{result['success']:.1%} | {result['mean_turns']:.1f} |"
    )


def main(args: Args) -> str:
    lines = [
        "# WebShop benchmark",
        "",
        "Written by `agent-envs bench webshop-bench`. Machine: "
        f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs.",
        "Search: bm25s (Lucene scoring, k1 0.9, b 0.4, Lucene English stop words, Porter "
        "stemming) over WebShop's indexed text (title, description, first bullet, options).",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="webshop-bench-") as cache:
        if (Path(args.data_path) / "documents_1k.jsonl").is_file():
            bench_1k(args, cache, lines)
        else:
            lines += [f"(WebShop data not found at {args.data_path}: 1k-set rows skipped.)", ""]
        bench_generated(args, cache, lines)
    text = "\n".join(lines)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text + "\n")
    return text


if __name__ == "__main__":
    prog = "agent-envs bench webshop-bench"
    print(main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0])))
