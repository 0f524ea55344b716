"""The leaderboard's reports: a Markdown page and a self-contained HTML page.

Both are pure functions of the manifest and the summary (`agent_envs.benchmarks.leaderboard.stats`),
so the validator can rebuild the tables and compare them with the files. Numbers are written
for people: two decimals, no ``-0.00``, intervals as ``0.35 [0.18, 0.57]``, a dash where a
number does not exist.

The HTML page opens with one overview figure (every agent's random-normalized score on every
env, with 95% intervals, under the overall mean and IQM), then the overall table and the
paired comparisons, then one section per env (its table, a chart of success and return, a
link to its replay). It inlines its style and its charts (matplotlib, Agg backend, PNG as
``data:`` URLs) and links only to the replay files written next to it (``replays/*.html``):
it opens offline. Without matplotlib (a core install, no ``[render]`` extra) the tables are
written and the charts are skipped with a note.

Random and oracle rows are the floor and the ceiling of each env (normalized 0 and 1): they
are marked in the tables and drawn as dashed lines in the charts. An agent capped by
``--model-max-turns`` is labelled ``capped at K turns`` everywhere, and the header says so.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_envs.benchmarks.leaderboard.stats import BOOTSTRAP_REPS, BOOTSTRAP_SEED, CONFIDENCE

__all__ = [
    "ROLES",
    "agent_label",
    "charts_available",
    "html_report",
    "html_tables",
    "markdown_report",
    "number",
    "replay_name",
]

#: scripted agents and the part they play in the report
ROLES = {"random": "floor", "oracle": "ceiling"}
_DASH = "—"
_PERCENT = f"{CONFIDENCE:.0%}"
_NO_CHARTS = (
    "Charts skipped: matplotlib is not installed (it comes with the render extra: "
    "pip install 'agent-envs[render]')."
)


#: marks an overall interval taken from the per-env closed forms (the bootstrap had no spread)
_CLOSED_FORM = " †"
_NO_OVERVIEW = (
    "No overview figure: no env has a normalized score (it needs the random and oracle rows)."
)


def replay_name(env_id: str) -> str:
    """The replay file of one env, relative to the report: ``replays/grl_Sokoban-v0.html``."""
    return "replays/" + re.sub(r"[^A-Za-z0-9._-]+", "_", env_id) + ".html"


def charts_available() -> bool:
    """Whether matplotlib is installed (the ``[render]`` extra), so charts can be drawn."""
    return importlib.util.find_spec("matplotlib") is not None


# --------------------------------------------------------------------------- numbers
def number(value: float | None, digits: int = 2, *, signed: bool = False) -> str:
    """``value`` to ``digits`` decimals for people: no ``-0.00``, a dash for ``None``."""
    if value is None:
        return _DASH
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    if not text.strip("+-0."):  # -0.00 and +0.00 read as 0.00
        return f"{0:.{digits}f}"
    return text


def _ci(stat: Mapping[str, Any] | None, *, signed: bool = False) -> str:
    """``mean [low, high]``; the mean alone when there is no interval."""
    if stat is None:
        return _DASH
    mean = number(stat["mean"], signed=signed)
    if stat.get("low") is None:
        return mean
    low, high = number(stat["low"], signed=signed), number(stat["high"], signed=signed)
    mark = _CLOSED_FORM if stat.get("method") in ("wilson", "newcombe") else ""
    return f"{mean} [{low}, {high}]{mark}"


def _pm(stat: Mapping[str, float], n: int) -> str:
    """``mean ± SE``; the mean alone for one episode (no standard error to give)."""
    if n < 2:
        return number(stat["mean"])
    return f"{number(stat['mean'])} ± {number(stat['se'])}"


def _turns(count: int) -> str:
    return f"{count} turn{'' if count == 1 else 's'}"


def agent_label(agent: str, capped: int | None = None) -> str:
    """``random (floor)``, ``oracle (ceiling)``, ``smollm2 (capped at 1 turn)``."""
    role = ROLES.get(agent)
    if capped is not None:
        return f"{agent} (capped at {_turns(capped)})"
    return f"{agent} ({role})" if role else agent


def _caps(summary: Mapping[str, Any]) -> dict[str, int | None]:
    return {agent: entry.get("capped") for agent, entry in summary["overall"].items()}


# --------------------------------------------------------------------------- tables
_OVERALL_HEAD = [
    "rank",
    "agent",
    "envs",
    "episodes",
    f"normalized score, mean [{_PERCENT} CI]",
    f"normalized score, IQM [{_PERCENT} CI]",
    "mean success rate",
]
_ENV_HEAD = [
    "agent",
    "episodes",
    f"success rate [{_PERCENT} CI]",
    f"normalized [{_PERCENT} CI]",
    "mean return",
    "mean turns",
    "action validity",
]
_PAIRED_OVERALL_HEAD = [
    "B − A",
    "envs",
    "pairs",
    "won / lost / tied",
    f"Δ normalized score [{_PERCENT} CI]",
]
_PAIRED_HEAD = [
    "B − A",
    "env",
    "pairs",
    "won / lost / tied",
    f"Δ success rate [{_PERCENT} CI]",
    f"Δ mean return [{_PERCENT} CI]",
]


def _overall_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for agent, entry in summary["overall"].items():
        normalized = entry["normalized"]
        envs = str(entry["envs"])
        if normalized is not None and normalized["envs"] != entry["envs"]:
            envs += f" ({normalized['envs']} normalized)"
        rows.append([
            str(entry["rank"]) if entry["rank"] is not None else _DASH,
            agent_label(agent, entry["capped"]),
            envs,
            str(entry["episodes"]),
            _ci(normalized["mean"]) if normalized else _DASH,
            _ci(normalized["iqm"]) if normalized else _DASH,
            number(entry["success"]),
        ])  # fmt: skip
    return rows


def _env_rows(rows: Mapping[str, Any], caps: Mapping[str, int | None]) -> list[list[str]]:
    return [
        [
            agent_label(agent, caps.get(agent)),
            str(row["n"]),
            _ci(row["success"]),
            _ci(row["normalized"]),
            _pm(row["return"], row["n"]),
            _pm(row["turns"], row["n"]),
            _pm(row["validity"], row["n"]),
        ]
        for agent, row in rows.items()
    ]


def _counts(stat: Mapping[str, int]) -> str:
    return f"{stat['won']} / {stat['lost']} / {stat['tied']}"


def _pair_label(pair: Mapping[str, Any], caps: Mapping[str, int | None]) -> str:
    return f"{agent_label(pair['b'], caps.get(pair['b']))} − {agent_label(pair['a'], caps.get(pair['a']))}"  # noqa: E501


def _paired_overall_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    caps = _caps(summary)
    return [
        [
            _pair_label(pair, caps),
            str(pair["overall"]["envs"]),
            str(pair["overall"]["n"]),
            _counts(pair["overall"]),
            _ci(pair["overall"]["normalized"], signed=True),
        ]
        for pair in summary["paired"]
    ]


def _paired_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    caps = _caps(summary)
    rows = []
    for pair in summary["paired"]:
        for env_id, diffs in pair["per_env"].items():
            rows.append([
                _pair_label(pair, caps),
                env_id,
                str(diffs["success"]["n"]),
                _counts(diffs["success"]),
                _ci(diffs["success"], signed=True),
                _ci(diffs["return"], signed=True),
            ])  # fmt: skip
    return rows


def _scale_line(scale: Mapping[str, Any]) -> str:
    if not scale["defined"]:
        return f"No normalized score on this env: {scale['note']}."
    return (
        f"Normalized score = (success rate − {number(scale['floor'])}) / "
        f"({number(scale['ceiling'])} − {number(scale['floor'])}): random's rate is 0, "
        "oracle's is 1."
    )


# --------------------------------------------------------------------------- header
def _sampling(sampling: Mapping[str, Any] | None) -> str | None:
    if not sampling:
        return None
    temperature = float(sampling.get("temperature", 1.0))
    if temperature == 0:
        return "greedy decoding"
    parts = [f"temperature {temperature:g}"]
    if float(sampling.get("top_p", 1.0)) != 1.0:
        parts.append(f"top-p {float(sampling['top_p']):g}")
    return "sampled at " + ", ".join(parts)


def _settings_lines(manifest: Mapping[str, Any]) -> list[str]:
    settings = manifest["settings"]
    lines = []
    for agent in settings["agents"]:
        scripted = agent["kind"] == "scripted"
        parts = [f"`{agent['name']}`: " + ("scripted" if scripted else f"{agent['kind']} model")]
        if agent.get("target") and agent["target"] != agent["name"]:
            parts[0] += f" `{agent['target']}`"
        cap = agent.get("max_turns")
        parts.append(
            f"**capped at {_turns(cap)}** (`--model-max-turns {cap}`)"
            if cap is not None
            else "each env's own turn budget"
        )
        if agent.get("max_new_tokens") is not None and not scripted:
            parts.append(f"at most {agent['max_new_tokens']} new tokens per turn")
        if (sampling := _sampling(agent.get("sampling"))) is not None:
            parts.append(sampling)
        envs = agent.get("envs")
        parts.append(
            f"{len(envs)} env{'' if len(envs) == 1 else 's'} ({', '.join(envs)})"
            if envs is not None
            else "every env"
        )
        seeds = agent.get("seeds")
        parts.append(
            f"the first {seeds} seeds of each"
            if seeds is not None and seeds < settings["num_seeds"]
            else "every seed"
        )
        lines.append("- " + "; ".join(parts))
    return lines


def _budget_sentences(manifest: Mapping[str, Any]) -> list[str]:
    """What the header says about turn caps and about model rows that play less."""
    settings = manifest["settings"]
    capped = [agent for agent in settings["agents"] if agent.get("max_turns") is not None]
    if capped:
        named = ", ".join(f"`{a['name']}` at {_turns(a['max_turns'])}" for a in capped)
        sentences = [
            f"**Turn cap:** {named} (`--model-max-turns`): its episodes are cut short, so it "
            "is marked, not ranked, and compared only with agents of the same cap; every "
            "other agent plays each env's own turn budget."
        ]
    else:
        sentences = ["Every agent plays each env's own turn budget."]
    fewer = [
        agent
        for agent in settings["agents"]
        if agent["kind"] != "scripted"
        and (
            (agent.get("seeds") is not None and agent["seeds"] < settings["num_seeds"])
            or (agent.get("envs") is not None and len(agent["envs"]) < len(settings["envs"]))
        )
    ]
    if fewer:
        parts = []
        for agent in fewer:
            seeds = min(agent.get("seeds") or settings["num_seeds"], settings["num_seeds"])
            envs = len(agent["envs"]) if agent.get("envs") is not None else len(settings["envs"])
            parts.append(f"`{agent['name']}` the first {seeds} seeds of {envs} envs")
        sentences.append(
            "To keep the run short, model rows play fewer seeds and envs (never shorter "
            f"episodes): {'; '.join(parts)}. Paired comparisons use the seeds both agents played."
        )
    return sentences


def _method_sentence() -> str:
    return (
        f"Success rates with {_PERCENT} Wilson intervals; normalized score per env = "
        "(success rate − random's) / (oracle's − random's), so random scores 0 and oracle 1 "
        "(the Wilson interval mapped the same way). Overall: mean and interquartile mean (IQM) "
        "of the normalized scores over the envs an agent played, with stratified-bootstrap "
        f"{_PERCENT} intervals ({BOOTSTRAP_REPS:,} replicates, seed {BOOTSTRAP_SEED}); ranked "
        "by the mean. Return, turns and validity: mean ± standard error. Paired: B − A on the "
        "seeds both played, success by Newcombe's paired score interval, return by a "
        "percentile bootstrap (no interval where every difference is the same); won / lost / "
        "tied count the seeds B solved and A did not, the reverse, and the rest."
        f"{_CLOSED_FORM}: the bootstrap had no spread (every episode, or every pair, ended "
        "alike on each env): the interval averages the envs' Wilson (paired: Newcombe) limits."
    )


# --------------------------------------------------------------------------- Markdown
def _md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1))]
    lines[1] += "|"
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_report(manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """The whole Markdown leaderboard (``leaderboard.md``)."""
    settings = manifest["settings"]
    caps = _caps(summary)
    out = [
        f"# Leaderboard: preset `{settings['preset']}`",
        "",
        f"{settings['num_seeds']} published eval seeds per env "
        "(`agent_envs.benchmarks.leaderboard.eval_seeds`). "
        + " ".join(_budget_sentences(manifest)),
        "",
        _method_sentence(),
        "",
        "Agents:",
        "",
        *_settings_lines(manifest),
        "",
        "## Overall",
        "",
        _md_table(_OVERALL_HEAD, _overall_rows(summary)),
    ]
    if summary["paired"]:
        out += [
            "",
            "## Paired comparisons, overall",
            "",
            _md_table(_PAIRED_OVERALL_HEAD, _paired_overall_rows(summary)),
        ]
    out += ["", "## Per env"]
    for env_id, rows in summary["per_env"].items():
        out += [
            "",
            f"### {env_id}",
            "",
            _scale_line(summary["normalization"][env_id]),
            "",
            _md_table(_ENV_HEAD, _env_rows(rows, caps)),
        ]
    if summary["paired"]:
        out += ["", "## Paired comparisons, per env", "",
                _md_table(_PAIRED_HEAD, _paired_rows(summary))]  # fmt: skip
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- HTML
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;padding:20px 28px;color:#1d2330;
background:#f6f7f9;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:16px;margin:22px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff}
th,td{border:1px solid #d5d9e0;padding:3px 9px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#eceff4}
tr.floor td{color:#6b7280}tr.ceiling td{color:#166534}tr.capped td{color:#9a3412}
.env{background:#fff;border:1px solid #d5d9e0;border-radius:8px;padding:4px 16px 10px;
margin:14px 0}img{max-width:100%}.note{color:#4b5563}code{background:#eceff4;padding:0 3px}
.cap{background:#fff7ed;border:1px solid #fdba74;border-radius:6px;padding:6px 10px}
"""


