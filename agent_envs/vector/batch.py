"""Batching per-env info dicts the way Gymnasium's vector envs do.

``infos[key]`` is an array over all envs and ``infos["_" + key]`` a boolean mask of the envs
that reported the key this call. Bools, ints and floats become typed arrays (when every env
gave the same one of these types); anything else (strings, lists, ``None``, mixed types) an
object array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["batch_infos"]

_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64}


def _column(values: Sequence[Any]) -> np.ndarray:
    dtype = _DTYPES.get(type(values[0]))
    if dtype is not None and len(set(map(type, values))) == 1:
        return np.array(values, dtype=dtype)
    return np.fromiter(values, dtype=object, count=len(values))


def batch_infos(infos: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """Batch one info dict per env (``None`` for envs that reported nothing)."""
    num_envs = len(infos)
    first = next((info for info in infos if info is not None), None)
    if first is None:
        return {}
    keys = list(first)
    if _same_keys(infos, keys):  # the usual case: every env reported the same keys
        batched: dict[str, Any] = {}
        present = np.ones(num_envs, dtype=np.bool_)
        columns = zip(*map(dict.values, infos), strict=True)  # type: ignore[arg-type]
        for key, column in zip(keys, columns, strict=True):
            batched[key] = _column(column)
            batched["_" + key] = present.copy()
        return batched
    batched = {}
    for key in dict.fromkeys(key for info in infos if info is not None for key in info):
        has = np.array([info is not None and key in info for info in infos], dtype=np.bool_)
        column = _column([info[key] for info in infos if info is not None and key in info])
        if column.dtype == object:
            full = np.empty(num_envs, dtype=object)
        else:
            full = np.zeros(num_envs, dtype=column.dtype)
        full[has] = column
        batched[key] = full
        batched["_" + key] = has
    return batched


def _same_keys(infos: Sequence[dict[str, Any] | None], keys: list[str]) -> bool:
    """Every info is a dict with exactly ``keys``, in that order (so columns can be zipped)."""
    if None in infos:
        return False
    return all(list(info) == keys for info in infos)  # type: ignore[arg-type]
