"""ASCII text for observations: product data is scraped Amazon text (curly quotes, CJK
brackets, emoji); what the env prints is ASCII (`STYLE.md` habit 7).

:func:`to_ascii` transliterates: compatibility decomposition (NFKD) with accents dropped
(``e`` for ``é``, ``:`` for full-width ``：``), a table for the common symbols of product
listings (quotes, dashes, ``【】``, ``°``, ``×``, ``™``, ...), and everything else removed.
Whitespace runs (tabs, newlines, no-break spaces) become one space.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clip", "to_ascii"]

_SYMBOLS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u00b4": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u3010": "(",
    "\u3011": ")",
    "\u300a": "<",
    "\u300b": ">",
    "\u3001": ",",
    "\u3002": ".",
    "\u2022": "*",
    "\u00b7": "*",
    "\u25cf": "*",
    "\u25c6": "*",
    "\u2605": "*",
    "\u2606": "*",
    "\u2714": "*",
    "\u2705": "*",
    "\u2713": "*",
    "\u2611": "*",
    "\u27a4": "->",
    "\u2192": "->",
    "\u2190": "<-",
    "\u25b6": ">",
    "\u261e": "->",
    "\u203a": ">",
    "\u2039": "<",
    "\u00b0": " deg ",
    "\u00d7": "x",
    "\u00f7": "/",
    "\u2044": "/",
    "\u2265": ">=",
    "\u2264": "<=",
    "\u2248": "~",
    "\u00b1": "+/-",
    "\u00ae": "(R)",
    "\u00a9": "(C)",
    "\u20ac": "EUR",
    "\u00a3": "GBP",
    "\u00a5": "JPY",
    "\u00a2": "c",
    "\u2126": "Ohm",
    "\u03a9": "Ohm",
    "\u00b5": "u",
    "\u03bc": "u",
    "\u00df": "ss",
    "\u00e6": "ae",
    "\u00c6": "AE",
    "\u00f8": "o",
    "\u00d8": "O",
    "\u0142": "l",
    "\u0141": "L",
    "\u2026": "...",
}
_TABLE = str.maketrans(_SYMBOLS)
_SPACES = re.compile(r"\s+")


def to_ascii(text: str) -> str:
    """``text`` in printable ASCII on one line (see the module docstring)."""
    if not text.isascii():
        text = text.translate(_TABLE)
        text = unicodedata.normalize("NFKD", text).translate(_TABLE)
        text = text.encode("ascii", "ignore").decode("ascii")
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return _SPACES.sub(" ", text).strip()


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marked with ``...`` when cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 4)].rstrip() + " ..."
