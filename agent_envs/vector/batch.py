"""Batching per-env info dicts the way Gymnasium's vector envs do.

``infos[key]`` is an array over all envs and ``infos["_" + key]`` a boolean mask of the envs
that reported the key this call. Bools, ints and floats become typed arrays; anything else
(strings, lists, ``None``) an object array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["batch_infos"]


def _column(values: list[Any]) -> np.ndarray:
    first = values[0]
    kind = type(first)
    if kind in (bool, int, float) and all(type(value) is kind for value in values):
        return np.array(values, dtype={bool: np.bool_, int: np.int64, float: np.float64}[kind])
    return np.fromiter(values, dtype=object, count=len(values))


def batch_infos(infos: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """Batch one info dict per env (``None`` for envs that reported nothing)."""
    num_envs = len(infos)
    present = [info for info in infos if info is not None]
    if not present:
        return {}
    keys = dict.fromkeys(key for info in present for key in info)
    if len(present) == num_envs and all(len(info) == len(keys) for info in present):
        batched: dict[str, Any] = {}
        for key in keys:
            batched[key] = _column([info[key] for info in infos])  # type: ignore[index]
            batched["_" + key] = np.ones(num_envs, dtype=np.bool_)
        return batched
    batched = {}
    for key in keys:
        has = np.array([info is not None and key in info for info in infos], dtype=np.bool_)
        values = [info[key] for info in infos if info is not None and key in info]
        column = _column(values)
        if column.dtype == object:
            full = np.empty(num_envs, dtype=object)
        else:
            full = np.zeros(num_envs, dtype=column.dtype)
        full[has] = column
        batched[key] = full
        batched["_" + key] = has
    return batched
