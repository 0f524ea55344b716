"""Pages and page parts generated at build time (mkdocs-gen-files), never typed by hand.

* In the env family pages, ``<!-- gen:ids FAMILY -->``, ``<!-- gen:observations FAMILY -->``,
  ``<!-- gen:instructions ID -->`` and ``<!-- gen:example ID -->`` are replaced by the registry's
  presets, each id's first observation (``gymnasium.make(id).reset(seed=0)``), the system prompt
  and one turn played by the oracle and one unreadable reply.
* ``results/`` copies every committed result file of ``benchmarks/results/`` (Markdown and
  figures) and builds its index from the run folders' ``summary.json``.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from pathlib import Path

import gymnasium as gym
import mkdocs_gen_files

import agent_envs
from agent_envs.core.policies import OraclePolicy
from agent_envs.registration import PRESETS, VISION_OF

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
MARKER = re.compile(r"<!-- gen:(\w+) ([\w/.-]+) -->")
FAMILIES = {"sokoban": "Sokoban", "tetris": "Tetris", "blocksworld": "Blocksworld",
            "gsm8k": "GSM8K", "bird": "BIRD", "webshop": "WebShop"}  # fmt: skip
BUDGETS = ("max_turns", "max_actions_per_turn", "max_actions_per_episode")
# Built-in data (BIRD's databases, WebShop's search index) goes to a cache of this build.
os.environ.setdefault("AGENT_ENVS_CACHE", tempfile.mkdtemp(prefix="agent-envs-docs-cache-"))


def family(env_id: str) -> str:
    """``grl/Sokoban-8x8-vision-v0`` → ``sokoban`` (the package of its env class)."""
    entry, _, kwargs = PRESETS[env_id]
    entry = kwargs.get("base", entry)
    return entry.split(".")[2]


def ids_of(name: str) -> list[str]:
    return [env_id for env_id in PRESETS if family(env_id) == name]


def fence(text: str, language: str = "text") -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}"


def budgets(env: gym.Env) -> tuple[str, str, str]:
    inner = env.unwrapped
    inner = getattr(inner, "env", inner)  # a vision env wraps its text env
    values = (inner.max_turns, inner.answer_format.max_actions_per_turn,
              inner.max_actions_per_episode)  # fmt: skip
    return tuple("-" if value is None else str(value) for value in values)


def ids_table(name: str) -> str:
    rows = ["| id | settings | turns | actions per turn | actions per episode |",
            "|---|---|---:|---:|---:|"]  # fmt: skip
    for env_id in ids_of(name):
        _, _, kwargs = PRESETS[env_id]
        settings = ", ".join(
            f"`{key}={value!r}`" for key, value in kwargs.items()
            if key not in BUDGETS and key != "base"
        )  # fmt: skip
        if env_id in VISION_OF:
            settings = f"`{VISION_OF[env_id]}` with its frame in every observation"
        env = gym.make(env_id)
        rows.append(f"| `{env_id}` | {settings or '-'} | {' | '.join(budgets(env))} |")
        env.close()
    return "\n".join(rows)


def catalog() -> str:
    """Every registered id, its family page and its budgets."""
    rows = ["| id | family | turns | actions per turn | actions per episode |",
            "|---|---|---:|---:|---:|"]  # fmt: skip
    for env_id in PRESETS:
        name = family(env_id)
        env = gym.make(env_id)
        link = f"[{FAMILIES[name]}]({name}.md)"
        rows.append(f"| `{env_id}` | {link} | {' | '.join(budgets(env))} |")
        env.close()
    return "\n".join(rows)


def observations(name: str, page: str) -> str:
    parts = []
    for env_id in ids_of(name):
        env = gym.make(env_id)
        observation, _ = env.reset(seed=0)
        parts.append(f"### `{env_id}`\n")
        if isinstance(observation, dict):  # an image+text id
            picture = f"img/{env_id.split('/')[1]}.png"
            _write_png(f"{Path(page).parent.as_posix()}/{picture}", observation["image"])
            height, width, _ = observation["image"].shape
            parts.append(f'`observation["text"]`:\n\n{fence(observation["text"])}\n')
            parts.append(f'`observation["image"]`, {width} wide and {height} high:\n')
            parts.append(f"![first observation of {env_id}]({picture}){{ width=240 }}\n")
        else:
            parts.append(fence(observation) + "\n")
        env.close()
    return "\n".join(parts)


def _write_png(path: str, image) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    with mkdocs_gen_files.open(path, "wb") as file:
        file.write(buffer.getvalue())


def instructions(env_id: str) -> str:
    env = gym.make(env_id)
    text = env.unwrapped.instructions
    env.close()
    return fence(text)


def _show(result: tuple) -> str:
    observation, reward, terminated, truncated, info = result
    shown = {key: value for key, value in info.items() if key != "state_hash"}
    return (
        f"{fence(observation)}\n\n"
        f"`reward={reward!r}, terminated={terminated}, truncated={truncated}`, info:\n\n"
        f"{fence(json.dumps(shown, indent=1, default=str), 'json')}"
    )


def example(env_id: str) -> str:
    env = gym.make(env_id)
    observation, _ = env.reset(seed=0)
    reply = OraclePolicy()(env.unwrapped, observation)
    played = _show(env.step(reply))
    env.reset(seed=0)
    unreadable = "I would move the box to the left."
    garbage = _show(env.step(unreadable))
    env.close()
    return (
        f"The oracle's first reply on `{env_id}` at `seed=0`:\n\n{fence(reply)}\n\n"
        f"what `env.step(reply)` returns:\n\n{played}\n\n"
        f"A reply without a readable answer, `{unreadable!r}`, executes nothing:\n\n{garbage}"
    )


def expand(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")

    def replace(match: re.Match) -> str:
        kind, argument = match.groups()
        if kind == "ids":
            return ids_table(argument)
        if kind == "catalog":
            return catalog()
        if kind == "observations":
            return observations(argument, page)
        if kind == "instructions":
            return instructions(argument)
        if kind == "example":
            return example(argument)
        raise ValueError(f"{page}: unknown generated part {kind!r}")

    with mkdocs_gen_files.open(page, "w") as file:
        file.write(MARKER.sub(replace, text))


# ---- results -------------------------------------------------------------------------------


def success_cell(stat: dict) -> str:
    """A success rate and its 95% Wilson interval, as the run's summary holds them (older
    summaries without the interval: the rate alone)."""
    if stat.get("low") is None:
        return f"{stat['mean']:.2f}"
    return f"{stat['mean']:.2f} [{stat['low']:.2f}, {stat['high']:.2f}]"


def summary_table(summary: dict) -> str:
    """Success (with its Wilson interval) and mean return of every agent on every env of a
    run."""
    per_env = summary["per_env"]
    agents = sorted({agent for results in per_env.values() for agent in results},
                    key=lambda a: (a not in ("random", "oracle"), a))  # fmt: skip
    wide = len(agents) > 3  # many agents: success only, so the table fits a page
    columns = ["success"] if wide else ["success", "return"]
    head = "| env | " + " | ".join(f"{agent} {column}" for agent in agents for column in columns)
    rows = [head + " |", "|---|" + "---:|" * len(agents) * len(columns)]
    for env_id in sorted(per_env):
        cells = []
        for agent in agents:
            result = per_env[env_id].get(agent)
            if result is None:
                cells += [""] * len(columns)
                continue
            cells.append(success_cell(result["success"]))
            if not wide:
                cells.append(f"{result['return']['mean']:.2f}")
        n = max(r.get("n", len(r.get("seeds", []))) for r in per_env[env_id].values())
        rows.append(f"| `{env_id}` (n={n}) | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _site_path(path: Path) -> str:
    return "results/" + path.relative_to(RESULTS).as_posix()


def results() -> None:
    for path in sorted(RESULTS.rglob("*")):
        if path.suffix in (".md", ".png") and ".peers" not in path.parts:
            with mkdocs_gen_files.open(_site_path(path), "wb") as file:
                file.write(path.read_bytes())
    lines = [
        "# Results",
        "",
        "Generated at build time from the committed result files in `benchmarks/results/`",
        "(nothing here is typed by hand). Every run folder holds its episodes",
        "(`episodes.jsonl.gz`), `manifest.json`, `summary.json` and a report;",
        "`agent-envs leaderboard --validate FOLDER` replays every episode and recomputes",
        "every number. Cells are the success rate over the n published eval seeds with its",
        "95% Wilson interval, and the mean return (on the env's own scale).",
        "",
    ]
    summaries = sorted(RESULTS.rglob("summary.json"))
    runs = [path for path in summaries if "per_env" in json.loads(path.read_text())]
    # the main leaderboard first, then by depth: the headline runs before their variations
    runs.sort(key=lambda path: (path.parent != RESULTS / "leaderboard", len(path.parts), path))
    for path in runs:
        folder = path.parent
        relative = folder.relative_to(RESULTS.parent.parent).as_posix()
        report = folder / "leaderboard.md"
        lines += [f"## `{relative}/`", ""]
        log = _log_for(folder)
        if log is not None:
            lines += [f"Notes: [{log.relative_to(RESULTS).as_posix()}]({_link(log)})", ""]
        if report.exists():
            lines += [f"Full report: [leaderboard.md]({_link(report)})", ""]
        lines += [summary_table(json.loads(path.read_text())), ""]
        for figure in sorted(folder.parent.glob("curve_*.png")) if log else []:
            lines += [f"![{figure.stem}]({_link(figure)})", ""]
    lines += ["## Benchmark reports", "",
              "Each written by `agent-envs bench NAME` (the file's own header names the command):",
              ""]  # fmt: skip
    for path in sorted(RESULTS.glob("*.md")):
        title = _title(path)
        lines.append(f"- [{path.name}]({_link(path)}): {title}")
    lines += ["", "## Experiment logs", ""]
    for path in sorted(RESULTS.rglob("*.md")):
        if path.parent != RESULTS and path.name in ("README.md", "training.md"):
            lines.append(f"- [{path.relative_to(RESULTS).as_posix()}]({_link(path)}): "
                         f"{_title(path)}")  # fmt: skip
    with mkdocs_gen_files.open("results/index.md", "w") as file:
        file.write("\n".join(lines) + "\n")


def _link(path: Path) -> str:
    return path.relative_to(RESULTS).as_posix()


def _log_for(folder: Path) -> Path | None:
    for candidate in (folder.parent / "README.md", folder.parent / "training.md"):
        if folder.name == "leaderboard" and candidate.exists():
            return candidate
    return None


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return path.stem


assert agent_envs.PRESETS  # registered
for page in sorted(DOCS.rglob("*.md")):
    if MARKER.search(page.read_text(encoding="utf-8")):
        expand(page.relative_to(DOCS).as_posix())
results()
