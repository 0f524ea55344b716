"""HTML replays: one self-contained file per trajectory or per batch of trajectories.

Every episode becomes an ``<article class="episode">`` with one ``<section class="turn">``
per turn (observation, reply, parsed actions, reward, and the frame as an inline
``data:image/png;base64`` image when the record has one). A few lines of inline script step
through the turns (buttons, slider, arrow keys, play); without script every turn is shown.
No network assets: styles, script and images are all inside the file.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.renderers.episodes import Episode, Turn, episode_from_dict, load_episodes
from agent_envs.renderers.frames import GridFrame, TextFrame
from agent_envs.renderers.raster import draw

from agent_envs.optional import require

__all__ = ["main", "png_data_url", "replay_html", "write_replay"]

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
"""

_SCRIPT = """
document.querySelectorAll('article.episode').forEach(function (episode) {
  var turns = episode.querySelectorAll('section.turn');
  var slider = episode.querySelector('input[type=range]');
  var where = episode.querySelector('.where');
  var timer = null;
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


def _pre(label: str, text: str) -> str:
    return f'<div class="label">{html.escape(label)}</div><pre>{html.escape(text)}</pre>'


def _turn_html(index: int, turn: Turn) -> str:
    final = turn.reply is None
    label = "End of episode" if final else f"Turn {index + 1}"
    parts = []
    url = _frame_url(turn)
    if url is not None:
        parts.append(f'<img class="frame" alt="{html.escape(label)} frame" src="{url}">')
    text = []
    observation = "(not recorded)" if turn.observation is None else turn.observation
    text.append(_pre("Final observation" if final else "Observation", observation))
    if not final:
        text.append(_pre("Reply", turn.reply))
        actions = " || ".join(turn.parsed_actions) if turn.parsed_actions else "(none)"
        text.append(_pre("Parsed actions", actions))
        if turn.reward is not None:
            reward = f"{turn.reward:+.4g}"
            text.append(
                f'<div class="label">Reward</div><div class="reward">{html.escape(reward)}</div>'
            )
    parts.append(f'<div class="text">{"".join(text)}</div>')
    return (
        f'<section class="turn" data-turn="{index}" data-label="{html.escape(label)}">'
        + "".join(parts)
        + "</section>"
    )


def _summary(summary: dict[str, Any]) -> str:
    return "   ".join(f"{key.replace('_', ' ')}: {value}" for key, value in summary.items())


def _episode_html(episode: Episode) -> str:
    turns = "".join(_turn_html(index, turn) for index, turn in enumerate(episode.turns))
    last = max(len(episode.turns) - 1, 0)
    controls = (
        '<div class="controls"><button class="prev">&larr;</button>'
        '<button class="next">&rarr;</button><button class="play">Play</button>'
        f'<input type="range" min="0" max="{last}" value="0"><span class="where"></span></div>'
    )
    return (
        f'<article class="episode"><h2>{html.escape(episode.title)}</h2>'
        f'<p class="summary">{html.escape(_summary(episode.summary))}</p>'
        f"{controls}{turns}</article>"
    )


def replay_html(
    episodes: Sequence[Episode | dict[str, Any]], *, title: str = "agent-envs replay"
) -> str:
    """A self-contained HTML page replaying ``episodes`` (any shape of
    `agent_envs.renderers.episodes`)."""
    normalised = [e if isinstance(e, Episode) else episode_from_dict(e) for e in episodes]
    body = "".join(_episode_html(episode) for episode in normalised)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}<script>{_SCRIPT}</script></body></html>"
    )


def write_replay(
    episodes: Sequence[Episode | dict[str, Any]],
    path: str | Path,
    *,
    title: str = "agent-envs replay",
) -> Path:
    """Write :func:`replay_html` to ``path`` (UTF-8)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replay_html(episodes, title=title), encoding="utf-8")
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
