"""Every registered ``grl/*`` id, in one greppable place.

Entry points are strings, so registering imports no env module; kwargs are JSON-serialisable.

The turn budget is one argument, ``max_turns``: ``gymnasium.make(id, max_turns=10)`` and
``gymnasium.make_vec(id, num_envs=n, max_turns=10)`` both give 10-turn episodes, which the env
itself truncates with ``info["truncation_reason"] == "max_turns"``. Ids are therefore
registered without ``max_episode_steps``: a registered value would make ``gymnasium.make`` wrap
the env in a ``TimeLimit`` that cuts at the registered budget whatever ``max_turns`` says, and
gives no truncation reason. ``make_vec`` also reads ``max_episode_steps=k`` as ``max_turns=k``
(and refuses the two with different values); in ``gymnasium.make`` it is Gymnasium's own
``TimeLimit`` on top of the env, so pass ``max_turns`` instead.
"""

from __future__ import annotations

from typing import Any

import gymnasium

__all__ = ["PRESETS", "VISION_OF", "register_all"]

_SOKOBAN = "agent_envs.envs.sokoban.env:SokobanEnv"
_SOKOBAN_VECTOR = "agent_envs.envs.sokoban:make_vector_env"
_BLOCKSWORLD = "agent_envs.envs.blocksworld.env:BlocksworldEnv"
_BLOCKSWORLD_VECTOR = "agent_envs.envs.blocksworld:make_vector_env"
_GSM8K = "agent_envs.envs.gsm8k.env:GSM8KEnv"
_GSM8K_VECTOR = "agent_envs.envs.gsm8k:make_vector_env"
_TETRIS = "agent_envs.envs.tetris.env:TetrisEnv"
_TETRIS_VECTOR = "agent_envs.envs.tetris:make_vector_env"
_GRL_TETRIS = dict(
    rules="grl", goal_lines=1, max_turns=11, max_actions_per_turn=5, max_actions_per_episode=40
)
_BIRD = "agent_envs.envs.bird.env:BirdEnv"
_BIRD_VECTOR = "agent_envs.envs.bird:make_vector_env"
_WEBSHOP = "agent_envs.envs.webshop.env:WebShopEnv"
_WEBSHOP_VECTOR = "agent_envs.envs.webshop:make_vector_env"
_GRL_BLOCKSWORLD_BUDGET = dict(max_turns=11, max_actions_per_turn=5, max_actions_per_episode=20)

