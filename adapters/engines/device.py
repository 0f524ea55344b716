"""Where a model runs: the ``--device`` setting (``auto``, ``cpu``, ``cuda``) resolved once.

The leaderboard's model agents and the training stages share it, so a bad setting fails the
same way everywhere: a ``SystemExit`` naming the flag.
"""

from __future__ import annotations

__all__ = ["DEVICES", "check_device", "device_name", "resolve_device"]

DEVICES = ("auto", "cpu", "cuda")


def check_device(device: str) -> None:
    """A ``--device`` setting other than auto, cpu or cuda is a ``SystemExit`` naming it."""
    if device not in DEVICES:
        raise SystemExit(f"--device: unknown {device!r}; choose auto, cpu or cuda")


def resolve_device(device: str) -> str:
    """``cuda`` or ``cpu`` for a ``--device`` setting (``auto``: ``cuda`` when torch sees a
    GPU); a bad setting is a ``SystemExit`` naming the flag."""
    import torch

    check_device(device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU (a CPU build, or no driver)")
    return device


def device_name(device: str) -> str:
    """What a run used, for its records: ``cuda (NVIDIA H100 ...)`` or ``cpu (N threads)``."""
    import torch

    if resolve_device(device) == "cuda":
        return f"cuda ({torch.cuda.get_device_name()})"
    return f"cpu ({torch.get_num_threads()} threads)"
