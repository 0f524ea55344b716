"""``TokenAdvantageGRPOTrainer``: TRL's ``GRPOTrainer`` trained on per-token advantages.

Used with ``make_rollout_func(..., advantages=AdvantageConfig(...))`` from
:mod:`agent_envs.adapters.trl`, whose rows carry ``token_advantages`` (computed by
:mod:`agent_envs.adapters.advantages` on each group's `Trajectory` records: GRPO, Dr. GRPO, RLOO, or
GiGPO's per-turn advantages on that turn's model tokens) and ``off_policy`` (LUFFY's oracle rows)::

    trainer = TokenAdvantageGRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=episode_return_reward,  # logged; the advantages come from the rollout
        train_dataset=make_episode_dataset("grl/Sokoban-v0", seeds=range(1000)),
        rollout_func=make_rollout_func(
            "grl/Sokoban-v0", advantages=AdvantageConfig(estimator="gigpo")
        ),
        args=GRPOConfig(num_generations=8, ...),
    )

A subclass of the public ``GRPOTrainer`` that overrides three methods and changes no other
behaviour:

- ``_generate_and_score_completions``: TRL merges the rollout_func's extra fields into the
  batch's input rows (that is how reward functions receive them); after TRL has scored the
  batch, the scalar ``advantages`` are replaced by a ``(batch, completion length)`` tensor of
  those rows' ``token_advantages`` (0 on padding), and an ``off_policy`` row flag is added.
  TRL's loss takes ``(B, T)`` advantages as they are (it unsqueezes only ``(B,)`` ones), so
  on-policy tokens keep TRL's loss exactly: ratio, clipping, KL, masks and normalisation.
- ``_compute_loss`` (only for a batch with off-policy rows): LUFFY's policy shaping (Yan et al.,
  2025). TRL's loss runs with the off-policy rows' advantages set to 0, so their tokens add no
  clipped-ratio term, then their tokens add ``-f(pi) * A`` with ``f(pi) = pi / (pi + gamma)``,
  ``pi = exp(logprob)`` under the current model (the log-probabilities TRL computed in that
  same forward pass, at TRL's sampling temperature), no importance ratio and no clipping,
  normalised as TRL normalises its per-token loss for the configured ``loss_type`` (``"dapo"``,
  ``"grpo"``, ``"bnpo"``, ``"dr_grpo"``; others are refused for off-policy rows).
- ``_get_per_token_logps_and_entropies``: TRL's pass on each chunk of rows cut to the chunk's
  own span (TRL pads the whole step to its longest prompt and completion and does not trim the
  passes it splits it into; the cut columns are padding on every row, so the values are
  TRL's); inside ``_compute_loss`` it keeps the log-probabilities of that forward pass for the
  off-policy term.

Supported TRL: the range pinned in the ``train`` extra (1.16.x); ``tests/adapters/
test_trl_internals.py`` fails with a message naming what moved when these internals change.

Metrics logged besides TRL's: ``off_policy/fraction`` (rows), ``off_policy/recovery_fraction``
(rows of oracle episodes from a failed first turn), ``off_policy/shaping_mean``
(mean ``f(pi)`` on off-policy tokens), ``advantages/token_mean`` and ``advantages/token_std``
(over model tokens), ``episodes/zero_advantage_fraction`` (with ``drop_zero_advantage``).
:func:`agent_envs.adapters.trl.episode_return_reward` logs ``episodes/engine_errors``,
``episodes/return/<env_id>`` and ``episodes/seconds/<env_id>``,
:func:`agent_envs.adapters.trl.success_reward` ``episodes/success/<env_id>``.
"""

from __future__ import annotations

import warnings
from typing import Any

from agent_envs.optional import require

# The trainer subclasses TRL's GRPOTrainer, so importing this module needs the [train] extra
# (the package agent_envs.adapters.trl does not import it).
torch = require("torch", "train", needed_by="TokenAdvantageGRPOTrainer")
trl = require("trl", "train", needed_by="TokenAdvantageGRPOTrainer")
GRPOTrainer = trl.GRPOTrainer
Version = require("packaging.version", "train").Version

__all__ = ["LUFFY_LOSS_TYPES", "SUPPORTED_TRL", "TokenAdvantageGRPOTrainer", "policy_shaping"]

#: TRL versions whose internals this subclass was written against (``[min, max)``).
SUPPORTED_TRL = ("1.16", "1.17")

#: ``loss_type`` values whose per-token loss normalisation the off-policy term reproduces.
LUFFY_LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo")


def policy_shaping(probs: torch.Tensor, gamma: float = 0.1) -> torch.Tensor:
    """LUFFY's ``f(pi) = pi / (pi + gamma)`` on a tensor (gradient kept); the numpy version is
    :func:`agent_envs.adapters.advantages.policy_shaping`."""
    return probs / (probs + gamma)


def _loss_mask(batch: dict[str, Any]) -> torch.Tensor:
    """The tokens TRL's loss counts: completion tokens the model wrote (``tool_mask`` marks
    env tokens 0 in multi-turn rows)."""
    return batch["completion_mask"] * batch.get("tool_mask", 1)


