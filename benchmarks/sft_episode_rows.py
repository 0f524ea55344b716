"""SFT tokens per epoch: one row per turn against one row per episode (``--sft-rows``).

``agent-envs bench sft-episode-rows`` builds the oracle SFT rows of ``--episodes`` train seeds
(``agent_envs.benchmarks.train``) of every env of ``--envs`` both ways, as
``agent_envs.benchmarks.train --sft-rows`` does: ``turn`` rows (the turn's whole history as the
prompt, the reply as the completion) and ``episode`` rows (the whole episode once, the loss on
every reply). It tokenizes them with the embedded SmolLM2-135M-Instruct's chat template and
counts the tokens an epoch runs through the model, the longest row (what
``--max-total-tokens`` must hold so that no row is cut) and the tokens scored. The two ways
score the same replies after the same histories
(``tests/benchmarks/test_train.py::test_train__episode_rows_score_each_reply_after_the_same_history_as_turn_rows``);
turn rows also score the newline the template writes after each end-of-turn token. The step
cost follows the tokens (attention over longer rows adds to it). Counts, not timings: they are
the same on any machine. Results go to ``benchmarks/results/sft_episode_rows.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_envs.benchmarks.cli import RESULTS_DIR, parse, write_report

RESULTS = RESULTS_DIR / "sft_episode_rows.md"


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    envs: list[str] = field(
        default_factory=lambda: [
            "grl/Sokoban-v0",
            "grl/Tetris-4x4-cell-v0",
            "grl/Blocksworld-v0",
            "grl/GSM8K-v0",
            "grl/BIRD-v0",
            "grl/WebShop-v0",
        ]
    )
    """the envs whose oracle rows are counted (issue 33's six families)"""
    episodes: int = 100
    """oracle episodes per env (train seeds of ``agent_envs.benchmarks.train``)"""
    rationale: bool = True
    """replies with the oracle's worked reasoning where the env has one (GSM8K), as the
    training runs"""
    output: str = str(RESULTS)
    """where the Markdown table goes ("" to only print it)"""


def _tokens(tokenizer, messages: list[dict[str, str]], prompt_length: int = 0) -> tuple[int, int]:
    """``(length, scored)`` of ``messages`` rendered by the chat template, scoring what follows
    the first ``prompt_length`` tokens."""
    ids = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]
    return len(ids), len(ids) - prompt_length


def count(args: Args, env_id: str, tokenizer) -> dict[str, float]:
    """Rows, tokens, the longest row and scored tokens of both ways for ``env_id``."""
    from agent_envs.benchmarks import train

    seeds = train.train_seeds(env_id, args.episodes)
    turns, _ = train.oracle_sft_rows(env_id, seeds, args.rationale, rows="turn")
    episodes, _ = train.oracle_sft_rows(env_id, seeds, args.rationale, rows="episode")
    turn_lengths, turn_scored = [], 0
    for row in turns:
        prompt = tokenizer.apply_chat_template(
            row["prompt"], tokenize=True, add_generation_prompt=True, return_dict=True
        )["input_ids"]
        length, scored = _tokens(tokenizer, row["prompt"] + row["completion"], len(prompt))
        turn_lengths.append(length)
        turn_scored += scored
    episode_lengths = [_tokens(tokenizer, row["messages"])[0] for row in episodes]
    return {
        "turn_rows": len(turns),
        "turn_tokens": sum(turn_lengths),
        "turn_longest": max(turn_lengths),
        "turn_scored": turn_scored,
        "episode_rows": len(episodes),
        "episode_tokens": sum(episode_lengths),
        "episode_longest": max(episode_lengths),
    }


def report(args: Args, counts: dict[str, dict[str, float]]) -> str:
    lines = [
        "# SFT tokens per epoch: one row per turn against one row per episode",
        "",
        "`agent-envs bench sft-episode-rows` (`agent_envs.benchmarks.sft_episode_rows`): the "
        f"oracle rows of {args.episodes} train seeds per env, tokenized with SmolLM2-135M-"
        "Instruct's chat template, as `agent-envs train --sft-rows turn|episode` trains on "
        "them. Tokens: what one epoch runs through the model; longest: the longest row (it "
        "must fit `--max-total-tokens`, or TRL cuts its end). Both ways score each reply after "
        "the same history; turn rows also score the newline after each end-of-turn token "
        "(scored, turn rows). Counts, not timings.",
        "",
        "| env | turn rows | tokens | longest | scored | episode rows | tokens | longest "
        "| tokens, turn / episode |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for env_id, c in counts.items():
        lines.append(
            f"| `{env_id}` | {c['turn_rows']:,} | {c['turn_tokens']:,} | {c['turn_longest']:,} "
            f"| {c['turn_scored']:,} | {c['episode_rows']:,} | {c['episode_tokens']:,} "
            f"| {c['episode_longest']:,} | {c['turn_tokens'] / c['episode_tokens']:.2f}x |"
        )
    total_turn = sum(c["turn_tokens"] for c in counts.values())
    total_episode = sum(c["episode_tokens"] for c in counts.values())
    lines += [
        "",
        f"All {len(counts)} envs, the same number of episodes each (a multi-env mixture): "
        f"{total_turn:,} tokens per epoch as turn rows, {total_episode:,} as episode rows "
        f"({total_turn / total_episode:.2f}x).",
        "",
        "Episode rows make fewer, longer rows: at the same `--sft-batch-size` an epoch takes "
        "fewer optimizer steps (each over more tokens), so a run that switches may want a "
        "smaller batch or more epochs to take as many steps.",
        "",
    ]
    return "\n".join(lines)


def main(args: Args) -> str:
    from agent_envs.adapters.engines.transformers import load_smollm2

    _, tokenizer = load_smollm2(tokenizer_only=True)
    counts = {}
    for env_id in args.envs:
        counts[env_id] = count(args, env_id, tokenizer)
        print(env_id, counts[env_id], flush=True)
    text = report(args, counts)
    write_report(text, args.output)
    print(text)
    return text


if __name__ == "__main__":
    prog = "agent-envs bench sft-episode-rows"
    main(parse(Args, prog=prog, description=__doc__.split("\n\n")[0]))
