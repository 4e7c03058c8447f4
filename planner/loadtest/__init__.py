"""Load tests with ``vllm bench serve``'s semantics: the settings, workloads (synthetic prompts, generated workloads
with shared prefixes, conversations and traces, workload files), the schedule, the one runner, sweeps and where they
stop, repeats and their confidence intervals, the highest rate under percentile SLOs (``max_rate``), the worker
processes, the runner's measured requests on Ray worker actors (``ray_workers``), result files and figures.

May import :mod:`planner.serving`, :mod:`planner.metrics` and :mod:`planner.errors`; of the link package only
:mod:`planner.links.rules` (a leaf module: the text rules of numbers, which the goodput format in ``settings`` uses).
Ray (optional, ``requirements-ray.txt``) only inside :mod:`planner.loadtest.ray_workers`'s functions.
"""
