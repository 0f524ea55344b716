"""Values and text as people read them: how every exporter (HTML replay, GIF/MP4) shows them.

* :func:`format_value`: booleans as ``yes`` / ``no``, ``None`` as ``—``, floats rounded to at
  most four decimals with trailing zeros dropped (``-2.3000000000000003`` → ``-2.3``,
  ``10.0`` → ``10``; very large or very small ones as ``1.23e+09``), lists joined with commas.
* :func:`format_reward`: a reward with its sign (``+1``, ``-0.1``, ``0``).
* :func:`safe_text`: any value as text that is safe to put on a page and to encode as UTF-8:
  lone surrogates (``\\ud800``) and control characters other than tab and newline are written
  as Python escapes, and text longer than ``limit`` characters is cut with a note saying how
  much was left out. It never raises, whatever the value.
* :func:`summary_items`: an episode's summary (return, success, turns, ...) as labelled values.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "DISPLAY_LIMIT",
    "NOTHING",
    "format_reward",
    "format_value",
    "safe_text",
    "summary_items",
]

#: At most this many characters of one text are shown (replies can be megabytes long).
DISPLAY_LIMIT = 20_000
#: How a missing value (``None``) is shown.
NOTHING = "—"
_DIGITS = 4
# lone surrogates and control characters except tab (09), newline (0a) and return (0d)
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_LABELS = {
    "episode_return": "return",
    "num_turns": "turns",
    "truncation_reason": "truncated by",
}


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def safe_text(value: Any, limit: int = DISPLAY_LIMIT) -> str:
    """``value`` as displayable text: unencodable and control characters escaped, cut to
    ``limit`` characters (plus a note of how many more there were)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, (bytes, bytearray)):
        text = bytes(value[: limit * 4]).decode("utf-8", errors="backslashreplace")
    else:
        try:
            text = str(value)
        except Exception:  # a broken __str__ must not break the page
            text = f"<{type(value).__name__}>"
    cut = len(text) - limit
    if cut > 0:
        text = text[:limit]
    text = _UNSAFE.sub(_escape, text)
    if cut > 0:
        text += f"\n… [{cut:,} more characters not shown]"
    return text


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value != 0 and (abs(value) >= 1e9 or abs(value) < 10**-_DIGITS):
        return f"{value:.3g}"
    text = f"{value:.{_DIGITS}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_value(value: Any, limit: int = DISPLAY_LIMIT) -> str:
    """``value`` for people (see the module docstring); strings are :func:`safe_text`."""
    if value is None:
        return NOTHING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return _format_float(float(value))
    if isinstance(value, str):
        return safe_text(value, limit)
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(item, limit) for item in value) or NOTHING
    if isinstance(value, Mapping):
        parts = [
            f"{safe_text(key, 200)}: {format_value(item, limit)}" for key, item in value.items()
        ]
        return "; ".join(parts) or NOTHING
    return safe_text(value, limit)


def format_reward(value: float | None) -> str:
    """A reward with its sign: ``+1``, ``-0.1``, ``0``; ``—`` when there is none."""
    text = format_value(value)
    if value is not None and not math.isnan(value) and value > 0 and text != "0":
        return "+" + text
    return text


def summary_items(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, value)`` pairs of an episode summary, labels and values for people
    (``episode_return`` → ``return``, ``truncation_reason`` ``"max_turns"`` → ``max turns``)."""
    items = []
    for key, value in summary.items():
        label = _LABELS.get(key, str(key).replace("_", " "))
        if key == "truncation_reason" and isinstance(value, str):
            value = value.replace("_", " ")
        items.append((safe_text(label, 200), format_value(value, 500)))
    return items
