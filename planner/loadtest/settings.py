"""The settings of a Load Test: what the page's widgets hold and a link restores, and the run they describe.

:class:`LoadSettings` is the one description of a load test (lengths in tokens, times in seconds, SLOs in
milliseconds); :data:`DEFAULT` is what the page opens with; :func:`to_spec` turns it into the
:class:`~planner.loadtest.runner.LoadSpec` of one run. The goodput SLO text ``ttft:500,tpot:50`` is vLLM's
``--goodput`` format, read by :func:`parse_goodput` and written by :func:`format_goodput`. The URL codec
(:mod:`planner.links.loadtest`) only writes and reads these settings.

Example:
    >>> parse_goodput("ttft:500 tpot:50")
    (('ttft', 500.0), ('tpot', 50.0))
    >>> to_spec(LoadSettings(num_prompts=8, goodput_ms=(("ttft", 500.0),))).slo_ms
    (('ttft', 500.0),)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from planner.links.rules import BadValue, format_value, parse_number
from planner.loadtest.runner import LoadSpec

__all__ = [
    "DATASETS",
    "DEFAULT",
    "MAX_PROMPTS",
    "MODES",
    "SLO_NAMES",
    "LoadSettings",
    "format_goodput",
    "parse_goodput",
    "to_spec",
]

#: Most measured requests of one run.
MAX_PROMPTS = 10_000
#: ``run``: one load per endpoint; ``sweep``: concurrency 1, 2, 4, … ``sweep_max``.
MODES = ("run", "sweep")
#: ``random``: synthetic prompts of ``input_len`` tokens; ``examples``: the built-in example prompts; ``custom``: an
#: uploaded JSONL file.
DATASETS = ("random", "examples", "custom")
#: Metrics a goodput SLO can limit (vLLM's ``--goodput`` names).
SLO_NAMES = ("ttft", "tpot", "e2el")
#: Largest SLO limit, milliseconds (an hour).
_MAX_SLO_MS = 3_600_000


@dataclass(frozen=True)
class LoadSettings:
    """What a Load Test link restores. Lengths in tokens, times in seconds, SLOs in milliseconds.

    Attributes:
        endpoints: Names of the endpoints to load, run one after another with the same workload.
        mode: ``run`` or ``sweep``.
        num_prompts: Measured requests of a run (of each sweep level).
        max_concurrency: Most requests in flight (closed loop); None = no cap.
        request_rate: Send rate, requests/s; ``inf`` = all at once.
        burstiness: Gamma shape of the arrival gaps (1 = Poisson).
        num_warmups: Requests sent before the measured ones, not counted.
        duration_s: Wall-time cap of one run (of each sweep level), seconds.
        timeout_s: Connect/read timeout of each request, seconds.
        seed: Seed of the arrival schedule and the sampled lengths.
        dataset_name: ``random``, ``examples`` or ``custom``.
        input_len: Prompt length of ``random`` prompts, tokens.
        output_len: ``max_tokens`` of each request.
        range_ratio: Lengths drawn from [L(1 − r), L(1 + r)].
        ignore_eos: Ask for exactly ``output_len`` tokens (vLLM, SGLang, llama.cpp; not TGI).
        goodput_ms: SLOs ``((name, limit_ms), ...)`` with names ``ttft``, ``tpot``, ``e2el``.
        sweep_max: Highest concurrency of a sweep.
        scrape_metrics: Poll the server's ``/metrics`` during runs.
    """

    endpoints: tuple[str, ...] = ()
    mode: str = "run"
    num_prompts: int = 32
    max_concurrency: int | None = 8
    request_rate: float = float("inf")
    burstiness: float = 1.0
    num_warmups: int = 0
    duration_s: float = 300.0
    timeout_s: float = 60.0
    seed: int = 0
    dataset_name: str = "random"
    input_len: int = 128
    output_len: int = 64
    range_ratio: float = 0.0
    ignore_eos: bool = False
    goodput_ms: tuple[tuple[str, float], ...] = ()
    sweep_max: int = 16
    scrape_metrics: bool = True


#: The settings of a page opened without a link.
DEFAULT = LoadSettings()


def parse_goodput(text: str) -> tuple[tuple[str, float], ...]:
    """``"ttft:500,tpot:50"`` (commas or spaces) → ``(("ttft", 500.0), ("tpot", 50.0))``; "" → ().

    Args:
        text: SLOs as vLLM's ``--goodput`` takes them, ``name:ms`` pairs.

    Returns:
        ``((name, limit_ms), ...)`` in the order given.

    Raises:
        BadValue: a part is not ``ttft|tpot|e2el:<ms>`` with 0 < ms ≤ 3,600,000, or a name repeats; ``accepted``
            says what is accepted.
    """
    accepted = f"name:ms pairs such as ttft:500,tpot:50 (names {', '.join(SLO_NAMES)}; 0 < ms ≤ {_MAX_SLO_MS})"
    out: dict[str, float] = {}
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if len(parts) > len(SLO_NAMES):
        raise BadValue(accepted)
    for part in parts:
        name, sep, value = part.partition(":")
        if not sep or name not in SLO_NAMES or name in out:
            raise BadValue(accepted)
        try:
            out[name] = float(parse_number(value, 0, _MAX_SLO_MS, low_open=True))  # type: ignore[arg-type]
        except BadValue:
            raise BadValue(accepted) from None
    return tuple(out.items())


def format_goodput(slos: Sequence[tuple[str, float]]) -> str:
    """The inverse of :func:`parse_goodput`: ``"ttft:500,tpot:50"``."""
    return ",".join(f"{name}:{format_value(float(ms))}" for name, ms in slos)


def to_spec(settings: LoadSettings, prompts: Sequence[str] = (), *, max_concurrency: int | None = -1) -> LoadSpec:
    """The :class:`~planner.loadtest.runner.LoadSpec` of one run of ``settings``.

    Args:
        settings: The page settings.
        prompts: Prompts to cycle through (``examples`` / ``custom`` datasets); empty = synthetic.
        max_concurrency: Override of the concurrency cap (a sweep level); -1 = the settings' own.

    Returns:
        The spec the runner takes.

    Raises:
        InvalidParameterError: the combination is not accepted (e.g. empty prompts).
    """
    return LoadSpec(
        num_prompts=settings.num_prompts,
        max_concurrency=settings.max_concurrency if max_concurrency == -1 else max_concurrency,
        request_rate=settings.request_rate,
        burstiness=settings.burstiness,
        seed=settings.seed,
        num_warmups=settings.num_warmups,
        duration_s=settings.duration_s,
        input_len=settings.input_len,
        output_len=settings.output_len,
        range_ratio=settings.range_ratio,
        ignore_eos=settings.ignore_eos,
        prompts=tuple(prompts),
        timeout_s=settings.timeout_s,
        slo_ms=settings.goodput_ms,
    )
