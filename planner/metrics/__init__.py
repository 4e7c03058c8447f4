"""Latency metrics: per-request TTFT, ITL, TPOT and E2E latency, aggregates with ``vllm bench serve``'s keys, and
time series of a run, and percentile SLOs checked against a run (:mod:`planner.metrics.slo`).

May import :mod:`planner.serving` (request records), :mod:`planner.errors`, :mod:`planner.parsing` (a leaf module:
the rules of numbers in a user's file) and :mod:`planner.values` (the ground floor's text rules of numbers, which the
SLO format uses).
"""
