"""Engine models of start-up memory accounting: vLLM (by version; its memory mechanisms in ``vllm_memory``, the
constants fitted to logs in ``vllm_fitted``), TGI and the article's rule of thumb.

May import the rest of :mod:`planner.capacity` and :mod:`planner.catalog`.
"""
