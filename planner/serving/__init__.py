"""Talking to serving endpoints: the endpoint list, discovery (``/v1/models``, ``/info``, ``/tokenize``), the
server's ``/metrics``, SSE decoding and payload normalisation into request records, and the client backends.

Two HTTP clients, each where it is measured to belong: ``httpx2`` (the client the openai and huggingface_hub SDKs run
on) for discovery, tokenizer routes and ``/metrics``, and through the SDK backends; ``aiohttp`` (``vllm bench
serve``'s client) for the load path, :mod:`~planner.serving.backends.aiohttp_lean`, where it costs about a fifth of
``httpx2``'s client CPU per streamed event (``python bench/http_clients.py`` measures it).

May import the ground floor (:mod:`planner.errors`, :mod:`planner.parsing`, :mod:`planner.values`);
never capacity, catalog, load-test, compare or link code.
"""
