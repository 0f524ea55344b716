"""Command-line plumbing shared by the benchmark scripts: flags from an ``Args`` dataclass and
writing the report."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

Settings = TypeVar("Settings")


def parse_flags(settings: type[Settings], doc: str, argv: Sequence[str] | None = None) -> Settings:
    """Reads one flag per field of the dataclass ``settings`` (``--env-id`` sets ``env_id``).

    A flag's type is that of the field's default; a ``bool`` field takes a word (``--json
    true``: "1", "true" or "yes" is true, anything else false); a ``list`` field takes one
    or more words (``--sides a b``, typed as its default's first item, else ``str``).
    ``doc`` is the script's docstring, whose first line describes it in ``--help``. ``argv``
    defaults to the command line.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, value in vars(settings()).items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, list):
            kind = type(value[0]) if value else str
            parser.add_argument(flag, type=kind, nargs="+", default=value)
            continue
        kind = _word_is_true if isinstance(value, bool) else type(value)
        parser.add_argument(flag, type=kind, default=value)
    return settings(**vars(parser.parse_args(argv)))


def _word_is_true(text: str) -> bool:
    return text.lower() in ("1", "true", "yes")


def finish_report(lines: Sequence[str], output: str | Path) -> str:
    """Joins a report's ``lines``, prints it, writes it to ``output`` (see `write_report`) and
    returns it."""
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(text, output)
    return text


def write_report(text: str, output: str | Path) -> None:
    """Writes ``text`` (UTF-8) to the file ``output``, making its folder; ``""`` writes nothing."""
    if output:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