def _html_table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    parts = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for index, row in enumerate(rows):
        css = classes[index] if classes else ""
        attr = f' class="{css}"' if css else ""
        cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
        parts.append(f"<tr{attr}>{cells}</tr>")
    parts.append("</table>")
    return "\n".join(parts)


def _row_class(agent: str, caps: Mapping[str, int | None]) -> str:
    return "capped" if caps.get(agent) is not None else ROLES.get(agent, "")


def html_tables(summary: Mapping[str, Any]) -> dict[str, str]:
    """The report's HTML tables by name (``overall``, ``paired-overall``, ``env:<id>``,
    ``paired``); the validator checks that each appears verbatim in ``report.html``."""
    caps = _caps(summary)
    tables = {
        "overall": _html_table(
            _OVERALL_HEAD,
            _overall_rows(summary),
            [_row_class(agent, caps) for agent in summary["overall"]],
        )
    }
    if summary["paired"]:
        tables["paired-overall"] = _html_table(_PAIRED_OVERALL_HEAD, _paired_overall_rows(summary))
    for env_id, rows in summary["per_env"].items():
        tables[f"env:{env_id}"] = _html_table(
            _ENV_HEAD, _env_rows(rows, caps), [_row_class(agent, caps) for agent in rows]
        )
    if summary["paired"]:
        tables["paired"] = _html_table(_PAIRED_HEAD, _paired_rows(summary))
    return tables


