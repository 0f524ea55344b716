"""A griffe extension for the API reference: the reStructuredText bits of the docstrings
(roles such as ``:class:`X```, simple ``====`` tables, ``::`` before a literal block) read as
Markdown. The docstrings themselves stay as they are."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|obj|exc|const):`(~?)([^`]+)`")
BORDER = re.compile(r"^(\s*)(=+)( +=+)+\s*$")


def _role(match: re.Match) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def _cells(line: str, starts: list[int]) -> list[str]:
    bounds = [*starts[1:], None]
    return [line[start:end].strip() for start, end in zip(starts, bounds, strict=True)]


def _tables(lines: list[str]) -> list[str]:
    """RST simple tables (border, rows, border; an optional header row between two borders)
    → Markdown tables."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        match = BORDER.match(lines[index])
        end = next((j for j in range(index + 1, len(lines)) if BORDER.match(lines[j])), None)
        if not match or end is None:
            out.append(lines[index])
            index += 1
            continue
        indent = match.group(1)
        border = lines[index]
        starts = [m.start() for m in re.finditer(r"=+", border)]
        rows = [_cells(line, starts) for line in lines[index + 1 : end] if line.strip()]
        closing = end
        header = None
        after = next((j for j in range(end + 1, len(lines)) if BORDER.match(lines[j])), None)
        if (
            after is not None
            and len(rows) == 1
            and all(lines[k].strip() for k in range(end + 1, after))
        ):
            header = rows[0]
            rows = [_cells(line, starts) for line in lines[end + 1 : after] if line.strip()]
            closing = after
        width = len(starts)
        head = header or [""] * width
        out += ["", indent + "| " + " | ".join(head) + " |", indent + "|---" * width + "|"]
        out += [indent + "| " + " | ".join(row) + " |" for row in rows]
        out.append("")
        index = closing + 1
    return out


def convert(text: str) -> str:
    text = ROLE.sub(_role, text)
    lines = _tables(text.splitlines())
    lines = [line[:-1] if line.rstrip().endswith("::") and line.strip() != "::" else line
             for line in lines]  # fmt: skip
    return "\n".join(lines)


class RstToMarkdown(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
