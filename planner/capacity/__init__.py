"""Capacity planning: will a model fit, with what KV cache and concurrency, in the engine's own terms.

Holds the scenario (the inputs), weights and KV-cache memory, the engine models (``engines/``: vLLM, TGI, the article's
rule of thumb), the plan and its advice, the result type, ready-made scenarios (``presets``: the article's scenarios and
recipes), the launch command that realises a plan (``launch``: ``vllm serve``, TGI's ``docker run``), the nodes a
deployment needs (``topology``), a vLLM plan's range over the versions still in use (``version_range``), a plan's KV
layout and its explanation in the engine's terms (``kv_layout``, ``explain``), the budget and concurrency figures, and
the shared-prefix what-if on a block pool (``prefix_sharing``). May import :mod:`planner.catalog` (model specs and
parameter counts, GPUs, the Hub), :mod:`planner.display`,
:mod:`planner.errors`, :mod:`planner.palette`, :mod:`planner.parsing` and :mod:`planner.units`; never serving,
load-test or link code.
"""
