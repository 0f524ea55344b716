"""The leaderboard, the project's main job: agents x envs x published seed lists.

One package in four rooms: :mod:`~agent_envs.benchmarks.leaderboard.run` plays a run and
writes it (agents, seeds, presets, the manifest; its docstring describes a run folder),
:mod:`~agent_envs.benchmarks.leaderboard.replay` replays recorded episodes for ``--validate``,
:mod:`~agent_envs.benchmarks.leaderboard.stats` computes the summaries (Wilson intervals,
random-normalized scores with their mean and IQM under a stratified bootstrap, paired
comparisons), and :mod:`~agent_envs.benchmarks.leaderboard.report` writes the Markdown and HTML
pages. Command line: ``agent-envs leaderboard`` (``python -m agent_envs.benchmarks.leaderboard``;
``--validate RUN_DIR`` checks a run, ``--rewrite RUN_DIR`` rebuilds its summary and pages).
"""

from agent_envs.benchmarks.leaderboard.run import (
    PRESETS,
    AgentSpec,
    Args,
    build_reports,
    eval_seeds,
    main,
    make_engine,
    parse_args,
    read_episodes,
    resolve,
    rewrite,
    summary_of,
    validate,
)

__all__ = [
    "PRESETS",
    "AgentSpec",
    "Args",
    "build_reports",
    "eval_seeds",
    "main",
    "make_engine",
    "parse_args",
    "read_episodes",
    "resolve",
    "rewrite",
    "summary_of",
    "validate",
]
