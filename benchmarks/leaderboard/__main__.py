"""``python -m agent_envs.benchmarks.leaderboard``: the same as ``agent-envs leaderboard``."""

from agent_envs.benchmarks.leaderboard.run import main, parse_args

if __name__ == "__main__":
    main(parse_args())
