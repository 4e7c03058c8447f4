"""Latency metrics: per-request TTFT, ITL, TPOT and E2E latency, aggregates with ``vllm bench serve``'s keys, and
time series of a run, and SLOs checked against a run (:mod:`planner.metrics.slo`).

Each quantity has one definition here that the rest of the package calls: TPOT
(:func:`planner.metrics.latency.tpot_s`), percentiles (:func:`planner.metrics.latency.percentiles`), and the SLO
type and its parser (:class:`planner.metrics.slo.Slo`, :func:`planner.metrics.slo.parse_slos`: percentile SLOs and
vLLM's per-request goodput SLOs).

May import :mod:`planner.serving` (request records), :mod:`planner.errors`, :mod:`planner.parsing` (a leaf module:
the rules of numbers in a user's file) and :mod:`planner.values` (the ground floor's text rules of numbers, which the
SLO format uses).
"""
