"""Latency metrics: per-request TTFT, ITL, TPOT and E2E latency, aggregates with ``vllm bench serve``'s keys, and
time series of a run.

May import :mod:`planner.serving` (request records) and :mod:`planner.errors`.
"""