_COLORS = {"random": "#6b7280", "oracle": "#16a34a"}
_PALETTE = ["#2563eb", "#dc2626", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
            "#4d7c0f", "#7c3aed", "#0f766e", "#b91c1c", "#1d4ed8"]  # fmt: skip


def _colors(agents: Sequence[str]) -> dict[str, str]:
    others = [agent for agent in agents if agent not in _COLORS]
    colors = {agent: _PALETTE[index % len(_PALETTE)] for index, agent in enumerate(others)}
    return {agent: _COLORS.get(agent) or colors[agent] for agent in agents}


def _png(figure: Any) -> str:
    from matplotlib import pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def overview_chart(summary: Mapping[str, Any]) -> str | None:
    """A PNG data URL: agents x envs, each agent's normalized score per env with its 95%
    interval, under the overall mean and IQM (bootstrap intervals); random at 0 and oracle at
    1 drawn as dashed lines; capped agents hollow. ``None`` when no env has a normalized
    score (the run has no random or no oracle row)."""
    if not any(entry["normalized"] for entry in summary["overall"].values()):
        return None
    plt = _pyplot()
    agents = list(summary["overall"])
    caps = _caps(summary)
    colors = _colors(agents)
    labels = ["mean over envs", "IQM over envs", *summary["per_env"]]
    band = 0.8 / max(1, len(agents))
    height = 1.4 + len(labels) * max(0.3, 0.11 * len(agents))
    figure, axis = plt.subplots(figsize=(8.4, height), dpi=80)
    values: list[float] = [0.0, 1.0]
    for index, agent in enumerate(agents):
        points = []
        entry = summary["overall"][agent]["normalized"]
        if entry is not None:
            points += [(0, entry["mean"]), (1, entry["iqm"])]
        for row, env_id in enumerate(summary["per_env"], 2):
            stat = summary["per_env"][env_id].get(agent, {}).get("normalized")
            if stat is not None:
                points.append((row, stat))
        if not points:
            continue
        ys = [row + (index - (len(agents) - 1) / 2) * band for row, _ in points]
        means = [stat["mean"] for _, stat in points]
        # an interval need not hold its point (the † ones average the envs' limits): a bar is
        # drawn only on the sides where the interval extends beyond the point
        errors = [
            [max(0.0, stat["mean"] - stat["low"]) for _, stat in points],
            [max(0.0, stat["high"] - stat["mean"]) for _, stat in points],
        ]
        values += [stat["low"] for _, stat in points] + [stat["high"] for _, stat in points]
        hollow = caps.get(agent) is not None
        axis.errorbar(
            means, ys, xerr=errors, fmt="o", ms=4.5, capsize=2, lw=1, color=colors[agent],
            mfc="white" if hollow else colors[agent], label=agent_label(agent, caps.get(agent)),
        )  # fmt: skip
    for row, env_id in enumerate(summary["per_env"], 2):
        scale = summary["normalization"][env_id]
        if not scale["defined"]:
            axis.text(0.5, row, f"not normalized: {scale['note']}", fontsize=7, va="center",
                      ha="center", color="#6b7280")  # fmt: skip
    axis.axvline(0, color=_COLORS["random"], ls="--", lw=0.8)
    axis.axvline(1, color=_COLORS["oracle"], ls="--", lw=0.8)
    axis.axhline(1.5, color="#111827", lw=0.6)
    axis.set_yticks(range(len(labels)), labels, fontsize=8)
    axis.set_ylim(len(labels) - 0.5, -0.5)
    axis.set_xlim(min(-0.1, min(values) - 0.05), max(1.1, max(values) + 0.05))
    axis.tick_params(axis="x", labelsize=8)
    axis.set_xlabel("random-normalized success (random 0, oracle 1), 95% intervals", fontsize=8)
    axis.grid(axis="x", alpha=0.3)
    axis.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(4, len(agents)),
                frameon=False)  # fmt: skip
    figure.tight_layout()
    return _png(figure)


