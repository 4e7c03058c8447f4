"""Workload files, read lazily and checked line by line: ShareGPT conversations and request traces.

* :func:`read_sharegpt` takes the first human turn of each conversation of a ShareGPT file, as ``vllm bench serve
  --dataset-name sharegpt`` does (vllm-project/vllm ``vllm/benchmarks/datasets/datasets.py`` ``ShareGPTDataset``,
  v0.24: entries with at least two turns, ``conversations[0]["value"]`` as the prompt). The file is the original JSON
  array or JSON Lines of the same entries.
* :func:`read_trace` reads a request trace: arrival timestamps with input and output lengths.

  - ``timed_trace`` (the Mooncake layout, vLLM's ``TimedTrace``): JSON Lines of ``{"timestamp", "input_length",
    "output_length", "hash_ids"}``; ``hash_ids`` name the prompt's blocks of ``chunk_hash_size`` tokens, equal ids
    meaning equal blocks (a shared prefix). Mooncake's own traces (kvcache-ai/Mooncake ``FAST25-release/traces``)
    give timestamps in milliseconds and blocks of 512 tokens: replay them with ``time_scale`` 0.001 and
    ``trace_chunk_hash_size`` 512, as vLLM's ``--timed-trace-sec-multiplier 0.001
    --timed-trace-chunk-hash-size 512``.
  - ``burstgpt`` (HPMLL/BurstGPT's CSV, vLLM's ``BurstGPTDataset``): ``Timestamp`` (seconds), ``Model``,
    ``Request tokens``, ``Response tokens``, ``Total tokens``, ``Log Type``; rows with no response tokens (failed
    requests) are skipped, as vLLM skips them. Unlike vLLM, which samples rows at random and ignores their times,
    every row is replayed at its timestamp, in file order.

Every reader takes the file's bytes, text, or an open binary file, reads no more lines than the rows it needs
(``limit``), and raises :class:`~planner.errors.InvalidParameterError` named ``dataset line N`` with the field and
what it must hold at the first line that does not fit.
"""

from __future__ import annotations

import codecs
import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from planner.errors import InvalidParameterError, MalformedTextError
from planner.parsing import finite_number, json_value
from planner.values import DECIMAL

__all__ = [
    "BURSTGPT_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_TRACE_TOKENS",
    "TRACE_LAYOUTS",
    "TraceRow",
    "read_sharegpt",
    "read_trace",
]

#: Largest workload file read, bytes (a file is read only as far as its rows are needed).
MAX_FILE_BYTES = 1024 * 2**20
#: Trace layouts :func:`read_trace` reads.
TRACE_LAYOUTS = ("timed_trace", "burstgpt")
#: The BurstGPT CSV's columns this reader uses.
BURSTGPT_COLUMNS = ("Timestamp", "Request tokens", "Response tokens")
#: Most tokens a trace row may ask for, in or out: the longest context any model takes (10 Mi tokens), so a row
#: cannot make a run build a prompt without bound.
MAX_TRACE_TOKENS = 10_485_760
_CHUNK = 1 << 16
_MAX_ITEM_CHARS = 4 * 2**20

Source = bytes | str | IO[bytes]


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace.

    Attributes:
        timestamp: Arrival time in the trace's own unit (seconds for BurstGPT; whatever the ``timed_trace`` file
            uses: the run multiplies it by ``time_scale``).
        input_len: Prompt tokens.
        output_len: Output tokens (``max_tokens``).
        hash_ids: Ids of the prompt's blocks (``timed_trace``); () when the trace has none.
    """

    timestamp: float
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...] = ()


def _chunks(source: Source) -> Iterator[str]:
    """The source's text in pieces of at most 64 KiB, decoded as UTF-8 (a BOM dropped), at most MAX_FILE_BYTES."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    read = 0

    def decode(data: bytes, final: bool = False) -> str:
        try:
            return decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise InvalidParameterError("dataset", f"byte {read + exc.start}", "UTF-8 text") from exc

    if isinstance(source, str):
        yield source
        return
    if isinstance(source, bytes):
        for start in range(0, len(source), _CHUNK):
            read = start
            yield decode(source[start : start + _CHUNK])
        yield decode(b"", True)
        return
    while True:
        data = source.read(_CHUNK)
        if not data:
            yield decode(b"", True)
            return
        yield decode(data)
        read += len(data)
        if read > MAX_FILE_BYTES:
            raise InvalidParameterError("dataset", f"more than {MAX_FILE_BYTES:,} bytes", "a smaller file")


