"""``SharedPrefixSFTTrainer``: TRL's ``SFTTrainer`` that runs a batch's shared prompt prefix once.

Every row of an env's SFT data starts with the same tokens: the chat template's opening and the
env's system prompt (about 190 of a Sokoban row's 240 tokens). ``SFTTrainer`` runs them through
the model once per row. This subclass runs each group of rows that share a prefix as::

    prefix (1 row, with gradients)  ──►  its KV cache, expanded to the group's rows
    suffixes (the group's rows)     ──►  attend to that cache; TRL's fused LM head scores them

The loss and the gradients are the same as ``SFTTrainer``'s (the expanded cache's gradients sum
over the rows, as the per-row prefixes' would); only the prefix's repeated compute is gone. On
SmolLM2-135M with LoRA and batches of 8 Sokoban rows a step takes 3.4-3.8x less CPU than
``SFTTrainer``'s (``benchmarks/results/sft_shared_prefix.md``).

Rows are grouped greedily: a row joins the first group whose leading row shares at least
``min_prefix`` tokens with it; the group's prefix is what all its rows share, cut back to end
before the first scored token. A batch that has no such group, an eval step, a label-smoothed
or non-``"nll"`` loss, padding-free batches, gradient checkpointing (TRL's default: turn it off
with ``gradient_checkpointing=False``) and models with auxiliary losses take
``SFTTrainer``'s own path unchanged.

Logged besides ``SFTTrainer``'s metrics: ``shared_prefix/tokens_saved``, the fraction of the
batch's (unpadded) tokens that the shared prefixes kept from running.

Supported TRL: the ``train`` extra's range (1.16.x): the fused LM head (``fused_lm_head=True``)
and the batch keys (``input_ids``, ``attention_mask``, ``labels``) this relies on are checked by
``tests/adapters/test_trl_internals.py``.
"""

from __future__ import annotations

from typing import Any

from agent_envs.optional import require

# The trainer subclasses TRL's SFTTrainer, so importing this module needs the [train] extra
# (the package agent_envs.adapters.trl does not import it).
torch = require("torch", "train", needed_by="SharedPrefixSFTTrainer")
DynamicCache = require("transformers", "train", needed_by="SharedPrefixSFTTrainer").DynamicCache
SFTTrainer = require("trl", "train", needed_by="SharedPrefixSFTTrainer").SFTTrainer

__all__ = ["SharedPrefixSFTTrainer", "shared_prefix_groups"]


def shared_prefix_groups(
    input_ids: torch.Tensor, labels: torch.Tensor, *, min_prefix: int = 32
) -> list[tuple[list[int], int]]:
    """Rows of a right-padded batch grouped by a shared prefix: ``[(rows, prefix_length)]``.

    A row joins the first group whose leading row agrees with it on at least ``min_prefix``
    leading tokens. A group's prefix is the tokens all its rows share, cut back so that no
    position inside it, nor the first one after it, carries a label (the first suffix token's
    label is predicted from the prefix's last position, which the suffix pass does not see).
    A group whose prefix would be shorter than ``min_prefix`` is dropped: its rows are left out.
    """
    rows = input_ids.shape[0]
    scored = labels != -100
    # first scored position of each row (the row's length if none)
    none = torch.full((rows,), labels.shape[1], device=labels.device)
    first_label = torch.where(scored.any(dim=1), scored.int().argmax(dim=1), none)
    groups: list[tuple[list[int], int]] = []
    for row in range(rows):
        for index, (members, length) in enumerate(groups):
            leader = members[0]
            agree = int((input_ids[leader, :length] == input_ids[row, :length]).cumprod(0).sum())
            if agree >= min_prefix:
                groups[index] = ([*members, row], agree)
                break
        else:
            groups.append(([row], input_ids.shape[1]))
    out = []
    for members, length in groups:
        # keep at least the first scored token, and the one before it, outside the prefix
        length = min(length, *(int(first_label[row]) - 1 for row in members))
        if len(members) > 1 and length >= min_prefix:
            out.append((members, length))
    return out


