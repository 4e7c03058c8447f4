"""Predicted latency and throughput: a step-time model, a continuous-batching simulator and its calibration.

* :mod:`planner.predict.shape`: what one engine step touches on one GPU of a planned deployment (weight bytes,
  KV bytes per token by attention group, FLOPs per token, experts, the TP all-reduce), from the capacity plan.
* :mod:`planner.predict.step_time`: the time of one engine step as a sum of named terms, each a physical quantity
  over a catalog rate times a coefficient (:class:`~planner.predict.step_time.StepCoefficients`).
* :mod:`planner.predict.simulator`: vLLM V1's scheduler (chunked prefill, ``max_num_seqs``, KV-block admission,
  preemption) driven by the step model, over the load test's own schedule; static batching for comparison; the
  online form the demo server plays. A package split by concern (its docstring): KV blocks, the client, scheduling
  policies behind one interface, the event-driven decode cohort, the result.
* :mod:`planner.predict.speculative`: speculative decoding: tokens per target step from per-position acceptance, the
  draft's and the verification's cost, TPOT and throughput with and without it, where it stops paying.
* :mod:`planner.predict.calibration`: least-squares fit of the coefficients to measured runs; profiles as JSON.
* :mod:`planner.predict.curves`: predicted sweeps, their knee and the load at which the KV cache saturates.
* :mod:`planner.predict.api`: :func:`~planner.predict.api.predict`, the one call pages and the CLI make.
* :mod:`planner.predict.charts`: the Performance page's figure, headline and table; measured-vs-predicted errors.

May import :mod:`planner.capacity`, :mod:`planner.catalog`, :mod:`planner.metrics`, :mod:`planner.loadtest`'s
settings, schedule, results, sweep and charts modules, the ground floor (:mod:`planner.errors`,
:mod:`planner.values`, :mod:`planner.fields`, :mod:`planner.units`); never :mod:`planner.links`, streamlit or the
serving clients.
"""
