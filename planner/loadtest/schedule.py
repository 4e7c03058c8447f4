"""The run's schedule: when each request is sent and how long its prompt and answer are, as vLLM draws them.

Shared by the load runner (:mod:`planner.loadtest.runner`) and the predictor (:mod:`planner.predict`), so a predicted
run and a measured run of the same :class:`~planner.loadtest.settings.LoadSettings` see the same requests.
Source: vllm-project/vllm ``vllm/benchmarks/serve.py`` ``get_request`` and ``vllm/benchmarks/datasets.py``
``RandomDataset`` (v0.24). Imports only the standard library and :mod:`planner.loadtest.settings`.
"""

from __future__ import annotations

import math
import random

from planner.loadtest.settings import LoadSettings

__all__ = ["arrival_times", "draw_lengths", "token_range"]


def arrival_times(settings: LoadSettings) -> tuple[float, ...]:
    """Send offsets (seconds after the run starts) of the ``num_prompts`` measured requests, as vLLM builds them.

    Formula (vLLM ``serve.py`` ``get_request``): for a finite rate each request gets a gap drawn from
    gamma(shape = burstiness, scale = 1 / (rate · burstiness)) (mean 1/rate); the offsets are the cumulative sums,
    then rescaled so the last one is exactly ``num_prompts / rate``. ``rate = inf`` gives all zeros (burst);
    ``burstiness = inf`` gives constant gaps of 1/rate.
    """
    n, rate = settings.num_prompts, settings.request_rate
    if math.isinf(rate):
        return (0.0,) * n
    rng = random.Random(settings.seed)
    if math.isinf(settings.burstiness):
        gaps = [1.0 / rate] * n
    else:
        theta = 1.0 / (rate * settings.burstiness)
        gaps = [rng.gammavariate(settings.burstiness, theta) for _ in range(n)]
    times: list[float] = []
    total = 0.0
    for gap in gaps:
        total += gap
        times.append(total)
    if times[-1] > 0:
        factor = (n / rate) / times[-1]
        times = [t * factor for t in times]
    return tuple(times)


def token_range(length: int, range_ratio: float) -> tuple[int, int]:
    """Inclusive bounds ``(⌊L(1 − r)⌋, ⌈L(1 + r)⌉)`` of sampled lengths (vLLM random dataset), at least 1."""
    return max(1, math.floor(length * (1 - range_ratio))), max(1, math.ceil(length * (1 + range_ratio)))


def draw_lengths(settings: LoadSettings, count: int, seed_offset: int = 0) -> list[tuple[int, int, int]]:
    """``(input tokens, output tokens, word offset)`` of ``count`` requests, drawn (seeded by ``settings.seed`` and
    ``seed_offset``; warmups use ``num_prompts``) uniformly from :func:`token_range` of ``input_len`` and
    ``output_len``, as vLLM's random dataset draws them."""
    rng = random.Random(settings.seed + 1 + seed_offset)
    in_lo, in_hi = token_range(settings.input_len, settings.range_ratio)
    out_lo, out_hi = token_range(settings.output_len, settings.range_ratio)
    out = []
    for i in range(count):
        n_in = rng.randint(in_lo, in_hi)
        out.append((n_in, rng.randint(out_lo, out_hi), i + seed_offset))
    return out
