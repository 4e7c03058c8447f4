"""Hostile uploaded files of the Load Test, property-based (issue 24): result files (``vllm bench serve
--save-result`` JSON, JSON Lines, gzip), prompt files (JSONL), ShareGPT conversations and request traces
(``timed_trace`` JSON Lines, BurstGPT CSV).

Each file is built from valid content (real result files of ``bench/data``, well-formed rows) with values changed to
wrong types, NaN/inf, huge, negative or fractional numbers, unicode (U+2028 inside a JSON string included), and is
then passed whole or damaged (truncated, nested thousands deep, a byte-order mark, not UTF-8, not JSON) to the reader
the page and the CLI use. Properties: nothing raises but the package's own errors, a refusal is one line naming the
file or its line; what is accepted is what the file holds (every prompt, every row, the run's figures), and a result
that was read writes back (``to_vllm_file``) to a file that reads the same.
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from planner.loadtest.datasets import read_sharegpt, read_trace
from planner.loadtest.results import (
    failure_summary,
    group_sweeps,
    import_runs,
    requests_frame,
    runs_frame,
    to_vllm_file,
)
from planner.loadtest.workload import parse_prompts_jsonl
from planner.metrics.benchmark import METRIC_NAMES
from tests.hostile import floats_any, hostile_settings, hostile_text, json_documents, json_values, outcome

ROOT = Path(__file__).resolve().parents[3]
#: Generated cases per reader.
RESULT_EXAMPLES = 800
PROMPT_EXAMPLES = 500
SHAREGPT_EXAMPLES = 400
TRACE_EXAMPLES = 300
BURSTGPT_EXAMPLES = 200

_SEEDS = [
    json.loads(gzip.decompress((ROOT / "bench/data/h200_sweeps/llama-3.1-8b-spec" / name).read_bytes()))
    for name in ("in512_c1.json.gz", "in512_c4.json.gz")
] + [{"duration": 12.5, "completed": 10, "failed": 0, "mean_ttft_ms": 50.0, "median_ttft_ms": 48.0}]


def _near(value: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > 2**1000:
        return st.just(value)
    return st.sampled_from([value * 2, -value, 0, float(value) + 0.5, str(value), [value], None])


_ANY = st.one_of(
    json_values(), floats_any(), st.integers(-(2**70), 2**70), st.sampled_from([10**400, -(10**400)]), hostile_text()
)


@st.composite
def result_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A real result with up to four keys (or array items) changed or removed."""
    doc = copy.deepcopy(draw(st.sampled_from(_SEEDS)))
    for key in draw(st.lists(st.sampled_from([*sorted(doc), "planner_notes", "planner_sweep"]), max_size=4)):
        roll = draw(st.integers(0, 9))
        if roll == 0:
            doc.pop(key, None)
        elif isinstance(doc.get(key), list) and doc[key] and roll < 5:
            items = doc[key]
            i = draw(st.integers(0, len(items) - 1))
            if roll == 1:
                del items[i]  # arrays of different lengths
            else:
                items[i] = draw(st.one_of(_near(items[i]), _ANY))
        else:
            doc[key] = draw(st.one_of(_near(doc.get(key)), _ANY))
    return doc


def _result_file(draw: st.DrawFn) -> tuple[bytes | str, list[Any] | None]:
    docs = draw(st.lists(result_documents(), min_size=1, max_size=3))
    form = draw(st.integers(0, 5))
    if form == 0:
        return "\n".join(json.dumps(d) for d in docs), docs  # JSON Lines (--append-result)
    if form == 1:
        return json.dumps(docs), docs
    if form == 2:
        return gzip.compress(json.dumps(docs[0]).encode()), docs[:1]
    if form == 3:
        return draw(json_documents(st.just(docs[0]))), None  # whole, or damaged
    return json.dumps(docs[0]), docs[:1]


result_files = st.composite(_result_file)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _figures(run: Any) -> dict[str, Any]:
    m = run.metrics
    out = {
        "duration_s": m.duration_s,
        "completed": m.completed,
        "failed": m.failed,
        "model": run.model,
        "num_prompts": run.num_prompts,
        "max_concurrency": run.max_concurrency,
        "request_rate": run.request_rate,
        "requests": len(run.requests),
    }
    for name in METRIC_NAMES:
        dist = getattr(m, name)
        for stat in ("mean_s", "median_s", "p90_s", "p99_s"):
            out[f"{name}.{stat}"] = None if dist is None else getattr(dist, stat)
    return out


