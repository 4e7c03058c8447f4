"""The demo server: an OpenAI/vLLM/TGI-compatible streaming server with KNOWN token timing.

``python -m planner demo-server`` starts it for trying Live Compare, Load Test and the CLI without a GPU; the tests
run it as their timed server (``tests/servers/timed_sse.py`` starts it on an ephemeral port) to check what the
clients measure and what they send. It runs as its own process, so its timers do not share a GIL with the client
being measured::

    python -m planner.demo --port 0      # the tests' defaults; prints "PORT <n>" once listening

Timeline of a streamed chat request (``t0`` = request parsed by the server):

* role chunk ``delta: {"role": "assistant", "content": ""}`` at once (vLLM shape; with ``continuous_usage_stats``
  it carries ``usage.completion_tokens = 0``);
* token ``k`` (1-based) is ready at ``t0 + ttft_ms + (k − 1) · itl_ms``; defaults 150 ms and 20 ms (``--ttft-ms``,
  ``--itl-ms``); with ``--itl-per-running-ms x`` each gap grows by ``x`` per other request running at the time
  (a batch's decode step takes longer with more sequences), so latency rises with concurrency as on a real server;
* tokens are grouped into chunks of 1, 2, 1, 3, 1, 2, 1, 3, ... tokens (the first chunk always holds 1); a chunk is
  sent when its last token is ready, so every token's share of its chunk gap is exactly ``itl_ms``;
* with ``continuous_usage_stats`` every chunk carries cumulative usage (exact tokens per chunk);
* the last token chunk has its ``finish_reason`` (see "End of sequence" below); then the usage chunk
  (``choices: []``) when ``include_usage``; then ``data: [DONE]``.

The prompt selects the behaviour with bracketed options, e.g. ``"hello [mode=cut] [tokens=8]"``:

* ``tokens=N`` (default: the end of sequence below), ``ttft_ms=X``, ``itl_ms=Y`` (the server's defaults);
* ``mode=ok`` (default); ``error`` (vLLM in-stream error payload after 2 chunks, then ``[DONE]``, on HTTP 200);
  ``tgi_error`` (TGI chat in-stream error ``{"error": {"message", "http_status_code": 422}}``); ``cut`` (the
  connection is dropped after 3 chunks, mid chunked body); ``http400`` (vLLM nested context-length error body);
  ``http400_flat`` (old flat vLLM error body); ``http500``; ``hang`` (never answers);
  ``reject_continuous`` (400 naming ``continuous_usage_stats`` when it is sent, else normal).

Routes: ``GET /health``, ``/v1/models`` (``max_model_len`` 4096), ``/version``, ``/info`` (TGI), ``/metrics``
(vLLM V1 Prometheus text, below), ``POST /v1/chat/completions`` (stream or not: ``chat.completion.chunk`` events or
one ``chat.completion`` body, ``choices[0].message``), ``POST /v1/completions`` (stream or not: ``text_completion``
events or body, ``choices[0].text``; the prompt may be text or token ids), ``POST /`` and ``/generate_stream`` (TGI
native stream: one token per event, the last with ``generated_text`` and ``details``, no ``[DONE]``).

Answer length, as a real server decides it: the answer runs to ``max_tokens`` (TGI ``max_new_tokens``;
``finish_reason: "length"``), or, when the request gives none, to vLLM's default: 16 on ``/v1/completions`` (its
``CompletionRequest`` default, as OpenAI's), what the context leaves (``max_model_len`` − prompt tokens) on chat and
TGI. The placeholder model never ends its answer by itself unless the server is given an end of sequence
(``--eos-tokens N``, :data:`TEST_DEFAULTS`' 12): then an answer longer than N ends after N tokens with
``finish_reason: "stop"``, unless the request asks for ``ignore_eos`` where vLLM reads it, at the top level of the body
(the tests check that the clients send it there). A ``tokens=N`` option overrides all of this.

Recording: every request is kept (method, path, headers, the body's exact text, and the server's wall-clock
``received_s`` and, for generation requests, ``finished_s``) and ``GET /_recorded`` returns them
as a JSON list, oldest first; ``DELETE /_recorded`` forgets them (:meth:`TimedServer.recorded`,
:meth:`TimedServer.clear_recorded`). The last 10,000 are kept.

Tokenizer: by default every prompt is ``PROMPT_TOKENS`` (12) tokens and there is no ``/tokenize``. With
``--tokenizer bytes`` (``TimedServer(tokenizer="bytes")``) the server counts as a byte-level tokenizer does (one
token per UTF-8 byte, like the tokenizer ``shared/device/vllm/make_tokenizer.py`` builds for a real vLLM), chat
messages rendered by :func:`chat_template` first: ``usage.prompt_tokens`` is that count, a token-id prompt counts
its ids, and vLLM's ``POST /tokenize`` (``{"model", "messages"}`` or ``{"model", "prompt"}`` → ``{"count",
"max_model_len", "tokens"}``) answers with the same count.

``GET /metrics`` renders with prometheus_client, as vLLM does (``# HELP``/``# TYPE`` lines, sorted labels, a
``_created`` gauge beside each counter), the names and label sets of vllm/v1/metrics/loggers.py, every series
labelled ``engine="0"`` and ``model_name="timed-model"``:

* ``vllm:num_requests_running``: generation requests (``POST /v1/chat/completions``, ``/``, ``/generate_stream``,
  streamed or not, every mode) admitted and not yet finished, counted live; ``vllm:num_requests_waiting``: those
  waiting for a slot under ``--max-num-seqs N`` (always 0 without it);
* ``vllm:kv_cache_usage_perc`` = min(1, 64 · running / 2048): each running request holds 64 blocks (1,024 tokens)
  of a fixed pool of 2,048 blocks × 16 tokens = 32,768 tokens, so one request is 0.03125;
* counters ``vllm:num_preemptions`` (always 0), ``vllm:prompt_tokens`` (each request's prompt tokens, as in usage),
  ``vllm:generation_tokens`` (tokens sent), exposed with ``_total``;
* ``vllm:cache_config_info{...} 1.0`` with the ``CacheConfig`` label set of a recent vLLM (as captured from a live
  server): ``block_size="16"``, ``num_gpu_blocks="2048"``, ``kv_cache_size_tokens="32768"``,
  ``kv_cache_max_concurrency="8.0"`` (32,768 / 4,096), ``gpu_memory_utilization="0.9"``, ``cache_dtype="auto"``, ...

Prefix caching (``--enable-prefix-caching``, as vLLM's flag; off for the tests' server, on for ``python -m planner
demo-server``): the prompt's tokens (bytes of the chat-templated text under ``--tokenizer bytes``, or the ids of a
token-id prompt) are hashed in full blocks of 16, each block's hash chained to the one before, as vLLM V1's
``KVCacheManager`` does (``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); the leading blocks already held
are hits, never the prompt's last token (vLLM always computes it), and the prompt's blocks are then kept, the least
recently used dropped past the 2,048-block pool. ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` count
the prompt tokens and the hits, as vLLM's do, and ``POST /reset_prefix_cache`` empties the cache (served as vLLM
serves it with ``VLLM_SERVER_DEV_MODE=1``). ``--prefill-ms-per-token x`` adds ``x`` ms to the first token for each
prompt token NOT served from the cache, so a cached prefix shows in TTFT as on a real server.

Speculative decoding (``--num-speculative-tokens k --spec-accepted-per-draft a``, off by default): the counters of
vLLM 0.24.0 (``vllm:spec_decode_num_drafts``, ``_num_draft_tokens``, ``_num_accepted_tokens`` and
``_num_accepted_tokens_per_pos`` by ``position``) as if every draft of ``k`` tokens had its first ``a`` accepted:
an answer of ``n`` tokens counts ``ceil((n − 1) / (a + 1))`` drafts (:func:`planner.demo.script.drafts_of`); the timing
is unchanged.

``python -m planner.demo --legacy-metrics`` (``TimedServer(legacy_metrics=True)``) serves the names of
vLLM releases before 0.9 instead: ``vllm:gpu_cache_usage_perc`` in place of ``vllm:kv_cache_usage_perc``, and the
older ``cache_config_info`` label set (``swap_space_bytes``, ``cpu_offload_gb``, no ``kv_cache_size_tokens``).

Modules: :mod:`~planner.demo.state` (the fixed answers, live counts, recorded requests and the clock),
:mod:`~planner.demo.script` (the token timing script and answer length), :mod:`~planner.demo.prefix_cache`,
:mod:`~planner.demo.metrics` (``/metrics``), :mod:`~planner.demo.payloads` (response bodies),
:mod:`~planner.demo.wire` (HTTP/1.1 on one connection), :mod:`~planner.demo.routes`, :mod:`~planner.demo.planned`
(planned mode) and :mod:`~planner.demo.server` (flags and the serving loop).

May import prometheus_client and nothing else of ``planner`` (``planner.cli.demo`` builds the planned engine and
hands it in).
"""
