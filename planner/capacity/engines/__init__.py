"""Engine models of start-up memory accounting: vLLM (by version), TGI and the article's rule of thumb.

May import the rest of :mod:`planner.capacity` and :mod:`planner.catalog`.
"""