@hostile_settings(RESULT_EXAMPLES)
@given(case=result_files())
def test_result_file_reads_as_written_or_is_refused_in_one_line(case) -> None:
    data, docs = case
    runs, refusal = outcome("files.results", lambda: import_runs(data, "runs.json"), names=["runs.json"])
    if docs is not None and all(d in _SEEDS for d in docs):
        assert runs is not None, f"real result files refused: {refusal}"
    if runs is None:
        return
    if docs is not None:
        assert len(runs) == len(docs)
        for run, doc in zip(runs, docs, strict=True):
            # vLLM's own keys are read as written
            assert _same(run.metrics.duration_s, float(doc["duration"])), (run.metrics.duration_s, doc["duration"])
            assert run.metrics.completed == float(doc["completed"])  # "10" and 10.0 are 10
            for name in METRIC_NAMES:
                mean, dist = doc.get(f"mean_{name}_ms"), getattr(run.metrics, name)
                if dist is not None:
                    assert isinstance(mean, int | float), (name, mean)
                    assert math.isclose(dist.mean_s * 1000, mean, rel_tol=1e-12, abs_tol=1e-300), (
                        name,
                        mean,
                        dist.mean_s,
                    )
    for run in runs:
        again, _ = outcome(
            "files.results", lambda run=run: import_runs(json.dumps(to_vllm_file(run)), "again.json"), case=False
        )
        assert again is not None, "a run that was read does not write back to a file that reads"
        before, after = _figures(run), _figures(again[0])
        changed = {k: (before[k], after[k]) for k in before if not _same(before[k], after[k])}
        assert not changed, f"written back and read again, the run changed: {changed}"
    outcome("files.results", lambda: (runs_frame(runs), requests_frame(runs), group_sweeps(list(runs))), case=False)
    for run in runs:
        outcome("files.results", lambda run=run: failure_summary(run), case=False)