def _lines(source: Source) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the source, 1-based, read as far as the caller iterates."""
    number, rest = 0, ""
    for piece in _chunks(source):
        rest += piece
        *complete, rest = rest.split("\n")
        for line in complete:
            number += 1
            yield number, line.rstrip("\r")
    if rest:
        yield number + 1, rest.rstrip("\r")


def _json_items(source: Source) -> Iterator[tuple[int, Any]]:
    """``(line where the item starts, item)`` of a JSON array or of JSON Lines, decoded one item at a time."""
    decoder = json.JSONDecoder()
    pieces = _chunks(source)
    buffer, pos, line = "", 0, 1
    in_array = None

    def fill() -> bool:
        nonlocal buffer, pos
        piece = next(pieces, None)
        if piece is None:
            return False
        buffer, pos = buffer[pos:] + piece, 0
        return True

    def skip(chars: str) -> str | None:
        """Skip ``chars`` (counting lines); the next other character, or None at the end."""
        nonlocal pos, line
        while True:
            while pos < len(buffer) and buffer[pos] in chars:
                line += buffer[pos] == "\n"
                pos += 1
            if pos < len(buffer):
                return buffer[pos]
            if not fill():
                return None

    first = skip(" \t\r\n")
    if first is None:
        return
    in_array = first == "["
    if in_array:
        pos += 1
    while True:
        head = skip(" \t\r\n," if in_array else " \t\r\n")
        if head is None:
            if in_array:
                raise InvalidParameterError(f"dataset line {line}", "end of file", "the closing ] of the JSON array")
            return
        if in_array and head == "]":
            return
        while True:
            try:
                item, end = decoder.raw_decode(buffer, pos)
            except RecursionError:
                accepted = "JSON (one object per line, or an array)"
                raise MalformedTextError(f"dataset line {line}", "nested too deeply to read", accepted) from None
            except json.JSONDecodeError as exc:
                # the item may be cut at the end of the buffer: read on (an item of up to 4 MiB), else it is not JSON
                if len(buffer) - pos < _MAX_ITEM_CHARS and fill():
                    continue
                where = line + buffer.count("\n", pos, exc.pos)
                accepted = "JSON (one object per line, or an array)"
                raise InvalidParameterError(f"dataset line {where}", exc.msg, accepted) from exc
            if end == len(buffer) and fill():  # a number or literal may go on in the next piece
                continue
            break
        yield line, item
        line += buffer.count("\n", pos, end)
        pos = end


def _number(value: Any) -> float | int | None:
    """A number, or the text of a plain decimal number (CSV cells are text); None for anything else.

    Text follows the links' rule (:data:`planner.values.DECIMAL`): ``float()`` alone would also read ``1_000``,
    ``١٢٨`` (other scripts' digits), ``nan`` and ``infinity``, none of which a trace writer means as a number.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        return float(text) if len(text) <= 64 and DECIMAL.fullmatch(text) else None
    return value if isinstance(value, int | float) else None


def _integer(value: Any, low: int, high: int = MAX_TRACE_TOKENS) -> int | None:
    """``value`` as an integer from ``low`` to ``high`` (a float with no fraction counts, as pandas writes CSV
    ints); else None."""
    value = _number(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    return value if isinstance(value, int) and low <= value <= high else None


def read_sharegpt(source: Source, *, limit: int = 10_000) -> tuple[str, ...]:
    """The first human turn of each ShareGPT conversation with at least two turns, in file order.

    Args:
        source: The file: bytes, text, or an open binary file (a JSON array, or JSON Lines, of entries).
        limit: Most prompts read (≥ 1); the rest of the file is not read.

    Returns:
        The prompts.

    Raises:
        InvalidParameterError: named ``dataset line N`` (the line where the entry starts) when an entry is not an
            object with a ``conversations`` list whose first turn has a non-empty string ``value``; ``dataset``
            when the file is not UTF-8 or holds no usable conversation.

    Example:
        >>> read_sharegpt('[{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}]}]')
        ('Hi',)
    """
    accepted = 'an object with "conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}, ...]'
    prompts: list[str] = []
    for line, entry in _json_items(source):
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list):
            raise InvalidParameterError(f"dataset line {line}", "conversations", accepted)
        if len(turns) < 2:  # vLLM keeps only entries with a prompt and an answer
            continue
        first = turns[0]
        value = first.get("value") if isinstance(first, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise InvalidParameterError(f"dataset line {line}", "conversations[0].value", "a non-empty string")
        prompts.append(value)
        if len(prompts) >= limit:
            break
    if not prompts:
        raise InvalidParameterError("dataset", "no conversation with two turns", accepted)
    return tuple(prompts)


def _timed_trace_rows(source: Source, chunk_hash_size: int) -> Iterator[TraceRow]:
    for number, line in _lines(source):
        if not line.strip():
            continue
        where = f"dataset line {number}"
        accepted = 'a JSON object {"timestamp", "input_length", ...}'
        entry = json_value(line, name="dataset", accepted=accepted, line=number)
        if not isinstance(entry, dict):
            raise InvalidParameterError(where, type(entry).__name__, "a JSON object")
        stamp = finite_number(entry.get("timestamp"))
        if stamp is None or stamp < 0:
            raise InvalidParameterError(where, "timestamp", "a number ≥ 0")
        n_in, n_out = _integer(entry.get("input_length"), 1), _integer(entry.get("output_length"), 1)
        if n_in is None:
            raise InvalidParameterError(where, "input_length", f"an integer from 1 to {MAX_TRACE_TOKENS:,}")
        if n_out is None:
            raise InvalidParameterError(where, "output_length", f"an integer from 1 to {MAX_TRACE_TOKENS:,}")
        hashes = entry.get("hash_ids", [])
        ids = [_integer(h, 0, 2**63 - 1) for h in hashes] if isinstance(hashes, list) else [None]
        if any(h is None for h in ids):
            raise InvalidParameterError(where, "hash_ids", "a list of integers ≥ 0")
        if ids and len(ids) * chunk_hash_size < n_in:
            raise InvalidParameterError(
                where, "hash_ids", f"at least input_length / {chunk_hash_size} blocks ({-(-n_in // chunk_hash_size)})"
            )
        yield TraceRow(stamp, n_in, n_out, tuple(h for h in ids if h is not None))


def _burstgpt_rows(source: Source) -> Iterator[TraceRow]:
    lines = _lines(source)
    header_line = next(((n, line) for n, line in lines if line.strip()), None)
    if header_line is None:
        return
    header = next(csv.reader([header_line[1]]))
    missing = [c for c in BURSTGPT_COLUMNS if c not in header]
    if missing:
        raise InvalidParameterError(
            f"dataset line {header_line[0]}",
            ", ".join(missing),
            "a BurstGPT header with " + ", ".join(BURSTGPT_COLUMNS),
        )
    at = {c: header.index(c) for c in BURSTGPT_COLUMNS}
    for number, line in lines:
        if not line.strip():
            continue
        cells = next(csv.reader([line]))
        where = f"dataset line {number}"
        if len(cells) < len(header):
            raise InvalidParameterError(where, f"{len(cells)} columns", f"{len(header)} columns, as the header")
        stamp = _number(cells[at["Timestamp"]])
        if stamp is None or not math.isfinite(stamp) or stamp < 0:
            raise InvalidParameterError(where, "Timestamp", "seconds ≥ 0")
        n_in, n_out = _integer(cells[at["Request tokens"]], 1), _integer(cells[at["Response tokens"]], 0)
        if n_in is None:
            raise InvalidParameterError(where, "Request tokens", f"an integer from 1 to {MAX_TRACE_TOKENS:,}")
        if n_out is None:
            raise InvalidParameterError(where, "Response tokens", f"an integer from 0 to {MAX_TRACE_TOKENS:,}")
        if n_out:  # 0 response tokens: a failed request (vLLM's BurstGPTDataset drops them too)
            yield TraceRow(stamp, n_in, n_out)


def read_trace(source: Source, layout: str, *, limit: int = 10_000, chunk_hash_size: int = 16) -> tuple[TraceRow, ...]:
    """The first ``limit`` requests of a trace, in file order (see the module docstring for each layout).

    Args:
        source: The file: bytes, text, or an open binary file.
        layout: ``timed_trace`` (JSON Lines, the Mooncake layout) or ``burstgpt`` (CSV).
        limit: Most rows read (≥ 1); the rest of the file is not read.
        chunk_hash_size: Tokens per ``hash_ids`` block (``timed_trace``); vLLM's default is 16, Mooncake's 512.

    Returns:
        The rows; timestamps must not decrease.

    Raises:
        InvalidParameterError: ``layout`` unknown; ``dataset line N`` naming the field (``timestamp``,
            ``input_length``, ``output_length``, ``hash_ids``; ``Timestamp``, ``Request tokens``, ``Response
            tokens``) at the first line that does not fit, or whose timestamp goes back in time; ``dataset`` when
            no row is usable.

    Example:
        >>> read_trace('{"timestamp": 0, "input_length": 8, "output_length": 4}', "timed_trace")[0].input_len
        8
    """
    if layout not in TRACE_LAYOUTS:
        raise InvalidParameterError("layout", layout, " or ".join(TRACE_LAYOUTS))
    rows = _timed_trace_rows(source, chunk_hash_size) if layout == "timed_trace" else _burstgpt_rows(source)
    out: list[TraceRow] = []
    for row in rows:
        if out and row.timestamp < out[-1].timestamp:
            field = "timestamp" if layout == "timed_trace" else "Timestamp"
            raise InvalidParameterError(
                f"dataset row {len(out) + 1}", field, f"no earlier than the row before ({out[-1].timestamp:g})"
            )
        out.append(row)
        if len(out) >= limit:
            break
    if not out:
        raise InvalidParameterError("dataset", "no request", f"at least one row of a {layout} trace")
    return tuple(out)