#: id → (entry point, vector entry point, kwargs); ``max_turns`` is the turn budget.
PRESETS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # GRL's Sokoban: 6x6 room, 1 box, 6 turns, 5 actions per turn, 10 per episode.
    "grl/Sokoban-v0": (
        _SOKOBAN,
        _SOKOBAN_VECTOR,
        dict(width=6, height=6, num_boxes=1, max_turns=6, max_actions_per_turn=5,
             max_actions_per_episode=10),
    ),
    "grl/Sokoban-8x8-v0": (
        _SOKOBAN,
        _SOKOBAN_VECTOR,
        dict(width=8, height=8, num_boxes=1, max_turns=10, max_actions_per_turn=5,
             max_actions_per_episode=50),
    ),
    "grl/Sokoban-8x8-2box-v0": (
        _SOKOBAN,
        _SOKOBAN_VECTOR,
        dict(width=8, height=8, num_boxes=2, max_turns=20, max_actions_per_turn=5,
             max_actions_per_episode=100),
    ),
    "grl/Sokoban-10x10-3box-v0": (
        _SOKOBAN,
        _SOKOBAN_VECTOR,
        dict(width=10, height=10, num_boxes=3, max_turns=30, max_actions_per_turn=5,
             max_actions_per_episode=150),
    ),
    # The full game: 10x20, 7 tetrominoes (7-bag), rotation with simple kicks, gravity per turn.
    "grl/Tetris-v0": (
        _TETRIS,
        _TETRIS_VECTOR,
        dict(width=10, height=20, pieces="tetromino", rules="standard", goal_lines=10,
             max_turns=100, max_actions_per_turn=10, max_actions_per_episode=None),
    ),
    # GRL's small boards: no rotation, -0.1 per action, +10 per line, success = one line.
    "grl/Tetris-4x4-cell-v0": (
        _TETRIS, _TETRIS_VECTOR, dict(width=4, height=4, pieces="cell", **_GRL_TETRIS)
    ),
    "grl/Tetris-3x3-domino-v0": (
        _TETRIS, _TETRIS_VECTOR, dict(width=3, height=3, pieces="domino", **_GRL_TETRIS)
    ),
    "grl/Tetris-4x4-domino-v0": (
        _TETRIS, _TETRIS_VECTOR, dict(width=4, height=4, pieces="domino", **_GRL_TETRIS)
    ),
    # GRL's Blocksworld: 11 turns, 5 actions per turn, 20 per episode; text, 1d and 2d views.
    "grl/Blocksworld-v0": (
        _BLOCKSWORLD,
        _BLOCKSWORLD_VECTOR,
        dict(num_blocks=3, observation_mode="text", **_GRL_BLOCKSWORLD_BUDGET),
    ),
    "grl/Blocksworld-4-v0": (
        _BLOCKSWORLD,
        _BLOCKSWORLD_VECTOR,
        dict(num_blocks=4, observation_mode="text", **_GRL_BLOCKSWORLD_BUDGET),
    ),
    "grl/Blocksworld-5-v0": (
        _BLOCKSWORLD,
        _BLOCKSWORLD_VECTOR,
        dict(num_blocks=5, observation_mode="text", **_GRL_BLOCKSWORLD_BUDGET),
    ),
    "grl/Blocksworld-1d-v0": (
        _BLOCKSWORLD,
        _BLOCKSWORLD_VECTOR,
        dict(num_blocks=3, observation_mode="1d", **_GRL_BLOCKSWORLD_BUDGET),
    ),
    "grl/Blocksworld-2d-v0": (
        _BLOCKSWORLD,
        _BLOCKSWORLD_VECTOR,
        dict(num_blocks=3, observation_mode="2d", **_GRL_BLOCKSWORLD_BUDGET),
    ),
    # GRL's GSM8K single-turn and 5-turn retry variants, on the offline problem generator;
    # real data: gymnasium.make(id, source="jsonl", data_path=..., split=...) or source="hf".
    "grl/GSM8K-v0": (
        _GSM8K,
        _GSM8K_VECTOR,
        dict(source="generated", split="train", answer_mode="strict", max_turns=1),
    ),
    "grl/GSM8K-5turn-v0": (
        _GSM8K,
        _GSM8K_VECTOR,
        dict(source="generated", split="train", answer_mode="strict", max_turns=5),
    ),
    # BIRD text-to-SQL on the built-in generated databases (real data: data_path=, db_root=).
    # Single shot (GRL), agentic (up to 5 EXECUTEs, then SUBMIT), and GRL's 5-turn variant
    # whose reward halves with each extra submission.
    "grl/BIRD-v0": (_BIRD, _BIRD_VECTOR, dict(max_turns=1)),
    "grl/BIRD-Agentic-v0": (_BIRD, _BIRD_VECTOR, dict(max_executions=5, max_turns=6)),
    "grl/BIRD-5turn-v0": (
        _BIRD, _BIRD_VECTOR, dict(max_submissions=5, submit_discount=0.5, max_turns=5)
    ),
    # WebShop on the built-in generated catalog (WebShop's files: data_path=); 15 turns, one
    # search[...] or click[...] per turn; WebShop's [SEP] text or a readable page style.
    "grl/WebShop-v0": (
        _WEBSHOP,
        _WEBSHOP_VECTOR,
        dict(observation_mode="text", goals="synthetic", split="train", max_turns=15),
    ),
    "grl/WebShop-readable-v0": (
        _WEBSHOP,
        _WEBSHOP_VECTOR,
        dict(observation_mode="readable", goals="synthetic", split="train", max_turns=15),
    ),
}  # fmt: skip

_VISION = "agent_envs.core.vision:VisionEnv"
_VISION_VECTOR = "agent_envs.core.vision:make_vector_env"
#: Image+text ids (`agent_envs.core.vision.VisionEnv`): the text id's env and settings, with
#: the rendered frame in every observation.
VISION_OF = {
    "grl/Sokoban-vision-v0": "grl/Sokoban-v0",
    "grl/Sokoban-8x8-vision-v0": "grl/Sokoban-8x8-v0",
    "grl/Tetris-vision-v0": "grl/Tetris-v0",
    "grl/Tetris-4x4-cell-vision-v0": "grl/Tetris-4x4-cell-v0",
    "grl/Blocksworld-vision-v0": "grl/Blocksworld-v0",
}
for _vision_id, _text_id in VISION_OF.items():
    _entry, _, _kwargs = PRESETS[_text_id]
    PRESETS[_vision_id] = (_VISION, _VISION_VECTOR, dict(base=_entry, **_kwargs))


def register_all() -> None:
    """Register every preset with Gymnasium (idempotent)."""
    for env_id, (entry_point, vector_entry_point, kwargs) in PRESETS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point=entry_point,
            vector_entry_point=vector_entry_point,
            kwargs=dict(kwargs),
        )
