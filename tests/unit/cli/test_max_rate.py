"""``python -m planner bench --find-max-rate``: the search's flags, its step lines, the answer, ``--json`` and
``--save-result``, on a search scripted here (:func:`planner.loadtest.max_rate.find_max_rate` is replaced at the
boundary, so no request is sent).

The scripted search has two steps: a burst that measured 40 requests in 4 s (10 req/s, p99 TTFT 800 ms: missed) and a
run at 6 req/s (4 s, 24 requests, p99 TTFT 200 ms: met). TTFTs are all equal, so every percentile is that value.
"""

from __future__ import annotations

import json
import math

import pytest

from planner.cli import max_rate
from planner.cli.main import main
from planner.loadtest.max_rate import MaxRateResult, MaxRateStep
from planner.loadtest.runner import LoadResult
from planner.metrics.benchmark import compute_benchmark_metrics
from planner.metrics.slo import check, parse_slos
from planner.serving.streaming import RequestRecord, TokenChunk

BENCH = ["bench", "--endpoint", "vllm:http://127.0.0.1:9", "--num-prompts", "8", "--output-len", "2"]


def _result(n: int, duration_s: float, ttft_s: float, settings) -> LoadResult:
    chunks = (TokenChunk(ttft_s, "a", 1, "content"), TokenChunk(ttft_s + 0.01, "b", 1, "content"))
    record = RequestRecord(
        "vllm", ok=True, first_byte_s=0.001, first_token_s=ttft_s, last_token_s=ttft_s + 0.01,
        end_s=ttft_s + 0.01, chunks=chunks, output_tokens=2, output_tokens_source="usage", prompt_tokens=12,
    )  # fmt: skip
    metrics = compute_benchmark_metrics([record] * n, [12] * n, duration_s)
    return LoadResult("vllm", settings, (record,) * n, (12,) * n, metrics, duration_s)


@pytest.fixture
def scripted(monkeypatch):
    asked = {}

    async def find_max_rate(endpoint, spec, *, on_step, started, tag):
        asked.update(endpoint=endpoint, spec=spec)
        steps = []
        for index, level, n, ttft_s in ((1, math.inf, 40, 0.8), (2, 6.0, 24, 0.2)):
            result = _result(n, 4.0, ttft_s, spec.level_settings(level))
            checks = check(result.metrics, spec.slos)
            met = all(c.ok for c in checks)
            why = f"{'met' if met else 'missed'}: p99 TTFT {ttft_s * 1e3:.0f} ms"
            steps.append(MaxRateStep(index, level, f"step {index}", result, checks, met, why))
            on_step(steps[-1])
        answer = "6 req/s meets every SLO (10 req/s does not)"
        return MaxRateResult(spec, tuple(steps), steps[1], steps[0], answer, "tolerance")

    monkeypatch.setattr(max_rate, "find_max_rate", find_max_rate)
    return asked


def test_text_prints_each_step_then_the_answer(scripted, capsys) -> None:
    assert main([*BENCH, "--find-max-rate", "--slo", "ttft_p99_ms=500", "--max-steps", "5"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "step 1:          burst        10 req/s measured  missed: p99 TTFT 800 ms",
        "step 2:        6 req/s         6 req/s measured  met: p99 TTFT 200 ms",
        "6 req/s meets every SLO (10 req/s does not)",
    ]
    spec = scripted["spec"]
    assert (spec.variable, spec.max_steps, spec.tolerance, spec.probe_s, spec.step_duration_s) == (
        "request_rate",
        5,
        0.05,
        20.0,
        120.0,
    )
    assert [s.text for s in spec.slos] == [s.text for s in parse_slos(["ttft_p99_ms=500"])]


def test_json_and_save_result(scripted, tmp_path, capsys) -> None:
    saved = tmp_path / "steps.json"
    argv = [*BENCH, "--find-max-concurrency", "--slo", "ttft_p99_ms=500", "--json", "--save-result", str(saved)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["variable"], data["value"], data["stopped"]) == ("max_concurrency", 6.0, "tolerance")
    burst, run = data["steps"]
    assert (burst["step"], burst["level"], burst["burst"], burst["meets_slo"]) == (1, None, True, False)
    assert (run["level"], run["meets_slo"], run["completed"]) == (6.0, True, 24)
    assert run["request_throughput"] == pytest.approx(24 / 4.0) and run["p99_ttft_ms"] == pytest.approx(200.0)
    files = json.loads(saved.read_text())
    assert [f["completed"] for f in files] == [40, 24]  # one vllm bench serve result per step, as a sweep's


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--find-max-rate", "--find-max-concurrency", "--slo", "ttft_p99_ms=500"], "--find-max-concurrency True"),
        (["--find-max-rate"], "--slo None is not valid: expected at least one --slo, e.g. --slo ttft_p99_ms=500"),
        (["--find-max-rate", "--slo", "ttft_p99_ms=500", "--max-steps", "1"], "--max-steps 1 is not valid"),
    ],
)
def test_bad_search_flags_are_one_line_exit_2(scripted, capsys, flags, line) -> None:
    assert main([*BENCH, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m planner bench: error: {line}") and err.count("\n") == 1
    assert scripted == {}  # the search never started
