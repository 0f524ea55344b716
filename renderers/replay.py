"""HTML replays: one self-contained file per trajectory or per batch of trajectories.

Every episode becomes an ``<article class="episode">`` with a summary line and one
``<section class="turn">`` per turn (observation, reply, parsed actions, reward, and the
frame as an inline ``data:image/png;base64`` image when the turn has one). A few lines of
inline script step through the turns (buttons, slider, arrow keys, play); without script
every turn is shown. No network assets: styles, script and images are all inside the file.

**Pictures on every turn.** Records that carry no frames (leaderboard runs, collector
``Trajectory`` records) get them from ``frames=``: per episode, one frame per turn (the state
the model saw) plus the final state, as `agent_envs.renderers.episodes.replay_frames` returns
them after playing the recorded replies again on the episode's env; or pass episodes made by
`agent_envs.renderers.episodes.with_replayed_frames`. Vision observations
``{"text", "image"}`` show their text and their image.

**For people.** Values are formatted by `agent_envs.renderers.display` (``yes``/``no``,
``—`` for nothing, ``-2.3`` rather than ``-2.3000000000000003``); every text from a record is
escaped, lone surrogates and control characters are written as escapes, and long texts
(megabyte replies) are cut for display, so no reply makes a page fail.

**BIRD** (env ids ``grl/BIRD...``): each episode leads with the question, the evidence and
the SQL of every turn (EXECUTE or SUBMIT), with the schema folded in a closed ``<details>``;
each turn shows its SQL, then its result, then the reply.

Command line (inputs in any shape of `agent_envs.renderers.episodes`)::

    python -m agent_envs.renderers.replay runs/leaderboard/episodes.jsonl -o replay.html
    python -m agent_envs.renderers.replay episodes.jsonl -o replay.html --limit 20 \
        --env grl/Sokoban-v0
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.renderers.display import DISPLAY_LIMIT, format_reward, safe_text, summary_items
from agent_envs.renderers.episodes import Episode, Turn, as_episode, attach_frames, load_episodes
from agent_envs.renderers.frames import GridFrame, TextFrame
from agent_envs.renderers.raster import draw

from agent_envs.optional import require

__all__ = ["is_bird", "main", "png_data_url", "replay_html", "write_replay"]

_STYLE = """
body{background:#20232b;color:#e8eaee;font:14px/1.45 system-ui,sans-serif;margin:0;padding:16px}
h1{font-size:20px;margin:0 0 12px}
article{background:#2a2e38;border-radius:8px;padding:12px 16px;margin:0 0 20px}
article h2{font-size:16px;margin:0 0 4px}
.summary{color:#a0a6b2;margin:0 0 8px}
.controls{display:flex;gap:8px;align-items:center;margin:8px 0}
.controls button{background:#3a4050;color:#e8eaee;border:0;border-radius:4px;padding:4px 10px}
.controls input{flex:1;max-width:420px}
.turn{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap;padding:8px 0}
.turn img{border-radius:6px;max-width:100%}
.text{flex:1;min-width:320px}
.label{color:#f5be50;font-weight:600;margin:6px 0 2px}
pre{background:#1a1d24;border-radius:4px;padding:8px;margin:0;white-space:pre-wrap;
word-break:break-word;font:13px/1.35 ui-monospace,DejaVu Sans Mono,monospace}
.reward{font-variant-numeric:tabular-nums}
.summary .item{margin-right:18px}
.summary b{color:#c8ccd4;font-weight:600}
.task{border-left:3px solid #f5be50;padding:0 0 4px 12px;margin:8px 0 12px}
pre.question{font:15px/1.45 system-ui,sans-serif;color:#fff}
pre.sql{color:#9fd8ff}
ol.sql{margin:4px 0;padding-left:24px}
ol.sql li{margin:0 0 6px}
ol.sql .kind{color:#a0a6b2;font-size:12px;letter-spacing:.04em}
details.schema{margin:8px 0 0}
details.schema summary{cursor:pointer;color:#a0a6b2}
.note{color:#a0a6b2;margin:6px 0 0}
"""

_SCRIPT = """
document.querySelectorAll('article.episode').forEach(function (episode) {
  var turns = episode.querySelectorAll('section.turn');
  var slider = episode.querySelector('input[type=range]');
  var where = episode.querySelector('.where');
  var timer = null;
  if (!turns.length) { return; }
  function show(index) {
    index = Math.max(0, Math.min(turns.length - 1, index));
    turns.forEach(function (turn, i) { turn.style.display = i === index ? 'flex' : 'none'; });
    slider.value = index;
    where.textContent = turns[index].dataset.label;
  }
  function current() { return Number(slider.value); }
  episode.querySelector('.prev').onclick = function () { show(current() - 1); };
  episode.querySelector('.next').onclick = function () { show(current() + 1); };
  slider.oninput = function () { show(current()); };
  episode.querySelector('.play').onclick = function (event) {
    if (timer) { clearInterval(timer); timer = null; event.target.textContent = 'Play'; return; }
    event.target.textContent = 'Pause';
    timer = setInterval(function () {
      if (current() >= turns.length - 1) { show(0); } else { show(current() + 1); }
    }, 1000);
  };
  episode.tabIndex = 0;
  episode.onkeydown = function (event) {
    if (event.key === 'ArrowLeft') { show(current() - 1); }
    if (event.key === 'ArrowRight') { show(current() + 1); }
  };
  show(0);
});
"""


def png_data_url(image: np.ndarray, *, compact: bool = False) -> str:
    """An ``(H, W, 3)`` uint8 image as a ``data:image/png;base64,...`` URL; ``compact``
    stores it with a 256-colour palette (about a third of the bytes; exact for flat art)."""
    image_module = require("PIL.Image", "render")
    buffer = io.BytesIO()
    picture = image_module.fromarray(np.asarray(image, dtype=np.uint8))
    if compact:
        picture = picture.quantize(256, dither=image_module.Dither.NONE)
    picture.save(buffer, format="PNG", optimize=compact)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _frame_url(turn: Turn) -> str | None:
    frame = turn.frame
    if frame is None:
        return None
    if isinstance(frame, (GridFrame, TextFrame)):
        frame = draw(frame)
    return png_data_url(np.asarray(frame, dtype=np.uint8), compact=True)


def _esc(value: Any, limit: int = DISPLAY_LIMIT) -> str:
    """Any value as HTML text: :func:`safe_text` (surrogates escaped, cut), then escaped."""
    return html.escape(safe_text(value, limit))


def _label(text: str) -> str:
    return f'<div class="label">{_esc(text)}</div>'


def _pre(label: str, text: Any, *, limit: int = DISPLAY_LIMIT, kind: str = "") -> str:
    css = f' class="{kind}"' if kind else ""
    return f"{_label(label)}<pre{css}>{_esc(text, limit)}</pre>"


def _image(label: str, turn: Turn) -> str:
    url = _frame_url(turn)
    if url is None:
        return ""
    return f'<img class="frame" alt="{_esc(label)} picture" src="{url}">'


def _reward(turn: Turn) -> str:
    if turn.reward is None:
        return ""
    return f'{_label("Reward")}<div class="reward">{_esc(format_reward(turn.reward))}</div>'


def _section(index: int, label: str, picture: str, text: list[str], *, text_first: bool) -> str:
    column = f'<div class="text">{"".join(text)}</div>'
    inner = column + picture if text_first else picture + column
    return (
        f'<section class="turn" data-turn="{index}" data-label="{_esc(label, 200)}">'
        f"{inner}</section>"
    )


def _turn_html(index: int, turn: Turn) -> str:
    final = turn.reply is None
    label = "End of episode" if final else f"Turn {index + 1}"
    observation = "(not recorded)" if turn.observation is None else turn.observation
    text = [_pre("Final observation" if final else "Observation", observation)]
    if not final:
        text.append(_pre("Reply", turn.reply))
        actions = " || ".join(turn.parsed_actions) if turn.parsed_actions else "(none)"
        text.append(_pre("Parsed actions", actions))
        text.append(_reward(turn))
    return _section(index, label, _image(label, turn), text, text_first=False)


# ----------------------------------------------------------------------------- BIRD
def is_bird(env_id: str | None) -> bool:
    """Whether ``env_id`` is a BIRD id (``grl/BIRD...``), whose replays lead with the
    question, the evidence and the SQL and fold the schema away."""
    return env_id is not None and env_id.startswith("grl/BIRD")


_QUESTION, _EVIDENCE, _DATABASE = "\nQuestion: ", "\nEvidence: ", "Database: "


def _bird_task(episode: Episode) -> dict[str, str | None]:
    """The database, schema, question and evidence of a BIRD episode, read from its first
    observation (``Database: ...``, the schema, ``Question: ...``, ``Evidence: ...``) or,
    when that is not recorded, from its first frame's sections."""
    task: dict[str, str | None] = dict(database=None, schema=None, question=None, evidence=None)
    first = episode.turns[0] if episode.turns else None
    observation = "" if first is None or first.observation is None else first.observation
    where = observation.rfind(_QUESTION)
    if where >= 0:
        schema, rest = observation[:where], observation[where + len(_QUESTION) :]
        question, _, evidence = rest.partition(_EVIDENCE)
        if schema.startswith(_DATABASE):
            database, _, schema = schema.partition("\n")
            task["database"] = database[len(_DATABASE) :].strip()
        task.update(schema=schema.strip("\n"), question=question.strip(), evidence=evidence)
    elif first is not None and isinstance(first.frame, TextFrame):
        sections = dict(first.frame.sections)
        task.update(question=sections.get("Question"), evidence=sections.get("Evidence"))
    elif observation:
        task["schema"] = observation
    return task


def _sql(turn: Turn) -> tuple[str, str]:
    """A BIRD turn's query kind (EXECUTE or SUBMIT) and SQL, from its parsed actions (else
    from the reply's last ``<answer>`` tag); ``("", "")`` when the reply holds none."""
    if turn.parsed_actions:
        action = turn.parsed_actions[-1]
    else:
        answers = _ANSWER.findall(turn.reply or "")
        action = answers[-1].strip() if answers else ""
    if not action.strip():
        return "", ""
    match = _KIND.match(action)
    if match is None:
        return "SUBMIT", action.strip()
    return match.group(1).upper(), action[match.end() :].strip()


_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_KIND = re.compile(r"\s*(EXECUTE|SUBMIT)\s*:?\s*", re.IGNORECASE)


def _bird_header(episode: Episode, task: dict[str, str | None]) -> str:
    parts = [
        _pre("Question", task["question"] or "(not recorded)", kind="question"),
        _pre("Evidence", task["evidence"] or "(none)"),
    ]
    queries = []
    for turn in episode.played:
        kind, sql = _sql(turn)
        if kind:
            queries.append(
                f'<li><span class="kind">{kind}</span><pre class="sql">{_esc(sql)}</pre></li>'
            )
        else:
            queries.append('<li><span class="kind">no SQL</span> (the reply held none)</li>')
    parts.append(_label("SQL, turn by turn") + f'<ol class="sql">{"".join(queries)}</ol>')
    if task["schema"]:
        tables = task["schema"].count("CREATE TABLE")
        database = f"database {task['database']}, " if task["database"] else ""
        summary = f"Schema ({database}{tables} table{'s' if tables != 1 else ''})"
        parts.append(
            f'<details class="schema"><summary>{_esc(summary, 500)}</summary>'
            f"<pre>{_esc(task['schema'], _SCHEMA_LIMIT)}</pre></details>"
        )
    return f'<div class="task">{"".join(parts)}</div>'


_SCHEMA_LIMIT = 200_000


def _bird_turn_html(index: int, turn: Turn, result: str | None) -> str:
    if turn.reply is None:
        return _turn_html(index, turn)
    label = f"Turn {index + 1}"
    kind, sql = _sql(turn)
    text = [_pre(f"SQL ({kind})", sql, kind="sql") if kind else _pre("SQL", "(none in the reply)")]
    text.append(_pre("Result", "(not recorded)" if result is None else result))
    text.append(_reward(turn))
    text.append(_pre("Reply", turn.reply))
    if index == 0:
        text.append(
            '<p class="note">Observation: the schema, the question and the evidence (above).</p>'
        )
    return _section(index, label, _image(label, turn), text, text_first=True)


# ----------------------------------------------------------------------------- page
def _summary(summary: dict[str, Any]) -> str:
    return "".join(
        f'<span class="item"><b>{html.escape(label)}</b> {html.escape(value)}</span>'
        for label, value in summary_items(summary)
    )


def _episode_html(episode: Episode) -> str:
    if is_bird(episode.env_id):
        header = _bird_header(episode, _bird_task(episode))
        results = [turn.observation for turn in episode.turns[1:]] + [None]
        turns = "".join(
            _bird_turn_html(index, turn, results[index]) for index, turn in enumerate(episode.turns)
        )
    else:
        header = ""
        turns = "".join(_turn_html(index, turn) for index, turn in enumerate(episode.turns))
    last = max(len(episode.turns) - 1, 0)
    controls = (
        '<div class="controls"><button class="prev">&larr;</button>'
        '<button class="next">&rarr;</button><button class="play">Play</button>'
        f'<input type="range" min="0" max="{last}" value="0"><span class="where"></span></div>'
    )
    return (
        f'<article class="episode"><h2>{_esc(episode.title, 500)}</h2>'
        f'<p class="summary">{_summary(episode.summary)}</p>'
        f"{header}{controls}{turns}</article>"
    )


def _normalise(
    episodes: Sequence[Any] | Any, frames: Sequence[Sequence[Any] | None] | None
) -> list[Episode]:
    single = isinstance(episodes, (Episode, dict)) or callable(getattr(episodes, "to_dict", None))
    if single:
        episodes, frames = [episodes], None if frames is None else [frames]
    normalised = [as_episode(episode) for episode in episodes]
    if frames is None:
        return normalised
    if len(frames) != len(normalised):
        raise ValueError(f"frames: one list per episode ({len(normalised)}), got {len(frames)}")
    return [
        episode if turn_frames is None else attach_frames(episode, turn_frames)
        for episode, turn_frames in zip(normalised, frames, strict=True)
    ]


def replay_html(
    episodes: Sequence[Any] | Any,
    *,
    title: str = "agent-envs replay",
    frames: Sequence[Sequence[Any] | None] | None = None,
) -> str:
    """A self-contained HTML page replaying ``episodes``: a list of episodes in any shape of
    `agent_envs.renderers.episodes` (dicts, ``Trajectory`` records, :class:`Episode`), or one.

    ``frames`` puts a picture on every turn of records that hold none: for a list, one entry
    per episode (``None``, or that episode's frames: one per turn, the state the model saw,
    plus optionally the final state, as `agent_envs.renderers.episodes.replay_frames` returns
    them); for a single episode, its list of frames. Text from the records (replies included)
    is escaped and cut for display; nothing in it makes this raise."""
    body = "".join(_episode_html(episode) for episode in _normalise(episodes, frames))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title, 500)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{_esc(title, 500)}</h1>{body}<script>{_SCRIPT}</script></body></html>"
    )


def write_replay(
    episodes: Sequence[Any] | Any,
    path: str | Path,
    *,
    title: str = "agent-envs replay",
    frames: Sequence[Sequence[Any] | None] | None = None,
) -> Path:
    """Write :func:`replay_html` to ``path`` (UTF-8)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replay_html(episodes, title=title, frames=frames), encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(
        prog="python -m agent_envs.renderers.replay",
        description="Write a self-contained HTML replay of trajectories (JSONL or JSON).",
    )
    parser.add_argument("inputs", nargs="+", type=Path, help="episode files (.jsonl or .json)")
    parser.add_argument("-o", "--output", type=Path, default=Path("replay.html"))
    parser.add_argument("--limit", type=int, default=100, help="at most this many episodes")
    parser.add_argument("--env", default=None, help="only episodes whose env_id is this")
    parser.add_argument("--agent", default=None, help="only episodes of this agent")
    parser.add_argument("--title", default=None, help="page title (default: the input names)")
    args = parser.parse_args(argv)
    episodes = []
    for path in args.inputs:
        episodes += load_episodes(path)
    if args.env is not None:
        episodes = [episode for episode in episodes if episode.env_id == args.env]
    if args.agent is not None:
        episodes = [episode for episode in episodes if episode.agent == args.agent]
    if not episodes:
        parser.error("no episodes matched")
    episodes = episodes[: max(args.limit, 1)]
    title = args.title or "Replay: " + ", ".join(path.name for path in args.inputs)
    out = write_replay(episodes, args.output, title=title)
    print(f"wrote {out} ({len(episodes)} episodes)")
    return out


if __name__ == "__main__":
    main()
