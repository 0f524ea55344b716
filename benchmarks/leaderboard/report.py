"""The leaderboard's reports: a Markdown table and a self-contained HTML page.

Both are pure functions of the manifest and the summary (`agent_envs.benchmarks.leaderboard.stats`), so
the validator can rebuild the tables and compare them with the files. The HTML page inlines
its style and its charts (matplotlib, Agg backend, PNG as ``data:`` URLs) and links only to
the replay files written next to it (``replays/*.html``): it opens offline.

Random and oracle rows are the floor and the ceiling of each env: they are marked in the
tables, and the charts draw their levels as dashed lines across the bars.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Mapping
from typing import Any

from agent_envs.benchmarks.leaderboard.stats import METRICS, PAIRED_METRICS, Z95

__all__ = ["ROLES", "html_report", "html_tables", "markdown_report", "replay_name"]

#: scripted agents and the part they play in the report
ROLES = {"random": "floor", "oracle": "ceiling"}


def replay_name(env_id: str) -> str:
    """The replay file of one env, relative to the report: ``replays/grl_Sokoban-v0.html``."""
    return "replays/" + re.sub(r"[^A-Za-z0-9._-]+", "_", env_id) + ".html"


def _cell(stat: Mapping[str, float], digits: int = 2) -> str:
    return f"{stat['mean']:.{digits}f} ± {stat['se']:.{digits}f}"


def _diff(stat: Mapping[str, float]) -> str:
    return f"{stat['mean']:+.2f} [{stat['low']:+.2f}, {stat['high']:+.2f}]"


def _agent_label(agent: str) -> str:
    role = ROLES.get(agent)
    return f"{agent} ({role})" if role else agent


def _overall_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for agent, entry in summary["overall"].items():
        rows.append(
            [_agent_label(agent), str(entry["envs"]), str(entry["episodes"])]
            + [_cell(entry[metric]) for metric in METRICS]
        )
    return rows


def _env_rows(rows: Mapping[str, Any]) -> list[list[str]]:
    return [
        [_agent_label(agent), str(row["n"])] + [_cell(row[metric]) for metric in METRICS]
        for agent, row in rows.items()
    ]


def _paired_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for pair in summary["paired"]:
        label = f"{pair['b']} − {pair['a']}"
        overall = pair["overall"]
        rows.append(
            [label, "overall", str(overall["success"]["n"])]
            + [_diff(overall[metric]) for metric in PAIRED_METRICS]
        )
        for env_id, diffs in pair["per_env"].items():
            rows.append(
                [label, env_id, str(diffs["success"]["n"])]
                + [_diff(diffs[metric]) for metric in PAIRED_METRICS]
            )
    return rows


_OVERALL_HEAD = ["agent", "envs", "episodes"] + [METRICS[m] for m in METRICS]
_ENV_HEAD = ["agent", "episodes"] + [METRICS[m] for m in METRICS]
_PAIRED_HEAD = ["B − A", "env", "pairs"] + [f"Δ {METRICS[m]} [95% CI]" for m in PAIRED_METRICS]


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1))]
    lines[1] += "|"
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _settings_lines(manifest: Mapping[str, Any]) -> list[str]:
    settings = manifest["settings"]
    lines = []
    for agent in settings["agents"]:
        parts = [f"`{agent['name']}`: {agent['kind']}"]
        if agent.get("max_turns") is not None:
            turns = agent["max_turns"]
            parts.append(f"at most {turns} turn{'s' if turns != 1 else ''} (collector cap)")
        if agent.get("max_new_tokens") is not None and agent["kind"] != "scripted":
            parts.append(f"{agent['max_new_tokens']} new tokens per turn")
        if agent.get("sampling"):
            parts.append("sampling " + ", ".join(f"{k}={v}" for k, v in agent["sampling"].items()))
        envs = agent.get("envs")
        parts.append(f"{len(envs)} envs" if envs is not None else "every env")
        seeds = agent.get("seeds")
        parts.append(f"first {seeds} seeds of each list" if seeds is not None else "every seed")
        lines.append("- " + "; ".join(parts))
    return lines


def markdown_report(manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """The whole Markdown leaderboard (``leaderboard.md``)."""
    settings = manifest["settings"]
    out = [
        f"# Leaderboard: preset `{settings['preset']}`",
        "",
        f"{settings['num_seeds']} seeds per env (the published eval seeds of each id, "
        "`benchmarks.leaderboard.eval_seeds`); mean ± standard error over episodes. "
        "Random is the floor and oracle the ceiling of each env. Overall: the unweighted "
        "mean over the envs an agent ran. Paired rows: B − A on the seeds both ran, "
        f"mean [mean ± {Z95}·SE].",
        "",
        "Agents:",
        "",
        *_settings_lines(manifest),
        "",
        "## Overall",
        "",
        _md_table(_OVERALL_HEAD, _overall_rows(summary)),
        "",
        "## Per env",
    ]
    for env_id, rows in summary["per_env"].items():
        out += ["", f"### {env_id}", "", _md_table(_ENV_HEAD, _env_rows(rows))]
    if summary["paired"]:
        out += ["", "## Paired comparisons", "", _md_table(_PAIRED_HEAD, _paired_rows(summary))]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- HTML
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;padding:20px 28px;color:#1d2330;
background:#f6f7f9;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:16px;margin:22px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff}
th,td{border:1px solid #d5d9e0;padding:3px 9px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#eceff4}
tr.floor td{color:#6b7280}tr.ceiling td{color:#166534}
.env{background:#fff;border:1px solid #d5d9e0;border-radius:8px;padding:4px 16px 10px;
margin:14px 0}.env img{max-width:100%}.note{color:#4b5563}code{background:#eceff4;padding:0 3px}
"""