def env_chart(env_id: str, rows: Mapping[str, Any]) -> str:
    """A PNG data URL: success rate (95% Wilson intervals) and mean return (±1 SE) per agent,
    with the random (floor) and oracle (ceiling) levels as dashed lines."""
    plt = _pyplot()
    agents = list(rows)
    colors = _colors(agents)
    crowded = len(agents) > 4  # slanted names, no value labels
    figure, axes = plt.subplots(1, 2, figsize=(7.2, 3.2 if crowded else 2.3), dpi=80)
    for axis, metric in zip(axes, ("success", "return"), strict=True):
        means = [rows[agent][metric]["mean"] for agent in agents]
        if metric == "success":
            success = [rows[agent]["success"] for agent in agents]
            errors = [
                [stat["mean"] - stat["low"] for stat in success],
                [stat["high"] - stat["mean"] for stat in success],
            ]
        else:
            errors = [rows[agent][metric]["se"] for agent in agents]
        bars = axis.bar(range(len(agents)), means, yerr=errors,
                        color=[colors[a] for a in agents], capsize=3)  # fmt: skip
        if not crowded:
            axis.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
        for agent in ("random", "oracle"):
            if agent in rows:
                axis.axhline(rows[agent][metric]["mean"], color=_COLORS[agent], ls="--", lw=0.8)
        if crowded:
            axis.set_xticks(range(len(agents)), agents, fontsize=7, rotation=35, ha="right")
        else:
            axis.set_xticks(range(len(agents)), agents, fontsize=8)
        axis.set_title(
            "success rate (95% Wilson)" if metric == "success" else "mean return (± SE)",
            fontsize=9,
        )
        axis.tick_params(axis="y", labelsize=7)
        if metric == "success":
            axis.set_ylim(0, 1.12)
        axis.axhline(0, color="#111827", lw=0.5)
    figure.suptitle(env_id, fontsize=9)
    figure.tight_layout()
    return _png(figure)