class SharedPrefixSFTTrainer(SFTTrainer):
    """``SFTTrainer`` whose training loss runs each shared prompt prefix once per batch.

    Takes ``SFTTrainer``'s arguments and ``min_prefix`` (the fewest shared leading tokens that
    make a group; default 32). Rows left out of every group are scored in one ordinary pass.
    """

    def __init__(self, *args: Any, min_prefix: int = 32, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.min_prefix = min_prefix

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        plain = (
            return_outputs
            or not model.training
            or self.args.gradient_checkpointing  # its recomputation would refill the cache
            or self.aux_loss_enabled
            or self.compute_loss_func is not None
            or self.label_smoother is not None
            or self.args.loss_type != "nll"
            or set(inputs) - {"input_ids", "attention_mask", "labels"}
            or "attention_mask" not in inputs
        )
        groups = (
            []
            if plain
            else shared_prefix_groups(
                inputs["input_ids"], inputs["labels"], min_prefix=self.min_prefix
            )
        )
        if not groups:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

        input_ids, attention_mask, labels = (
            inputs["input_ids"],
            inputs["attention_mask"],
            inputs["labels"],
        )
        grouped = {row for members, _ in groups for row in members}
        rest = [row for row in range(input_ids.shape[0]) if row not in grouped]
        log_prob_sum = input_ids.new_zeros((), dtype=torch.float32)
        entropy_sum = is_top1_sum = label_count = tokens_run = 0
        parts: list[tuple[list[int], int]] = [*groups, *([(rest, 0)] if rest else [])]
        for members, length in parts:
            tokens_run += int(attention_mask[members].sum()) - length * (len(members) - 1)
            outputs = self._suffix_outputs(
                model, input_ids[members], attention_mask[members], labels[members], length
            )
            log_prob_sum = log_prob_sum + outputs.log_probs.sum()
            mask = outputs.label_mask
            label_count += int(mask.sum())
            if outputs.entropy is not None:
                entropy_sum += float(outputs.entropy.detach().sum())
            if outputs.is_top1 is not None:
                is_top1_sum += int(outputs.is_top1.sum())
        num_tokens = label_count if num_items_in_batch is None else num_items_in_batch
        loss = -log_prob_sum / torch.as_tensor(num_tokens).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())

        metrics = self._metrics["train"]
        metrics["entropy"].append(entropy_sum / label_count if label_count else 0.0)
        metrics["mean_token_accuracy"].append(is_top1_sum / label_count if label_count else 0.0)
        batch_tokens = int(attention_mask.sum())
        self._total_train_tokens += batch_tokens
        metrics["shared_prefix/tokens_saved"].append(1 - tokens_run / batch_tokens)
        metrics["num_tokens"] = [self._total_train_tokens]
        return loss

    @staticmethod
    def _suffix_outputs(
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor,
        prefix_length: int,
    ) -> Any:
        """TRL's fused outputs for rows whose first ``prefix_length`` tokens are equal: the
        prefix runs once (batch of one), its cache is expanded to the rows."""
        if prefix_length == 0:
            return model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                labels=labels,
                fused_lm_head=True,
                use_cache=False,
            )
        rows = input_ids.shape[0]
        prefix = model(
            input_ids=input_ids[:1, :prefix_length],
            attention_mask=attention_mask[:1, :prefix_length],
            use_cache=True,
            logits_to_keep=1,
        ).past_key_values
        cache = DynamicCache(
            [
                (layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1))
                for layer in prefix.layers
            ]
        )
        length = input_ids.shape[1]
        positions = torch.arange(prefix_length, length, device=input_ids.device)
        return model(
            input_ids=input_ids[:, prefix_length:],
            attention_mask=attention_mask,
            position_ids=positions.unsqueeze(0).expand(rows, -1),
            past_key_values=cache,
            labels=labels[:, prefix_length:],
            fused_lm_head=True,
        )
