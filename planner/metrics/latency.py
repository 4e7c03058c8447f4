"""Client-side latency metrics of one streamed request, with ``vllm bench serve`` semantics.

Definitions (vLLM ``vllm/benchmarks/serve.py`` ``calculate_metrics`` and
``vllm/benchmarks/lib/endpoint_request_func.py``, v0.24), with ``sent`` = the moment the request is handed to the
client (``time.perf_counter()``):

* TTFT = t(first token-bearing chunk) − sent. A token-bearing chunk carries content, reasoning or a tool call, so
  vLLM's empty role chunk does not count (vllm-project/vllm#3768).
* E2E = t(last token-bearing chunk) − sent. The usage chunk and ``[DONE]`` are excluded.
* ITL per chunk = gaps between successive token-bearing chunks after the first (one sample per chunk).
* ITL per token = each chunk gap divided evenly over the tokens of the chunk that ends it (one sample per token;
  GenAI-Perf "chunked ITL"). A chunk's tokens are its own count where the stream gave one (continuous usage, TGI
  events, llama.cpp); the output tokens those do not account for are spread evenly over the other chunks
  (:func:`chunk_tokens`), so the same stream gives the same per-token ITL whether the server counted per chunk or
  only at the end.
* TPOT = (E2E − TTFT) / (output_tokens − 1): the first token is NOT counted; None when output_tokens ≤ 1
  (:func:`tpot_s`, the one definition every measured, imported and predicted run uses).
* Output tokens/s = output_tokens / E2E (per request, TTFT included).

Every value that is undefined for a request is None (never 0). Failed requests have no latency metrics.

Percentiles of a sample are :func:`percentiles` (numpy's default ``linear`` method, the one ``vllm bench serve``
reports with), used by every summary, time series and bound in the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.errors import InvalidParameterError
from planner.serving.streaming import RequestRecord

__all__ = [
    "OUTPUT_TOKENS_METHODS",
    "LatencyMetrics",
    "Summary",
    "chunk_tokens",
    "compute_metrics",
    "output_tokens_method",
    "output_tokens_warning",
    "percentile",
    "percentiles",
    "summarize",
    "tpot_s",
]

#: How the output tokens of a set of requests were counted (:func:`output_tokens_method`), most exact first:
#: ``usage`` (the server's own count: usage, TGI's details or token events, llama.cpp's timings), ``chunks (one token
#: each)`` (llama-cpp-python, which streams exactly one token per chunk and no count), ``tokenizer`` (the server's
#: tokenizer route counted the answer text: the stream carried no count), ``chunks (estimate)`` (one per
#: token-bearing chunk: no count and no tokenizer route).
OUTPUT_TOKENS_METHODS: tuple[str, ...] = ("usage", "chunks (one token each)", "tokenizer", "chunks (estimate)")
_METHOD_OF_SOURCE = {
    "chunks_one_token_each": "chunks (one token each)",
    "tokenizer": "tokenizer",
    "estimate": "chunks (estimate)",
}


@dataclass(frozen=True)
class LatencyMetrics:
    """Latency metrics of one request. Seconds unless the name says otherwise; None = undefined.

    Attributes:
        endpoint: Endpoint name.
        ok: The request succeeded; when False every latency below is None.
        ttft_s: Time to first token, ``first_token − sent``.
        ttfc_s: Time to first non-reasoning content, ``first_content − sent`` (equals TTFT without reasoning).
        e2e_s: End-to-end latency, ``last_token − sent``.
        tpot_s: Time per output token after the first, ``(E2E − TTFT) / (output_tokens − 1)``; None when
            output_tokens ≤ 1 or unknown.
        itl_chunk_s: Gaps between successive token-bearing chunks after the first, one per chunk.
        itl_token_s: Each chunk gap divided by the chunk's tokens (:func:`chunk_tokens`), repeated once per token;
            a chunk of 0 tokens passes its gap to the next chunk.
        output_tokens: Generated tokens; None when unknown.
        output_tokens_source: Where the count came from (see ``planner.serving.streaming.TOKEN_SOURCES``).
        output_tokens_per_s: ``output_tokens / E2E``; None when either is unknown or E2E is 0.
    """

    endpoint: str
    ok: bool
    ttft_s: float | None = None
    ttfc_s: float | None = None
    e2e_s: float | None = None
    tpot_s: float | None = None
    itl_chunk_s: tuple[float, ...] = ()
    itl_token_s: tuple[float, ...] = ()
    output_tokens: int | None = None
    output_tokens_source: str | None = None
    output_tokens_per_s: float | None = None


def chunk_tokens(record: RequestRecord) -> tuple[int, ...]:
    """Tokens in each token-bearing chunk of ``record``, in arrival order.

    A chunk keeps its own count where the stream gave one (``TokenChunk.n_tokens``). The record's output tokens that
    those counts leave are spread evenly over the chunks of unknown size: chunk ``i`` of ``k`` gets ``⌊(i + 1) r / k⌋
    − ⌊i r / k⌋`` of the ``r`` left, so one that does not divide puts its extra tokens towards the end (where an
    end-of-sequence token that no chunk shows belongs). When the output tokens are unknown, or fewer than the known
    counts, a chunk of unknown size counts 1.

    Example:
        12 chunks of unknown size and ``output_tokens`` 48 (a final usage count): 4 each.
    """
    known = sum(c.n_tokens for c in record.chunks if c.n_tokens is not None)
    unknown = sum(1 for c in record.chunks if c.n_tokens is None)
    left = None if record.output_tokens is None else record.output_tokens - known
    if not unknown or left is None or left < 0:
        return tuple(1 if c.n_tokens is None else c.n_tokens for c in record.chunks)
    out, i = [], 0
    for c in record.chunks:
        if c.n_tokens is None:
            out.append((i + 1) * left // unknown - i * left // unknown)
            i += 1
        else:
            out.append(c.n_tokens)
    return tuple(out)


def compute_metrics(record: RequestRecord) -> LatencyMetrics:
    """Compute :class:`LatencyMetrics` of one request record (formulas in the module docstring).

    Args:
        record: A finished :class:`~planner.serving.streaming.RequestRecord`.

    Returns:
        The metrics; only ``endpoint``/``ok`` are set for a failed request, plus the token count (0) and its source
        for a request that succeeded without any token (an empty answer).
    """
    if not record.ok:
        return LatencyMetrics(endpoint=record.endpoint, ok=False)
    if record.first_token_s is None or record.last_token_s is None:
        return LatencyMetrics(
            endpoint=record.endpoint,
            ok=True,
            output_tokens=record.output_tokens,
            output_tokens_source=record.output_tokens_source,
        )
    ttft = record.first_token_s
    e2e = record.last_token_s
    chunk_gaps: list[float] = []
    token_gaps: list[float] = []
    carry = 0.0
    sizes = chunk_tokens(record)
    for prev, cur, n in zip(record.chunks, record.chunks[1:], sizes[1:], strict=False):
        gap = cur.t_s - prev.t_s
        chunk_gaps.append(gap)
        if n <= 0:
            carry += gap
            continue
        token_gaps.extend([(gap + carry) / n] * n)
        carry = 0.0
    n_out = record.output_tokens
    tpot = None if n_out is None else tpot_s(ttft, e2e, n_out)
    rate = n_out / e2e if n_out is not None and e2e > 0 else None
    return LatencyMetrics(
        endpoint=record.endpoint,
        ok=True,
        ttft_s=ttft,
        ttfc_s=record.first_content_s,
        e2e_s=e2e,
        tpot_s=tpot,
        itl_chunk_s=tuple(chunk_gaps),
        itl_token_s=tuple(token_gaps),
        output_tokens=n_out,
        output_tokens_source=record.output_tokens_source,
        output_tokens_per_s=rate,
    )


def output_tokens_method(records: Iterable[RequestRecord]) -> str | None:
    """How the output tokens of the successful ``records`` were counted: the least exact of
    :data:`OUTPUT_TOKENS_METHODS` any of them needed; None when none has a count."""
    methods = {
        _METHOD_OF_SOURCE.get(r.output_tokens_source, "usage") for r in records if r.ok and r.output_tokens_source
    }
    return max(methods, key=OUTPUT_TOKENS_METHODS.index, default=None)


def output_tokens_warning(endpoint: str, records: Sequence[RequestRecord]) -> str | None:
    """One line naming the output-token figure when some successful ``records`` counted one token per chunk (an
    estimate, see :data:`OUTPUT_TOKENS_METHODS`); None when none did.

    ``total_output_tokens`` is Σ output tokens of the successful records (``vllm bench serve``'s figure).
    """
    ok = [r for r in records if r.ok]
    estimated = sum(1 for r in ok if r.output_tokens_source == "estimate")
    if not estimated:
        return None
    total = sum(r.output_tokens or 0 for r in ok)
    return (
        f"{endpoint}: output tokens are estimates, one per chunk (total_output_tokens {total:,}, {estimated} of "
        f"{len(ok)} requests): the stream carried no usage and no tokenizer route counted the text; with several "
        "tokens per chunk, total_output_tokens and output_throughput read low and TPOT high"
    )


@dataclass(frozen=True)
class Summary:
    """Distribution summary of a sample (same unit as the values).

    Attributes:
        count: Number of values.
        mean: Arithmetic mean.
        median: 50th percentile.
        std: Population standard deviation, ``sqrt(Σ(x − mean)² / count)`` (``np.std`` default, as vLLM bench).
        p90: 90th percentile, linear interpolation (``np.percentile`` default).
        p99: 99th percentile, linear interpolation.
    """

    count: int
    mean: float
    median: float
    std: float
    p90: float
    p99: float


def tpot_s(ttft_s: float, e2e_s: float, output_tokens: int) -> float | None:
    """Time per output token after the first, seconds: ``(E2E − TTFT) / (output_tokens − 1)``.

    The first token is NOT counted (its time is TTFT); None for a request of one output token or none, which has no
    gap to average. Source: vLLM ``vllm/benchmarks/serve.py`` ``calculate_metrics`` (v0.24), ``tpot = (latency −
    ttft) / (output_len − 1)`` for ``output_len > 1``.

    Example:
        >>> tpot_s(0.2, 1.2, 11)
        0.1
    """
    return (e2e_s - ttft_s) / (output_tokens - 1) if output_tokens > 1 else None


def percentiles(values: Sequence[float] | np.ndarray, qs: Sequence[float]) -> tuple[float, ...]:
    """The ``qs``-th percentiles (each 0–100) of ``values`` (any order), linear interpolation.

    Formula (``numpy.percentile``'s default ``linear`` method, Hyndman & Fan type 7, which ``vllm bench serve``
    reports with): sort ``x``, rank ``r = (n − 1) · q / 100``, result ``x[⌊r⌋] + (x[⌈r⌉] − x[⌊r⌋]) · (r − ⌊r⌋)``.

    Raises:
        InvalidParameterError: ``values`` is empty.

    Example:
        >>> percentiles([1.0, 2.0, 3.0, 4.0, 10.0], (50, 90))
        (3.0, 7.6)
    """
    xs = np.asarray(values, dtype=float)
    if xs.size == 0:
        raise InvalidParameterError("values", "an empty sample", "at least one value to take a percentile of")
    return tuple(float(v) for v in np.percentile(xs, qs))


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values``: :func:`percentiles` of one ``q``."""
    return percentiles(values, (q,))[0]


def summarize(values: Iterable[float | None]) -> Summary | None:
    """Summarize values (None entries are dropped); None when no value is left.

    Example:
        >>> summarize([1.0, 2.0, 3.0, 4.0]).p90
        3.7
    """
    # numpy gives the same definitions (np.percentile linear, np.std population) at C speed: a predicted run pools
    # millions of inter-token gaps.
    xs = np.sort(
        np.fromiter((v for v in values if v is not None), dtype=float)
        if not isinstance(values, np.ndarray)
        else values[~np.isnan(values)]
    )
    if xs.size == 0:
        return None
    p50, p90, p99 = percentiles(xs, (50, 90, 99))
    return Summary(
        count=int(xs.size),
        mean=float(xs.mean()),  # pairwise summation: error ~1e-16 relative, as np.mean in vLLM
        median=p50,
        std=float(np.std(xs)),
        p90=p90,
        p99=p99,
    )