def html_report(
    manifest: Mapping[str, Any], summary: Mapping[str, Any], *, replays: Mapping[str, str]
) -> str:
    """The self-contained HTML leaderboard (``report.html``); ``replays`` maps env ids to
    replay files relative to the report."""
    settings = manifest["settings"]
    tables = html_tables(summary)
    esc = html.escape
    charts = charts_available()

    def code(text: str) -> str:  # `x` → <code>x</code>, **x** → <strong>x</strong>
        text = re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(text))
        return re.sub(r"\*\*([^*]*)\*\*", r"<strong>\1</strong>", text)

    env_links = " · ".join(
        f'<a href="#{esc(_anchor(env_id))}">{esc(env_id)}</a>' for env_id in summary["per_env"]
    )
    agent_items = "".join(f"<li>{code(line[2:])}</li>" for line in _settings_lines(manifest))
    commit = manifest.get("environment", {}).get("git_commit") or "unknown"
    budget = _budget_sentences(manifest)
    capped = any(agent.get("max_turns") is not None for agent in settings["agents"])
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Leaderboard: {esc(settings['preset'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Leaderboard: preset <code>{esc(settings['preset'])}</code></h1>",
    ]
    if capped:
        body.append(f'<p class="cap">{code(budget[0])}</p>')
    sentences = [f"{settings['num_seeds']} published eval seeds per env."]
    sentences += [code(sentence) for sentence in (budget[1:] if capped else budget)]
    sentences.append(f"Git commit <code>{esc(commit)}</code>.")
    body.append(f'<p class="note">{" ".join(sentences)}</p>')
    overview = overview_chart(summary) if charts else None
    if overview is not None:
        body.append(f'<img alt="overview: normalized score per agent and env" src="{overview}">')
    elif charts:
        body.append(f'<p class="note">{esc(_NO_OVERVIEW)}</p>')
    else:
        body.append(f'<p class="note">{esc(_NO_CHARTS)}</p>')
    body += [
        f'<p class="note">{code(_method_sentence())}</p>',
        "<h2>Overall</h2>",
        tables["overall"],
        f"<ul>{agent_items}</ul>",
    ]
    if "paired-overall" in tables:
        body += ["<h2>Paired comparisons, overall</h2>", tables["paired-overall"]]
    body += ["<h2>Per env</h2>", f'<p class="note">{env_links}</p>']
    for env_id, rows in summary["per_env"].items():
        replay = replays.get(env_id)
        link = (
            f'<p><a href="{esc(replay)}">Replay of sample episodes</a> (first seed, every '
            "agent)</p>"
            if replay
            else ""
        )
        chart = f'<img alt="{esc(env_id)} chart" src="{env_chart(env_id, rows)}">' if charts else ""
        body += [
            f'<section class="env" id="{esc(_anchor(env_id))}">',
            f"<h3>{esc(env_id)}</h3>",
            f'<p class="note">{esc(_scale_line(summary["normalization"][env_id]))}</p>',
            tables[f"env:{env_id}"],
            chart,
            link,
            "</section>",
        ]
    if "paired" in tables:
        body += ["<h2>Paired comparisons, per env</h2>", tables["paired"]]
    body.append("</body></html>")
    return "\n".join(part for part in body if part) + "\n"


def _anchor(env_id: str) -> str:
    return "env-" + re.sub(r"[^A-Za-z0-9_-]+", "-", env_id)
