"""Load tests with ``vllm bench serve``'s semantics: the settings, workloads (synthetic prompts, generated workloads
with shared prefixes, conversations and traces, workload files), the schedule, the one runner, sweeps and where they
stop, repeats and their confidence intervals, the highest rate under percentile SLOs (``max_rate``), the worker
processes, the runner's measured requests on Ray worker actors (``ray_workers``), result files and figures.

May import :mod:`planner.serving`, :mod:`planner.metrics` and the ground floor (:mod:`planner.errors`,
:mod:`planner.values`: the text rules the goodput format uses, :mod:`planner.fields`: each setting's declaration);
never :mod:`planner.links`.
Ray (optional, ``requirements-ray.txt``) only inside :mod:`planner.loadtest.ray_workers`'s functions.
"""
