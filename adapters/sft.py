"""SFT export: expert (oracle) trajectories as chat datasets for TRL's ``SFTTrainer``.

Two row formats, both with assistant-only loss:

- ``"messages"``: one row per episode, ``{"messages": [system, user, assistant, ...]}`` up to
  the last reply. Train with ``SFTConfig(assistant_only_loss=True)``; TRL then needs a chat
  template that marks assistant text with ``{% generation %}``: :func:`sft_chat_template`
  returns one for the tokenizer (its own when it has the markers, the embedded SmolLM2's with
  markers added, or TRL's training template for the models TRL knows), which renders exactly
  the same text. The loss then covers each reply and its end-of-turn token, nothing else::

      tokenizer.chat_template = sft_chat_template(tokenizer)
      trainer = SFTTrainer(model=model, processing_class=tokenizer,
                           train_dataset=make_sft_dataset("grl/Sokoban-v0", range(500)),
                           args=SFTConfig(assistant_only_loss=True, ...))

- ``"prompt_completion"``: one row per turn, ``{"prompt": history up to the observation,
  "completion": [the reply]}``. TRL's default ``completion_only_loss`` trains on the reply
  (and whatever the template writes after it), with any chat template.

Every row also has ``env_id``, ``seed`` and ``episode_return`` (``SFTTrainer`` drops columns it
does not use). By default only successful episodes are kept (an oracle that fails — a budget
too small for the optimal plan — is not expert data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_envs.adapters.engines.scripted import oracle_engine
from agent_envs.adapters.loop.collector import collect_episodes

from agent_envs.core.records import Trajectory

__all__ = [
    "SMOLLM2_CHAT_TEMPLATE",
    "collect_oracle_trajectories",
    "make_sft_dataset",
    "sft_chat_template",
    "sft_rows",
]

_FORMATS = ("messages", "prompt_completion")

#: The chat template of the embedded SmolLM2-135M-Instruct (ChatML with a default system
#: prompt), as its GGUF file carries it.
SMOLLM2_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_CHATML_MESSAGE = (
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
)
#: Assistant content and its <|im_end|> inside {% generation %}: the tokens the model samples.
_CHATML_TRAINING_MESSAGE = (
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\n' }}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{ '\n' }}"
    "{% else %}" + _CHATML_MESSAGE + "{% endif %}"
)
_TRAINING_TEMPLATES = {
    SMOLLM2_CHAT_TEMPLATE: SMOLLM2_CHAT_TEMPLATE.replace(_CHATML_MESSAGE, _CHATML_TRAINING_MESSAGE)
}


def sft_chat_template(tokenizer: Any) -> str:
    """A chat template for ``SFTConfig(assistant_only_loss=True)``: it renders the same text
    as the tokenizer's own and marks each assistant reply and its end-of-turn token with
    ``{% generation %}``. Raises ``ValueError`` for a template it cannot mark (use the
    ``"prompt_completion"`` format then)."""
    template = tokenizer.chat_template
    if isinstance(template, str) and "{% generation %}" in template:
        return template
    if template in _TRAINING_TEMPLATES:
        return _TRAINING_TEMPLATES[template]
    from trl.chat_template_utils import get_training_chat_template

    try:
        training = get_training_chat_template(tokenizer)
    except ValueError as error:
        raise ValueError(
            "no chat template with {% generation %} markers is known for this tokenizer; use "
            "format='prompt_completion' (completion-only loss) or set one"
        ) from error
    return template if training is None else training


def collect_oracle_trajectories(
    env_id: str, seeds: Iterable[int], *, rationale: bool = False, **env_kwargs: Any
) -> list[Trajectory]:
    """One oracle episode per seed (text only: no tokenizer is involved); ``rationale``: each
    reply writes the oracle's worked reasoning before its answer, where the env has one
    (``TextEnv.oracle_rationale``: GSM8K's solution steps)."""
    engine = oracle_engine(rationale=rationale)
    return collect_episodes(env_id, engine, list(seeds), **env_kwargs)


def sft_rows(
    trajectories: Iterable[Trajectory],
    *,
    format: str = "messages",
    only_successful: bool = True,
) -> list[dict[str, Any]]:
    """Rows of ``format`` (see the module docstring) from trajectories."""
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, got {format!r}")
    rows: list[dict[str, Any]] = []
    for trajectory in trajectories:
        if only_successful and not trajectory.success:
            continue
        if not trajectory.steps:
            continue
        # system, (user, assistant) per turn, final user: drop the final observation
        messages = [dict(message) for message in trajectory.messages[:-1]]
        common = {
            "env_id": trajectory.env_id,
            "seed": trajectory.seed,
            "episode_return": trajectory.episode_return,
        }
        if format == "messages":
            rows.append({"messages": messages, **common})
            continue
        for index, message in enumerate(messages):
            if message["role"] == "assistant":
                rows.append({"prompt": messages[:index], "completion": [message], **common})
    return rows


def make_sft_dataset(
    env_id: str,
    seeds: Iterable[int],
    *,
    format: str = "messages",
    only_successful: bool = True,
    rationale: bool = False,
    **env_kwargs: Any,
) -> Any:
    """A ``datasets.Dataset`` of oracle demonstrations of ``env_id`` for ``seeds`` (with the
    oracle's worked reasoning before each answer: ``rationale``)."""
    import datasets

    rows = sft_rows(
        collect_oracle_trajectories(env_id, seeds, rationale=rationale, **env_kwargs),
        format=format,
        only_successful=only_successful,
    )
    if not rows:
        raise ValueError(f"the oracle solved none of the episodes of {env_id} for these seeds")
    return datasets.Dataset.from_list(rows)
