"""``python -m planner size``: the issue's JSON keys, the text answer, one-line errors for bad SLOs and prices."""

from __future__ import annotations

import json

import pytest

from planner.cli.main import main
from planner.predict.band import COVERAGE

BASE = ["size", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--target-rate", "6", "--input-len", "2048"]
NARROW = ["--gpus", "h100-sxm-80gb,a100-sxm4-80gb", "--max-gpus", "1", "--quantization", "none"]


def test_json_is_a_list_of_options_with_the_issues_keys(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE, *NARROW, "--output-len", "300", "--slo", "ttft_p99_ms=1000", "--slo", "tpot_p99_ms=50", "--json"]
    assert main(argv) == 0
    options = json.loads(capsys.readouterr().out)
    assert isinstance(options, list) and options
    for key in (
        "gpu",
        "tensor_parallel_size",
        "quantization",
        "kv_cache_dtype",
        "replicas",
        "num_gpus",
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "p99_ttft_ms",
        "p99_tpot_ms",
        "meets_slo",
    ):
        assert key in options[0], key
    best = options[0]
    assert best["rank"] == 1 and best["meets_slo"] is True
    assert best["usd_per_hour"] == pytest.approx(best["num_gpus"] * best["usd_per_gpu_hour"])
    assert best["p99_tpot_ms"] <= 50 and best["p99_ttft_ms"] <= 1000
    assert best["launch_command"].startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct")
    assert [o["rank"] for o in options if o["meets_slo"]] == list(range(1, 1 + sum(o["meets_slo"] for o in options)))


def test_price_flag_changes_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *NARROW, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)[0]
    assert main([*BASE, *NARROW, "--price", f"{first['gpu']}=100", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)[0]
    assert second["gpu"] != first["gpu"]


def test_text_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *NARROW]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(("1 ×", "2 ×", "3 ×"))
    assert "launch" in out and "vllm serve" in out


def test_nothing_meets_says_what_comes_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *NARROW, "--slo", "tpot_p99_ms=1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("No configuration meets the SLOs") and "tpot_p99_ms binds" in first


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--slo", "ttft_p95_ms=100"], "--slo 'ttft_p95_ms=100' is not valid: expected METRIC_STAT_ms=LIMIT"),
        (["--price", "h100-sxm-80gb=free"], "--price 'h100-sxm-80gb=free' is not valid: expected GPU_ID=USD_PER_HOUR"),
        (["--gpus", "h100:0"], "--gpus 'h100:0' is not valid: expected catalog GPU ids"),
        (["--headroom", "2"], "--headroom 2.0 is not valid: expected a number in [0, 1]"),
        (["--quantization", "int3"], "--quantization 'int3' is not valid: expected one or more of none, fp8"),
    ],
)
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], flags: list[str], expected: str) -> None:
    assert main([*BASE, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("python -m planner size: error: ")
    assert expected in err


def test_unknown_gpu_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--gpus", "h100-pcix"]) == 2
    assert "unknown GPU 'h100-pcix'; closest catalog ids" in capsys.readouterr().err


PESSIMISTIC_LINE = (
    "SLOs checked against the pessimistic end of the predictor's error band (--slo-estimate point to use the point "
    f"estimate): a prediction interval of {COVERAGE:.0%}"
)
POINT_LINE = (
    "SLOs checked against the predictor's point estimate (--slo-estimate pessimistic to check them against the worse "
    "end of its error band)."
)


@pytest.mark.parametrize(("flags", "line"), [([], PESSIMISTIC_LINE), (["--slo-estimate", "point"], POINT_LINE)])
def test_text_says_which_end_of_the_band_the_slos_were_checked_at(
    capsys: pytest.CaptureFixture[str], flags: list[str], line: str
) -> None:
    assert main([*BASE, *NARROW, *flags]) == 0
    second = capsys.readouterr().out.splitlines()[1]
    assert second.startswith(line)


@pytest.mark.parametrize(("flags", "estimate"), [([], "pessimistic"), (["--slo-estimate", "point"], "point")])
def test_json_says_the_end_and_each_ranked_row_the_values_checked(
    capsys: pytest.CaptureFixture[str], flags: list[str], estimate: str
) -> None:
    assert main([*BASE, *NARROW, "--slo", "ttft_p99_ms=1000", "--slo", "tpot_p99_ms=50", *flags, "--json"]) == 0
    options = json.loads(capsys.readouterr().out)
    assert {o["slo_estimate"] for o in options} == {estimate}
    for option in (o for o in options if o["meets_slo"]):
        assert [c["slo"] for c in option["slo_checks"]] == ["ttft_p99_ms", "tpot_p99_ms"]
        for c in option["slo_checks"]:
            assert c["checked_ms"] == pytest.approx(c["predicted_ms"] * c["band_ratio"], rel=1e-9)
            assert c["checked_ms"] <= c["limit_ms"] and c["met"] is True
            # the shipped band's high ends are above 1 for every figure; the point estimate is the prediction
            assert c["band_ratio"] > 1.0 if estimate == "pessimistic" else c["band_ratio"] == 1.0
    assert all(o["slo_checks"] == [] for o in options if not o["meets_slo"])


def test_bad_slo_estimate_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*BASE, "--slo-estimate", "optimistic"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("python -m planner size: error: ")
    assert "--slo-estimate" in err and "'optimistic'" in err and "pessimistic" in err and "point" in err


def test_disaggregation_flags(capsys) -> None:
    from planner.cli.main import main

    argv = ["size", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--target-rate", "20", "--gpus", "h100-sxm-80gb"]
    argv += ["--quantization", "none", "--kv-cache-dtype", "auto", "--disaggregation", "on"]
    assert main([*argv, "--kv-transfer-gb-per-s", "0.1", "--kv-transfer-latency-ms", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["mode"] for r in rows} == {"disaggregated"}
    assert all(set(r["prefill"]) >= {"gpu", "tensor_parallel_size", "replicas"} for r in rows)
    assert any("KV transfer alone takes" in (r["reason"] or "") for r in rows)
    assert main([*argv, "--kv-transfer-latency-ms", "-5"]) == 2
    assert "--kv-transfer-latency-ms" in capsys.readouterr().err
