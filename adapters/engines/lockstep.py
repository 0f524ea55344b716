"""Lockstep generation: an engine wrapper for generate calls that are collectives across ranks.

In TRL's vLLM server mode (and colocated vLLM with tensor parallelism) each rank's
``generate`` gathers every rank's prompts, one process generates for all of them, and each
rank takes back the slice ``[rank * n, (rank + 1) * n)`` of the answers, ``n`` being its own
number of prompts. So every rank must call ``generate`` the same number of times, with the
same number of prompts. Multi-turn episodes break both: a rank whose episodes have ended would
stop calling while the others wait for it (a hang), and ranks with different numbers of live
episodes would take each other's answers.

:class:`LockstepEngine` keeps the ranks in step. Before each call the ranks agree (an
``all_reduce`` of the live request count, MAX) on the call's width; each rank pads its batch
with dummy requests to that width and drops their answers. A rank whose episodes are all done
calls :meth:`LockstepEngine.wait_for_other_ranks` (the `RolloutCollector` does, after its
last turn), which keeps answering the other ranks' calls with dummy batches until every rank
is done. Without ``torch.distributed`` initialised (or with one rank) it is a pass-through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest

__all__ = ["LockstepEngine"]


def _distributed(group: Any) -> Any:
    """``torch.distributed`` when more than one rank of ``group`` is running, else ``None``."""
    # A fallback, not a missing-dependency guard: without torch.distributed (no torch, or a
    # torch built without it) no process group can run, so there is one rank to keep in step.
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch without distributed support
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist if dist.get_world_size(group) > 1 else None


class LockstepEngine:
    """Wrap ``engine`` so that every rank calls its ``generate`` equally often, with equally
    many requests (module docstring).

    Args:
        engine: the engine whose ``generate`` is a collective (e.g. the rollout_func's engine
            on TRL's ``vllm_generation`` in server mode).
        group: the ``torch.distributed`` process group of the ranks that call it together
            (default: the whole world).

    Dummy requests carry a one-token prompt (the tokenizer's pad token, else its EOS, else
    id 0), an empty user message and ``max_new_tokens=1``; their answers are discarded. Each
    ``generate`` call is one round for all ranks, so a rank must not call ``generate`` with an
    empty batch while it still has episodes to play (the collector never does).
    """

    def __init__(self, engine: Engine, *, group: Any = None) -> None:
        self.engine = engine
        self.group = group
        self.name = engine.name
        self.tokenizer = engine.tokenizer
        self.needs_env = bool(getattr(engine, "needs_env", False))

    def _width(self, dist: Any, live: int) -> int:
        """The most requests any rank has in this round (0: every rank is done)."""
        import torch

        backend = str(dist.get_backend(self.group))
        device = torch.device("cpu")
        if "nccl" in backend and "gloo" not in backend:  # NCCL reduces CUDA tensors only
            device = torch.device("cuda", torch.cuda.current_device())
        count = torch.tensor([live], dtype=torch.long, device=device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX, group=self.group)
        return int(count.item())

    def _dummy(self) -> GenerationRequest:
        tokenizer = self.tokenizer
        token = None
        if tokenizer is not None:
            token = tokenizer.pad_token_id
            if token is None:
                token = tokenizer.eos_token_id
        return GenerationRequest(
            max_new_tokens=1,
            prompt_ids=[int(token) if token is not None else 0],
            messages=[{"role": "user", "content": ""}],
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        dist = _distributed(self.group)
        if dist is None:
            return self.engine.generate(requests)
        width = self._width(dist, len(requests))
        if width == 0:
            return []
        padded = list(requests) + [self._dummy() for _ in range(width - len(requests))]
        return self.engine.generate(padded)[: len(requests)]

    def wait_for_other_ranks(self) -> None:
        """This rank is done: answer the other ranks' rounds with dummy batches until every
        rank is done (returns at once without distributed ranks)."""
        dist = _distributed(self.group)
        if dist is None:
            return
        while (width := self._width(dist, 0)) > 0:
            self.engine.generate([self._dummy() for _ in range(width)])
