"""Leaderboard and throughput scripts; committed result tables live in ``benchmarks/results/``."""