# --- prompt files (JSONL, vLLM's custom dataset) ------------------------------------------------------------------
#: A prompt as a user writes one: any non-blank text, line and paragraph separators (U+2028, U+2029, U+0085) included.
_PROMPT = st.one_of(
    st.text(min_size=1, max_size=30).filter(str.strip), st.sampled_from(["Hi", "\u2028 line\u2029 sep", "a\x85b", "🙂"])
)
_GOOD_LINES = (
    lambda p: {"prompt": p},
    lambda p: {"text": p, "output_tokens": 5},
    lambda p: {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": p}]},
)
_BAD_LINE = st.one_of(st.dictionaries(st.sampled_from(["prompt", "text", "messages"]), _ANY, max_size=2), _ANY)


@st.composite
def prompt_files(draw: st.DrawFn) -> tuple[bytes | str, list[Any], tuple[str, ...] | None]:
    """``(file, its objects, the prompts it must give)``; the prompts are None when the file is not well formed."""
    prompts = draw(st.lists(_PROMPT, max_size=6))
    objects = [draw(st.sampled_from(_GOOD_LINES))(p) for p in prompts]
    expected: tuple[str, ...] | None = tuple(prompts) if prompts else None
    if draw(st.integers(0, 2)) == 0:  # one hostile line among good ones
        objects.insert(draw(st.integers(0, len(objects))), draw(_BAD_LINE))
        expected = None
    lines = [json.dumps(o, ensure_ascii=draw(st.booleans())) for o in objects]
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    text = sep.join(lines) + draw(st.sampled_from(["", sep, sep + "  " + sep]))
    form = draw(st.integers(0, 5))
    if form == 0:
        return text.encode("utf-8"), objects, expected
    if form == 1:
        return ("\ufeff" + text).encode("utf-8"), objects, expected
    if form == 2:
        return text.encode("utf-8") + b"\xff\xfe", objects, None  # not UTF-8
    if form == 3:
        return draw(json_documents(st.just(objects))), [], None
    return text, objects, expected


def _strings(obj: Any) -> set[str]:
    """Every string of ``obj`` (the prompt read from a line must be one of them)."""
    if isinstance(obj, str):
        return {obj}
    if isinstance(obj, dict):
        return set().union(set(), *(_strings(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(set(), *(_strings(v) for v in obj))
    return set()


@hostile_settings(PROMPT_EXAMPLES)
@given(case=prompt_files())
def test_prompt_file_keeps_every_prompt_or_is_refused_in_one_line(case) -> None:
    data, objects, expected = case
    prompts, refusal = outcome("files.prompts", lambda: parse_prompts_jsonl(data), names=["dataset"])
    if expected is not None:
        assert prompts == expected, f"a well-formed file: {refusal or prompts}"
    elif prompts is not None and objects:
        assert len(prompts) == len(objects), f"{len(objects)} lines, {len(prompts)} prompts"
        for prompt, obj in zip(prompts, objects, strict=True):
            assert prompt in _strings(obj), (prompt, obj)


# --- ShareGPT ------------------------------------------------------------------------------------------------------
_TURN = st.one_of(st.builds(lambda v: {"from": "human", "value": v}, _PROMPT), _ANY)
_BAD_ENTRY = st.one_of(
    st.builds(lambda t: {"id": "x", "conversations": t}, st.lists(_TURN, min_size=0, max_size=4)), _ANY
)


@st.composite
def sharegpt_files(draw: st.DrawFn) -> tuple[bytes | str, tuple[str, ...] | None]:
    """``(file, the prompts it must give)``; None when the file is not well formed."""
    turns = draw(st.lists(st.tuples(_PROMPT, st.booleans()), max_size=5))  # (first turn, answered)
    entries: list[Any] = [
        {"conversations": [{"from": "human", "value": p}] + ([{"from": "gpt", "value": "ok"}] if answered else [])}
        for p, answered in turns
    ]
    expected: tuple[str, ...] | None = tuple(p for p, answered in turns if answered) or None
    if draw(st.integers(0, 2)) == 0:
        entries.insert(draw(st.integers(0, len(entries))), draw(_BAD_ENTRY))
        expected = None
    form = draw(st.integers(0, 4))
    if form == 0:
        return "\n".join(json.dumps(e, ensure_ascii=False) for e in entries).encode("utf-8"), expected
    if form == 1:
        return draw(json_documents(st.just(entries))), None
    return json.dumps(entries, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))), expected


@hostile_settings(SHAREGPT_EXAMPLES)
@given(case=sharegpt_files())
def test_sharegpt_file_keeps_every_conversation_or_is_refused_in_one_line(case) -> None:
    data, expected = case
    prompts, refusal = outcome("files.sharegpt", lambda: read_sharegpt(data), names=["dataset"])
    if expected is not None:
        assert prompts == expected, f"a well-formed file: {refusal or prompts}"


# --- traces --------------------------------------------------------------------------------------------------------
_COUNT = st.one_of(st.integers(1, 5000), _ANY)


@st.composite
def timed_traces(draw: st.DrawFn) -> tuple[bytes | str, list[Any]]:
    rows = []
    stamp = 0.0
    for _ in range(draw(st.integers(0, 5))):
        stamp += draw(st.floats(0, 10))
        n_in = draw(_COUNT)
        row: dict[str, Any] = {"timestamp": stamp, "input_length": n_in, "output_length": draw(_COUNT)}
        if draw(st.booleans()) and isinstance(n_in, int) and not isinstance(n_in, bool) and 0 < n_in < 5000:
            row["hash_ids"] = list(range(-(-n_in // 16)))
        if draw(st.integers(0, 3)) == 0:
            row[draw(st.sampled_from(sorted(row)))] = draw(st.one_of(_ANY, _near(n_in)))
        rows.append(row)
    text = "\n".join(json.dumps(r) for r in rows)
    if draw(st.integers(0, 4)) == 0:
        return draw(json_documents(st.just(rows))), []
    return text, rows


def _well_formed(row: dict[str, Any]) -> bool:
    """A row as the generator writes it before any change: whole lengths from 1 to 5,000, enough blocks."""

    def length(value: Any) -> bool:
        return type(value) is int and 1 <= value <= 5000

    blocks = row.get("hash_ids", [])
    return (
        length(row["input_length"])
        and length(row["output_length"])
        and type(row["timestamp"]) is float
        and (blocks == [] or blocks == list(range(-(-row["input_length"] // 16))))
    )


@hostile_settings(TRACE_EXAMPLES)
@given(case=timed_traces())
def test_timed_trace_keeps_every_row_or_is_refused_in_one_line(case) -> None:
    data, rows = case
    read, refusal = outcome("files.traces", lambda: read_trace(data, "timed_trace"), names=["dataset"])
    if rows and all(_well_formed(row) for row in rows):
        assert read is not None, f"a well-formed trace refused: {refusal}"
    if read is None or not rows:
        return
    assert len(read) == len(rows)
    for got, row in zip(read, rows, strict=True):  # " 8192 " and 8192.0 are 8192
        assert got.timestamp == row["timestamp"] and got.input_len == float(row["input_length"]), (got, row)
        assert got.output_len == float(row["output_length"]), (got, row)


@st.composite
def burstgpt_files(draw: st.DrawFn) -> tuple[str, list[list[str]], bool]:
    """``(file, its rows, whether it is as BurstGPT writes it)``."""
    header = ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
    clean = True
    if draw(st.integers(0, 9)) == 0:
        header = draw(st.permutations(header))[: draw(st.integers(1, 6))]
        clean = False
    rows = []
    stamp = 0.0
    cell = st.one_of(st.integers(0, 5000).map(str), hostile_text(), floats_any().map(repr))
    for _ in range(draw(st.integers(0, 5))):
        stamp += draw(st.floats(0, 10))
        row = [repr(stamp), "ChatGPT", str(draw(st.integers(1, 3000))), str(draw(st.integers(0, 800))), "0", "Conv"]
        for i in draw(st.lists(st.integers(0, 5), max_size=1)):
            row[i] = draw(cell)
            clean = False
        rows.append(row)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue(), rows, clean


@hostile_settings(BURSTGPT_EXAMPLES)
@given(case=burstgpt_files())
def test_burstgpt_trace_keeps_every_request_or_is_refused_in_one_line(case) -> None:
    data, rows, clean = case
    read, refusal = outcome("files.traces", lambda: read_trace(data, "burstgpt"), names=["dataset"])
    if clean and any(int(r[3]) > 0 for r in rows):
        assert read is not None, f"a well-formed trace refused: {refusal}"
    if read is None:
        return
    kept = [r for r in rows if float(r[3]) > 0]  # a row with no response tokens is a failed request: vLLM drops it
    assert len(read) == len(kept)
    for got, row in zip(read, kept, strict=True):  # "8192.0" is 8192, as pandas writes integer columns
        assert (got.timestamp, got.input_len, got.output_len) == (float(row[0]), float(row[2]), float(row[3]))
