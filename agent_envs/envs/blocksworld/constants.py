"""Blocksworld numbers: the table, the observation modes, GRL's rewards, the size limits."""

from __future__ import annotations

TABLE = 0
"""What a block on the table sits on (GRL's 1d encoding: block ``i`` sits on ``state[i - 1]``)."""

OBSERVATION_MODES = ("text", "1d", "2d")
"""``text``: one sentence per block; ``1d``: the support list; ``2d``: ASCII stacks."""

MOVE_REWARD = -1.0
"""Paid by a legal move that does not reach the goal (GRL)."""
GOAL_REWARD = 10.0
"""Paid, in place of `MOVE_REWARD`, by the move that reaches the goal (GRL)."""
ILLEGAL_MOVE_PENALTY = -1.0
"""GRL's reward for an illegal move; the env's default ``invalid_action_penalty``."""
UNPARSEABLE_PENALTY = -5.0
"""GRL's reward for an action it cannot read; the env's default ``format_penalty``."""

MIN_BLOCKS = 2
"""Fewer blocks have a single state, so no (start, goal) pair with start != goal."""
MAX_BLOCKS = 8
"""Block numbers stay one digit (the 2d drawing is one character wide per block) and the
breadth-first solver stays fast (8 blocks: 394,353 states)."""
