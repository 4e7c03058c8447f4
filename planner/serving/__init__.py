"""Talking to serving endpoints: the endpoint list, discovery (``/v1/models``, ``/info``, ``/tokenize``), the
server's ``/metrics``, SSE decoding and payload normalisation into request records, and the client backends.

May import :mod:`planner.errors`; never capacity, catalog, load-test, compare or link code.
"""
