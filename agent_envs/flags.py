"""Command-line flags of every ``agent-envs`` command: one dataclass of settings, read by tyro.

:func:`parse` turns a settings dataclass into flags: one per field, in kebab-case (``--env-id``
sets ``env_id``), the field's docstring as its help, its default shown. The syntax is the same
in every command::

    --env-id grl/Sokoban-v0       a value
    --envs a b c                  a list: the words after the flag (never a,b,c)
    --fresh / --no-fresh          a bool: the flag alone, or ``--no-`` before it
    --threads None                an optional value back to ``None``

It sits on the package's ground floor (it imports tyro only when called), so commands on every
floor use it: ``agent-envs serve`` (`agent_envs.adapters.server`) as well as the benchmark
scripts and the ``agent-envs`` dispatcher (`agent_envs.benchmarks.cli`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["parse", "running_as"]

T = TypeVar("T")

# The program name while a dispatcher runs a command (``agent-envs train``), for the usage line.
_running_as: str | None = None


@contextmanager
def running_as(prog: str) -> Iterator[None]:
    """While inside, :func:`parse` names ``prog`` in usage lines instead of the command's own
    ``prog`` (``agent-envs train`` for ``agent-envs train``)."""
    global _running_as
    saved, _running_as = _running_as, prog
    try:
        yield
    finally:
        _running_as = saved


def parse(
    settings: type[T],
    argv: Sequence[str] | None = None,
    *,
    prog: str,
    description: str | None = None,
) -> T:
    """Reads a command's flags into its settings dataclass ``settings`` (with tyro).

    ``argv`` defaults to the command line, ``prog`` names the command in the usage line (see
    :func:`running_as`), ``description`` heads the help as given (default: the dataclass's
    docstring; tyro joins lines, a blank line starts a paragraph). ``--help`` prints the help
    and exits 0; a bad flag prints the usage and exits 2.
    """
    import tyro

    return tyro.cli(
        settings,
        args=argv,
        prog=_running_as or prog,
        description=description,
        config=(tyro.conf.HelptextFromCommentsOff,),
    )
