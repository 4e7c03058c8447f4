"""The Load Test page's link: :class:`~planner.loadtest.settings.LoadSettings` through the one settings codec.

Every key, range and format is the field's own declaration (:mod:`planner.loadtest.settings`, read by
:class:`~planner.links.codec.SettingsCodec`); this module only names the codec. Keys follow ``vllm bench serve``'s
flag spelling (``--num-prompts`` → ``num_prompts``); every key is optional and only values that differ from
:data:`~planner.loadtest.settings.DEFAULT` are written:

* ``ep``: endpoint NAMES, comma separated (never a URL or a key, as on Live Compare);
* ``mode``: ``run`` (one load per endpoint) or ``sweep`` (concurrency 1, 2, 4, … ``sweep_max``);
* ``num_prompts`` (1–:data:`~planner.loadtest.settings.MAX_PROMPTS`), ``max_concurrency`` (1–1024 or none),
  ``request_rate`` (req/s > 0 or ``inf`` = burst), ``burstiness`` (gamma shape, 0.01–100), ``num_warmups`` (0–100),
  ``duration`` (cap of a run, 1–3600 s), ``timeout`` (per request, 1–600 s), ``seed``;
* ``dataset_name`` (a file's content is never in a link), ``input_len`` (1–131072), ``output_len`` (1–32768),
  ``range_ratio`` ([0, 0.99]), ``ignore_eos`` (true/false), ``input_sizing`` (``tokenize``, ``token_ids``, ``words``);
* ``goodput``: SLOs as vLLM's ``--goodput`` takes them, ``ttft:500,tpot:50,e2el:2000`` (milliseconds);
* ``sweep_max`` (1–1024), ``sweep_stop`` and ``sweep_refine`` (true/false), ``scrape_metrics`` (true/false);
* workloads: ``prefix_len`` (0–131072), ``suffix_len`` (1–131072), ``num_prefixes`` (1–1000), ``num_turns`` (1–64),
  ``think_time_s`` (0–600 s), ``time_scale`` (0.0001–1000), ``trace_chunk_hash_size`` (1–65536);
* ``flush_cache`` (true/false), ``num_runs`` (1–20 repeats), ``batching`` (``continuous``, ``static``, ``compare``).

The prompts and trace rows of a file, the Ray workers and the cluster's address are never in a link. Every run the
page can start is bounded: at most :data:`~planner.loadtest.settings.MAX_PROMPTS` requests per run, at most 11 sweep
levels, a duration cap of at most an hour per run. :func:`decode` never raises (see :mod:`planner.links.rules`).

Example:
    >>> from planner.loadtest.settings import LoadSettings
    >>> encode(LoadSettings(endpoints=("a",), max_concurrency=4))
    {'ep': 'a', 'max_concurrency': '4'}
    >>> decode({"request_rate": "nan"}).warnings[0][:32]
    "request_rate='nan' is not valid:"
"""

from __future__ import annotations

from planner.links.codec import SettingsCodec
from planner.loadtest.settings import DEFAULT, LoadSettings

__all__ = ["CODEC", "KEYS", "decode", "decode_link", "encode", "encode_link", "parse_field"]

#: The Load Test page's codec.
CODEC: SettingsCodec[LoadSettings] = SettingsCodec(DEFAULT)
#: KEYS: field name → query key; the rest are :data:`CODEC`'s methods.
KEYS, encode, decode, decode_link, encode_link, parse_field = CODEC.functions()
