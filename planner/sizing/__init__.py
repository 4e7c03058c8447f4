"""Sizing for a target load under SLOs: the cheapest GPU × parallelism × quantization × replicas that serves a
request rate within percentile latency SLOs, its cost per hour and per million output tokens.

* :mod:`planner.sizing.settings`: :class:`~planner.sizing.settings.SizingSettings`, the one description of a sizing
  question (model, target rate, workload, SLOs, GPUs, prices, headroom), each field declared once
  (:mod:`planner.fields`), and the text rules of its list fields.
* :mod:`planner.sizing.estimate`: which end of the predictor's error band the SLOs are checked at (``pessimistic``,
  the default, or ``point``), the same ratios for the checks and for the bounds that prune the search.
* :mod:`planner.sizing.prices`: GPU prices per hour, from the catalog (with their source) or typed by the user.
* :mod:`planner.sizing.bounds`: analytic figures of one planned deployment from the step-time model: the latency of
  a request alone (a floor no replica count lowers) and the fluid upper bound of the request rate one replica
  sustains; they order and prune the search.
* :mod:`planner.sizing.probe`: one replica simulated at one request rate (the continuous-batching simulator at the
  target workload), cached, with its SLO checks.
* :mod:`planner.sizing.replicas`: the cheapest-first search of the fewest replicas of each configuration.
* :mod:`planner.sizing.search`: :func:`~planner.sizing.search.size`, the search over configurations: every
  configuration's verdict, replicas from simulated per-replica capacity, cost, the ranked options.
* :mod:`planner.sizing.options`: what the search says of each configuration and its answer (JSON for the CLI).
* :mod:`planner.sizing.pareto`: the Pareto view's points and frontier.
* :mod:`planner.sizing.charts`: the ranked table and the Pareto figures (tokens/s per user against tokens/s per
  GPU, and against cost).

May import :mod:`planner.fleet`, :mod:`planner.predict`, :mod:`planner.deploy`, :mod:`planner.capacity`,
:mod:`planner.catalog`, :mod:`planner.metrics`, :mod:`planner.loadtest`'s settings and schedule, the ground floor
(:mod:`planner.errors`, :mod:`planner.values`, :mod:`planner.fields`, :mod:`planner.display`, :mod:`planner.palette`,
:mod:`planner.units`); never :mod:`planner.links`, streamlit or the serving clients.
"""