def _html_table(head: list[str], rows: list[list[str]], roles: list[str] | None = None) -> str:
    parts = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for index, row in enumerate(rows):
        role = roles[index] if roles else ""
        attr = f' class="{role}"' if role else ""
        cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
        parts.append(f"<tr{attr}>{cells}</tr>")
    parts.append("</table>")
    return "\n".join(parts)


def html_tables(summary: Mapping[str, Any]) -> dict[str, str]:
    """The report's HTML tables by name (``overall``, ``env:<id>``, ``paired``); the validator
    checks that each appears verbatim in ``report.html``."""
    tables = {
        "overall": _html_table(
            _OVERALL_HEAD,
            _overall_rows(summary),
            [ROLES.get(agent, "") for agent in summary["overall"]],
        )
    }
    for env_id, rows in summary["per_env"].items():
        tables[f"env:{env_id}"] = _html_table(
            _ENV_HEAD, _env_rows(rows), [ROLES.get(agent, "") for agent in rows]
        )
    if summary["paired"]:
        tables["paired"] = _html_table(_PAIRED_HEAD, _paired_rows(summary))
    return tables


def _chart(env_id: str, rows: Mapping[str, Any]) -> str:
    """A PNG data URL: success rate and mean return per agent, ±1 SE error bars, with the
    random (floor) and oracle (ceiling) levels as dashed lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    agents = list(rows)
    colors = [{"random": "#9ca3af", "oracle": "#16a34a"}.get(agent, "#2563eb") for agent in agents]
    figure, axes = plt.subplots(1, 2, figsize=(7.2, 2.3), dpi=80)
    for axis, metric in zip(axes, ("success", "return"), strict=True):
        means = [rows[agent][metric]["mean"] for agent in agents]
        errors = [rows[agent][metric]["se"] for agent in agents]
        bars = axis.bar(range(len(agents)), means, yerr=errors, color=colors, capsize=3)
        axis.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
        for agent, style in (("random", "#6b7280"), ("oracle", "#15803d")):
            if agent in rows:
                axis.axhline(rows[agent][metric]["mean"], color=style, ls="--", lw=0.8)
        axis.set_xticks(range(len(agents)), agents, fontsize=8)
        axis.set_title(METRICS[metric], fontsize=9)
        axis.tick_params(axis="y", labelsize=7)
        if metric == "success":
            axis.set_ylim(0, 1.05)
        axis.axhline(0, color="#111827", lw=0.5)
    figure.suptitle(env_id, fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def html_report(
    manifest: Mapping[str, Any], summary: Mapping[str, Any], *, replays: Mapping[str, str]
) -> str:
    """The self-contained HTML leaderboard (``report.html``); ``replays`` maps env ids to
    replay files relative to the report."""
    settings = manifest["settings"]
    tables = html_tables(summary)
    esc = html.escape
    env_links = " · ".join(
        f'<a href="#{esc(_anchor(env_id))}">{esc(env_id)}</a>' for env_id in summary["per_env"]
    )
    agent_items = "".join(
        f"<li>{esc(line[2:])}</li>" for line in _settings_lines(manifest)
    ).replace("`", "")
    commit = manifest.get("environment", {}).get("git_commit") or "unknown"
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Leaderboard: {esc(settings['preset'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Leaderboard: preset <code>{esc(settings['preset'])}</code></h1>",
        f'<p class="note">{settings["num_seeds"]} published eval seeds per env; mean ± '
        "standard error over episodes. Random (grey) is the floor and oracle (green) the "
        "ceiling of each env. Overall: unweighted mean over the envs an agent ran. Paired: "
        f"B − A on shared seeds, mean [mean ± {Z95}·SE]. Git commit <code>{esc(commit)}</code>."
        "</p>",
        f"<ul>{agent_items}</ul>",
        "<h2>Overall</h2>",
        tables["overall"],
        f'<p class="note">{env_links}</p>',
        "<h2>Per env</h2>",
    ]
    for env_id, rows in summary["per_env"].items():
        replay = replays.get(env_id)
        link = (
            f'<p><a href="{esc(replay)}">Replay of sample episodes</a> (first seed, every '
            "agent)</p>"
            if replay
            else ""
        )
        body += [
            f'<section class="env" id="{esc(_anchor(env_id))}">',
            f"<h3>{esc(env_id)}</h3>",
            tables[f"env:{env_id}"],
            f'<img alt="{esc(env_id)} chart" src="{_chart(env_id, rows)}">',
            link,
            "</section>",
        ]
    if "paired" in tables:
        body += ["<h2>Paired comparisons</h2>", tables["paired"]]
    body.append("</body></html>")
    return "\n".join(body) + "\n"


def _anchor(env_id: str) -> str:
    return "env-" + re.sub(r"[^A-Za-z0-9_-]+", "-", env_id)
