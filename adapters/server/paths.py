"""Paths in requests, confined to the data roots the server was started with.

A request may name files on the server only through env kwargs (``data_path``, ``db_root``,
``cache_dir``: every key ending in ``_path``, ``_root``, ``_dir``, ``_file`` or ``_folder``)
and, inside reset options, a database by name (BIRD's ``item["db_id"]``, read under the
env's ``db_root``). :class:`DataRoots` checks them before any env is built or reset:

- a path kwarg must resolve (``~`` expanded, symlinks followed, relative to the server's
  working directory, as the envs read it) inside one of the roots given with ``--data-root``
  (none by default: then every path kwarg is refused); otherwise **403** ``path_not_allowed``,
  whose message names the kwarg, never what the file holds;
- a name (``db_id``) must be one plain path component (letters, digits, ``._-``, not starting
  with a dot); otherwise 403 as well.

Plain Python, no web framework.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agent_envs.adapters.server.errors import Refused

__all__ = ["DataRoots", "PathNotAllowed", "is_path_key"]

_PATH_SUFFIXES = ("_path", "_root", "_dir", "_file", "_folder")
_NAME_KEYS = frozenset({"db_id"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")
_MAX_DEPTH = 4


class PathNotAllowed(Refused):
    status = 403
    kind = "path_not_allowed"


def is_path_key(key: str) -> bool:
    """Whether an env kwarg named ``key`` names a file or folder on the server."""
    return key.endswith(_PATH_SUFFIXES) or key in ("path", "root", "folder")


class DataRoots:
    """The folders request paths may point into (resolved once, at start)."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]] = ()) -> None:
        resolved = []
        for root in roots:
            path = os.path.realpath(os.path.expanduser(os.fspath(root)))
            if not os.path.isdir(path):
                raise ValueError(f"data root {os.fspath(root)!r} is not a folder")
            resolved.append(path)
        self.roots = tuple(resolved)

    def check_env_kwargs(self, env_kwargs: Mapping[str, Any]) -> None:
        """Raise `PathNotAllowed` unless every path kwarg lies inside a root."""
        for key, value in env_kwargs.items():
            if isinstance(key, str) and is_path_key(key) and value is not None:
                self._check_path(f"env_kwargs[{key!r}]", value)

    def check_options(self, options: Any, where: str = "options", depth: int = 0) -> None:
        """Raise `PathNotAllowed` for a path or an unsafe name anywhere in reset options."""
        if depth > _MAX_DEPTH or not isinstance(options, Mapping):
            return
        for key, value in options.items():
            place = f"{where}[{key!r}]"
            if key in _NAME_KEYS and value is not None:
                if not isinstance(value, str) or not _PLAIN_NAME.fullmatch(value):
                    raise PathNotAllowed(
                        f"{place} must be a plain name (letters, digits, '._-', no '/' and "
                        "not starting with '.'): it names a file under the env's data folder"
                    )
            elif isinstance(key, str) and is_path_key(key) and value is not None:
                self._check_path(place, value)
            elif isinstance(value, Mapping):
                self.check_options(value, place, depth + 1)

    def _check_path(self, place: str, value: Any) -> None:
        if not isinstance(value, str) or not value or "\x00" in value:
            raise PathNotAllowed(f"{place} must be a path string inside the server's data roots")
        path = os.path.realpath(os.path.expanduser(value))
        for root in self.roots:
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                return
        fix = (
            "this server was started without --data-root, so requests may name no files"
            if not self.roots
            else f"it must lie inside one of the server's {len(self.roots)} data root(s)"
        )
        raise PathNotAllowed(f"{place} names a path outside the server's data roots: {fix}")