def _trl_supported(version: str) -> bool:
    low, high = (Version(bound) for bound in SUPPORTED_TRL)
    return low <= Version(version) < high


class TokenAdvantageGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` trained on the rollout_func's per-token advantages, with LUFFY's
    policy-shaping loss on off-policy (oracle) rows (module docstring).

    Args:
        *args, **kwargs: ``GRPOTrainer``'s; ``rollout_func`` is required and must come from
            ``agent_envs.adapters.trl.make_rollout_func(..., advantages=...)``.
        shaping_gamma: LUFFY's ``gamma`` in ``f(pi) = pi / (pi + gamma)`` (paper: 0.1).
        drop_zero_advantage: leave rows whose every advantage is 0 (an episode group whose
            episodes all scored alike, with no step-level signal either) out of the loss mask,
            so they stop diluting the token normalisation of ``loss_type="dapo"`` / ``"bnpo"``
            (DAPO's filter of such groups, without re-sampling). They add no gradient either
            way; their share is logged as ``episodes/zero_advantage_fraction``.
        trim_padding: run each pass over its own rows' span, not the step's padded width
            (``_get_per_token_logps_and_entropies``); ``False``: TRL's pass as it is.
    """

    #: checked by ``make_rollout_func(advantages=...)``
    uses_token_advantages = True

    def __init__(
        self,
        *args: Any,
        shaping_gamma: float = 0.1,
        drop_zero_advantage: bool = False,
        trim_padding: bool = True,
        **kwargs: Any,
    ) -> None:
        if not _trl_supported(trl.__version__):
            warnings.warn(
                f"TokenAdvantageGRPOTrainer was written for TRL >={SUPPORTED_TRL[0]},"
                f"<{SUPPORTED_TRL[1]}, found {trl.__version__}; run "
                "tests/adapters/test_trl_internals.py to check the internals it relies on",
                stacklevel=2,
            )
        if isinstance(shaping_gamma, bool) or not shaping_gamma > 0:
            raise ValueError(f"shaping_gamma must be > 0, got {shaping_gamma!r}")
        self.shaping_gamma = float(shaping_gamma)
        self.drop_zero_advantage = bool(drop_zero_advantage)
        self.trim_padding = bool(trim_padding)
        self._captured_logps: list[torch.Tensor] | None = None
        super().__init__(*args, **kwargs)
        if self.rollout_func is None:
            raise ValueError(
                "TokenAdvantageGRPOTrainer needs "
                "rollout_func=make_rollout_func(..., advantages=AdvantageConfig(...))"
            )

    # ------------------------------------------------------------------ batch
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        # TRL merged the rollout_func's extra fields into each input row (for reward functions)
        if "token_advantages" not in inputs[0]:
            raise ValueError(
                "the rollout_func returned no token_advantages: build it with "
                "agent_envs.adapters.trl.make_rollout_func(..., advantages=AdvantageConfig(...))"
            )
        completion_ids = output["completion_ids"]
        advantages = torch.zeros(completion_ids.shape, dtype=torch.float32)
        for row, example in enumerate(inputs):
            values = example["token_advantages"]
            if len(values) > completion_ids.size(1):
                raise ValueError(
                    f"row {row} has {len(values)} token advantages for "
                    f"{completion_ids.size(1)} completion positions"
                )
            advantages[row, : len(values)] = torch.tensor(values, dtype=torch.float32)
        device = completion_ids.device
        output["advantages"] = advantages.to(device)
        off_policy = torch.tensor([bool(example["off_policy"]) for example in inputs])
        output["off_policy"] = off_policy.to(device)
        recovery = torch.tensor([float(bool(example.get("replayed_turns"))) for example in inputs])
        if self.drop_zero_advantage:
            self._drop_zero_advantage_rows(output)
        self._log_batch(output, recovery.to(device))
        return output

    def _drop_zero_advantage_rows(self, output: dict[str, Any]) -> None:
        """Zero the loss mask of rows without a non-zero advantage and recount the batch's
        loss tokens (TRL counted them before the advantages were known)."""
        flat = (output["advantages"] == 0).all(dim=1)
        key = "tool_mask" if "tool_mask" in output else "completion_mask"
        output[key] = output[key] * (~flat).unsqueeze(1).to(output[key].dtype)
        output["num_items_in_batch"] = self.accelerator.gather(_loss_mask(output).sum()).sum()
        mode = "train" if self.model.training else "eval"
        share = self.accelerator.gather(flat.float()).mean().item()
        self._metrics[mode]["episodes/zero_advantage_fraction"].append(share)

    def _log_batch(self, output: dict[str, Any], recovery: torch.Tensor) -> None:
        mode = "train" if self.model.training else "eval"
        mask = _loss_mask(output).float()
        values = output["advantages"] * mask
        totals = torch.stack([values.sum(), (values * values).sum(), mask.sum()])
        total, squares, count = self.accelerator.reduce(totals, reduction="sum").tolist()
        metrics = self._metrics[mode]
        if count:
            mean = total / count
            metrics["advantages/token_mean"].append(mean)
            metrics["advantages/token_std"].append(max(squares / count - mean * mean, 0.0) ** 0.5)
        off_policy = self.accelerator.gather(output["off_policy"].float())
        metrics["off_policy/fraction"].append(off_policy.mean().item())
        recovery = self.accelerator.gather(recovery)
        metrics["off_policy/recovery_fraction"].append(recovery.mean().item())

    # ------------------------------------------------------------------- loss
    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **multimodal: Any,
    ) -> Any:
        images = any(value is not None for value in multimodal.values())
        if images or not self.trim_padding:  # TRL's own pass
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy,
                compute_aux_loss, **multimodal,
            )  # fmt: skip
        else:
            result = self._trimmed_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size or len(input_ids),
                compute_entropy, compute_aux_loss,
            )  # fmt: skip
        if self._captured_logps is not None:
            self._captured_logps.append(result[0])
        return result

    def _trimmed_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int,
        compute_entropy: bool,
        compute_aux_loss: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """TRL's pass, chunk by chunk (``batch_size`` rows), each chunk cut to its own rows'
        span: TRL pads the whole generation batch to its longest prompt (left) and longest
        completion (right) and splits it into passes without trimming, so a pass over short
        episodes ran the positions of the longest. A column that is padding on every row of
        the chunk changes no real token's output (causal attention; the left cut shifts every
        position of a row alike, which rotary embeddings do not see), so the chunk's
        log-probabilities are TRL's; the cut completion columns come back as 0."""
        super_pass = super()._get_per_token_logps_and_entropies
        width = input_ids.size(1)
        logps, entropies, aux_losses = [], [], []
        for start in range(0, len(input_ids), batch_size):
            ids, mask = (
                input_ids[start : start + batch_size],
                attention_mask[start : start + batch_size],
            )
            used = mask.any(dim=0).nonzero().flatten()
            if len(used) == 0:
                first, last = width - logits_to_keep, width - 1
            else:
                first, last = int(used[0]), int(used[-1])
            first = min(first, width - logits_to_keep)  # keep every scored position
            last = max(last, width - logits_to_keep)  # and at least one completion column
            keep = logits_to_keep - (width - 1 - last)
            chunk = super_pass(
                model, ids[:, first : last + 1], mask[:, first : last + 1], keep, len(ids),
                compute_entropy, compute_aux_loss,
            )  # fmt: skip
            cut = logits_to_keep - keep
            logps.append(torch.nn.functional.pad(chunk[0], (0, cut)))
            if compute_entropy:
                entropies.append(torch.nn.functional.pad(chunk[1], (0, cut)))
            if compute_aux_loss:
                aux_losses.append(chunk[2])
        return (
            torch.cat(logps),
            torch.cat(entropies) if compute_entropy else None,
            torch.stack(aux_losses).mean() if compute_aux_loss else None,
        )

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        off_policy = inputs.get("off_policy")
        if off_policy is None or not bool(off_policy.any()):
            return super()._compute_loss(model, inputs)
        if self.loss_type not in LUFFY_LOSS_TYPES:
            raise ValueError(
                f"off-policy rows need loss_type in {LUFFY_LOSS_TYPES}, got {self.loss_type!r}"
            )
        advantages = inputs["advantages"]
        on_policy = (~off_policy).unsqueeze(1).to(advantages.dtype)
        self._captured_logps = []
        try:
            loss = super()._compute_loss(model, {**inputs, "advantages": advantages * on_policy})
            (per_token_logps,) = self._captured_logps
        finally:
            self._captured_logps = None
        mask = _loss_mask(inputs)
        shaped = policy_shaping(torch.exp(per_token_logps), self.shaping_gamma)
        per_token_loss = -shaped * advantages * (1.0 - on_policy)
        loss = loss + self._normalise(per_token_loss, mask, inputs)
        mode = "train" if self.model.training else "eval"
        off_mask = mask * (1.0 - on_policy)
        totals = torch.stack([(shaped.detach() * off_mask).sum(), off_mask.sum().float()])
        totals = self.accelerator.reduce(totals, reduction="sum")
        self._metrics[mode]["off_policy/shaping_mean"].append(
            (totals[0] / totals[1].clamp(min=1.0)).item()
        )
        return loss

    def _normalise(
        self, per_token_loss: torch.Tensor, mask: torch.Tensor, inputs: dict[str, Any]
    ) -> torch.Tensor:
        """``per_token_loss`` aggregated as TRL 1.16 aggregates its own for ``loss_type``."""
        training = self.model.training
        accumulation = self.current_gradient_accumulation_steps if training else 1.0
        masked = per_token_loss * mask
        if self.loss_type == "grpo":
            return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accumulation
        if self.loss_type == "bnpo":
            return masked.sum() / mask.sum().clamp(min=1.0) / accumulation
        if self.loss_type == "dr_grpo":
            return (
                masked.sum() / (per_token_loss.size(0) * self.max_completion_length) / accumulation
            )
        # "dapo": the generation batch's token count, rescaled to one accumulation window
        normaliser = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
        if training:
            normaliser = normaliser * accumulation / self.args.steps_per_generation
        return masked.sum() / normaliser
