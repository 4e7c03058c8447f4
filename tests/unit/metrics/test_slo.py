"""SLOs: parsing every spelling (percentile and per-request), one-line errors, checks against hand-computed
percentiles."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.metrics.benchmark import metrics_from_samples
from planner.metrics.slo import Slo, binding, check, format_slos, margin, parse_slo, parse_slos


@pytest.mark.parametrize(
    ("text", "metric", "stat", "limit_s"),
    [
        ("ttft_p99_ms=1000", "ttft", "p99", 1.0),
        ("p99_ttft_ms=1000", "ttft", "p99", 1.0),  # vLLM's result key, as serve_sla's --sla-params spell it
        ("TPOT_P50_MS:50", "tpot", "p50", 0.05),
        ("median_e2el_ms=2500", "e2el", "p50", 2.5),
        ("itl_mean_ms = 7.5", "itl", "mean", 0.0075),
    ],
)
def test_parse_slo_spellings(text: str, metric: str, stat: str, limit_s: float) -> None:
    slo = parse_slo(text)
    assert (slo.metric, slo.stat) == (metric, stat)
    assert slo.limit_s == pytest.approx(limit_s)


@pytest.mark.parametrize("text", ["ttft_p95_ms=100", "ttft_p99=100", "ttft_p99_ms=0", "ttft_p99_ms=nan", "x", ""])
def test_bad_slo_names_value_and_what_is_accepted(text: str) -> None:
    with pytest.raises(InvalidParameterError) as err:
        parse_slo(text)
    assert err.value.name == "slo" and err.value.value == text
    assert "ttft_p99_ms=1000" in err.value.accepted and "\n" not in str(err.value)


def test_parse_slos_joins_flags_and_refuses_a_repeat() -> None:
    slos = parse_slos(["ttft_p99_ms=1000,tpot_p99_ms=50", "e2el_p90_ms=9000"])
    assert format_slos(slos) == "ttft_p99_ms=1000,tpot_p99_ms=50,e2el_p90_ms=9000"
    assert parse_slos([format_slos(slos)]) == slos
    with pytest.raises(InvalidParameterError, match="given twice"):
        parse_slos(["ttft_p99_ms=1000", "p99_ttft_ms=900"])


def test_check_against_hand_computed_percentiles() -> None:
    # TTFTs 0.1 … 1.0 s: np.percentile(linear) p50 = 0.55, p99 = 0.1 + 0.99 · 0.9 = 0.991 s.
    ttft = [0.1 * k for k in range(1, 11)]
    m = metrics_from_samples(
        ttft_s=ttft,
        e2e_s=[t + 1.0 for t in ttft],
        output_tokens=[11] * 10,
        input_tokens=[5] * 10,
        itl_s=[0.1] * 100,
        duration_s=10.0,
    )
    checks = check(m, (Slo("ttft", "p99", 1.0), Slo("ttft", "p50", 0.5), Slo("tpot", "p99", 0.2)))
    assert checks[0].value_s == pytest.approx(0.991) and checks[0].ok
    assert checks[1].value_s == pytest.approx(0.55) and not checks[1].ok
    assert checks[2].value_s == pytest.approx(0.1)  # (E2E − TTFT) / (11 − 1) = 1.0 / 10
    assert margin(checks) == pytest.approx(0.1)  # 0.55 / 0.5 − 1
    assert binding(checks).slo.key == "ttft_p50_ms"
    assert checks[1].describe() == "p50 TTFT 550.0 ms (SLO 500 ms)"


def test_no_sample_never_meets() -> None:
    m = metrics_from_samples(ttft_s=[0.1], e2e_s=[0.2], output_tokens=[1], input_tokens=[1], itl_s=[], duration_s=1.0)
    (c,) = check(m, (Slo("tpot", "p99", 1.0),))
    assert c.value_s is None and math.isinf(c.ratio) and not c.ok


@pytest.mark.parametrize(
    ("text", "metric", "limit_ms"),
    [("ttft:500", "ttft", 500.0), ("tpot:0.3", "tpot", 0.3), ("E2EL:2000", "e2el", 2000.0)],
)
def test_per_request_slos_read_vllms_goodput_pairs(text: str, metric: str, limit_ms: float) -> None:
    slo = parse_slo(text, per_request=True)
    assert (slo.metric, slo.stat, slo.per_request, slo.key) == (metric, None, True, metric)
    assert slo.limit_ms == limit_ms  # exactly as typed (0.3, not 0.30000000000000004)
    assert slo.text == f"{metric}:{limit_ms:g}" and parse_slo(slo.text, per_request=True) == slo


@pytest.mark.parametrize("text", ["ttft=5", "itl:5", "ttft:0", "ttft_p99_ms:100", "ttft", "ttft:3600001"])
def test_per_request_slos_take_only_the_goodput_spelling(text: str) -> None:
    # vLLM's --goodput: ttft, tpot or e2el, a colon, milliseconds (0 < ms <= an hour)
    with pytest.raises(InvalidParameterError) as err:
        parse_slo(text, per_request=True)
    assert err.value.value == text and "ttft:500" in err.value.accepted


def test_one_grammar_keeps_the_two_forms_apart() -> None:
    # ttft:500 is a per-request limit, not a percentile one; a percentile SLO is not a goodput pair
    with pytest.raises(InvalidParameterError):
        parse_slos(["ttft:500"])
    assert parse_slos(["ttft:500 tpot:50"], per_request=True) == (Slo("ttft", None, 0.5), Slo("tpot", None, 0.05))
    assert format_slos(parse_slos(["tpot:50,ttft:500"], per_request=True)) == "tpot:50,ttft:500"
    with pytest.raises(InvalidParameterError, match="given twice"):
        parse_slos(["ttft:500,ttft:600"], per_request=True)
    with pytest.raises(InvalidParameterError, match="statistic of the run"):
        Slo("ttft", None, 0.5).value_s(
            metrics_from_samples(
                ttft_s=[0.1], e2e_s=[0.2], output_tokens=[2], input_tokens=[1], itl_s=[0.1], duration_s=1.0
            )
        )
