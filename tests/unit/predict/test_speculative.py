"""Speculative decoding in the step model, against numbers worked by hand on a hand-built deployment.

Target: 4 GB of weights read at 1 TB/s (4 ms), one layer keeping 100 kB of KV per token (0.1 µs per token read),
2·10¹¹ FLOPs per token at 10¹⁵ FLOP/s (0.2 ms per token), 0.2 ms of host time per forward, every efficiency 1 and no
other overhead. Drafter: 0.5 GB (0.5 ms), 10 kB of KV per token, 10⁹ FLOPs per token. ``k = 3``, conditional rates
0.8, 0.75, 0.75 (vLLM's per-position 0.8, 0.6, 0.45: the EAGLE-3 run's synthetic rates).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.errors import InvalidParameterError
from planner.predict.shape import AttentionGroup
from planner.predict.speculative import (
    SpecDecodeConfig,
    break_even_batch,
    conditional_rates,
    expected_accepted,
    layer_head_shape,
    rates_from_measured,
    speculative_estimate,
)
from planner.predict.step_time import StepCoefficients
from tests.unit.predict.conftest import tiny_shape

COEF = StepCoefficients(
    step_overhead_s=0.2e-3,
    seq_overhead_s=0.0,
    layer_overhead_s=0.0,
    moe_layer_overhead_s=0.0,
    weight_read_efficiency=1.0,
    kv_read_efficiency=1.0,
    decode_matmul_fraction=1.0,
    prefill_efficiency=1.0,
    eager_layer_s=0.0,
    eager_moe_layer_s=0.0,
)
TARGET = replace(
    tiny_shape(),
    dense_weight_bytes=4e9,
    memory_bandwidth_bytes_per_s=1e12,
    linear_flops_per_token=2e11,
    peak_flops=1e15,
    groups=(AttentionGroup("full", None, 1, 1e5),),
    num_layers=1,
)
DRAFT = replace(
    TARGET, dense_weight_bytes=0.5e9, linear_flops_per_token=1e9, groups=(AttentionGroup("full", None, 1, 1e4),)
)
SPEC = SpecDecodeConfig("draft_model", 3, (0.8, 0.75, 0.75), DRAFT, draft_forward_overhead_s=0.0)


def test_expected_accepted_and_rates_from_vllm_per_position():
    assert expected_accepted([0.8, 0.75, 0.75]) == pytest.approx(0.8 + 0.6 + 0.45)
    assert conditional_rates([0.8, 0.6, 0.45]) == pytest.approx((0.8, 0.75, 0.75))
    # the draft-model run's synthetic rates: 0.75, 0.55/0.75, 0.4/0.55, 0.3/0.4, 0.2/0.3
    assert conditional_rates([0.75, 0.55, 0.4, 0.3, 0.2]) == pytest.approx(
        (0.75, 0.7333, 0.7273, 0.75, 0.6667), abs=1e-4
    )
    assert conditional_rates([0.5, 0.0, 0.0]) == (0.5, 0.0, 0.0)
    # Π conditional = per position, so E[accepted] is the per-position sum either way
    assert expected_accepted(conditional_rates([0.75, 0.55, 0.4, 0.3, 0.2])) == pytest.approx(2.2)


def test_estimate_worked_by_hand_at_batch_8():
    est = speculative_estimate(TARGET, SPEC, batch_size=8, context_tokens=1000, coefficients=COEF)
    # without: 0.2 + 4 + KV (8·1000 read + 8 written)·0.1 µs = 0.8008 + FLOPs 8 · 0.2 = 1.6  -> 6.6008 ms
    assert est.base_step_s == pytest.approx(6.6008e-3, rel=1e-9)
    # verification, 32 tokens: 0.2 + 4 + (8000 + 32)·0.1 µs = 0.8032 + 32 · 0.2 = 6.4     -> 11.4032 ms
    assert est.verify_s == pytest.approx(11.4032e-3, rel=1e-9)
    # draft: 1st forward over 32 tokens 0.2 + 0.5 + (8000 + 32)·0.01 µs + 32 µs = 0.81232 ms;
    # 2nd and 3rd over 8 tokens 0.2 + 0.5 + 0.08008 + 0.008 = 0.78808 ms each            -> 2.38848 ms
    assert est.draft_s == pytest.approx(2.38848e-3, rel=1e-9)
    assert est.tokens_per_step == pytest.approx(2.85)
    assert est.tpot_s == pytest.approx(13.79168e-3 / 2.85, rel=1e-9)  # 4.8392 ms
    assert est.tpot_without_s == pytest.approx(6.6008e-3, rel=1e-9)
    assert est.speedup == pytest.approx(1.36403, abs=1e-5)
    assert est.output_throughput == pytest.approx(8 * 2.85 / 13.79168e-3, rel=1e-9)  # 1653.2 tok/s
    assert est.output_throughput_without == pytest.approx(8 / 6.6008e-3, rel=1e-9)  # 1212.0 tok/s


def test_it_stops_paying_at_batch_70():
    # step(B) = 6.3 ms + 0.93646 ms·B against 2.85 · (4.2 ms + 0.3001 ms·B): equal at B = 5.67 / 0.081175 = 69.85
    assert break_even_batch(TARGET, SPEC, context_tokens=1000, coefficients=COEF) == 70
    below = speculative_estimate(TARGET, SPEC, batch_size=69, context_tokens=1000, coefficients=COEF)
    at = speculative_estimate(TARGET, SPEC, batch_size=70, context_tokens=1000, coefficients=COEF)
    assert below.speedup > 1.0 >= at.speedup
    assert break_even_batch(TARGET, SPEC, context_tokens=1000, coefficients=COEF, max_batch=32) is None
    never = SpecDecodeConfig("draft_model", 3, (0.0,), DRAFT, draft_forward_overhead_s=0.0)
    assert break_even_batch(TARGET, never, context_tokens=1000, coefficients=COEF) == 1


def test_ngram_costs_no_gpu_pass_and_needs_rates():
    est = speculative_estimate(TARGET, SpecDecodeConfig("ngram", 3, (0.5,)), batch_size=1, context_tokens=10)
    assert est.draft_s == 0.0 and est.tokens_per_step == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    with pytest.raises(InvalidParameterError, match="acceptance_rates"):
        SpecDecodeConfig("ngram", 3)


def test_default_rates_and_padding():
    assert SpecDecodeConfig("eagle3", 3, draft_shape=DRAFT).rates == (0.8, 0.8, 0.8)
    assert SpecDecodeConfig("mtp", 1, draft_shape=DRAFT).rates == (0.85,)
    assert SpecDecodeConfig("draft_model", 4, (0.9, 0.7), DRAFT).rates == (0.9, 0.7, 0.7, 0.7)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"method": "medusa2", "num_speculative_tokens": 3}, "method"),
        ({"method": "eagle", "num_speculative_tokens": 0}, "num_speculative_tokens"),
        ({"method": "eagle", "num_speculative_tokens": 2, "acceptance_rates": (1.2,)}, "acceptance_rates"),
        ({"method": "eagle", "num_speculative_tokens": 2}, "draft_shape"),
    ],
)
def test_bad_config_names_the_field(kwargs, name):
    with pytest.raises(InvalidParameterError) as err:
        SpecDecodeConfig(**kwargs)
    assert err.value.name == name


def test_layer_head_shape_by_hand():
    target = replace(
        TARGET, dense_weight_bytes=16e9, lm_head_flops_per_token=1e9, num_layers=32, linear_flops_per_token=3.2e10
    )
    head = layer_head_shape(target)
    # (16 GB − a 1 GB LM head) / 32 layers + the LM head = 0.46875 + 1 GB
    assert head.dense_weight_bytes == pytest.approx(1.46875e9)
    assert head.num_layers == 1 and head.linear_flops_per_token == pytest.approx(1e9)
    assert layer_head_shape(target, weight_bytes=0.58 * 2**30).dense_weight_bytes == pytest.approx(0.58 * 2**30)
    with pytest.raises(InvalidParameterError):
        layer_head_shape(target, num_layers=0)
    with pytest.raises(InvalidParameterError):
        speculative_estimate(TARGET, SPEC, batch_size=0, context_tokens=10)


def test_fitted_draft_model_overhead_is_added_per_draft_forward():
    fitted = SpecDecodeConfig("draft_model", 3, (0.8, 0.75, 0.75), DRAFT)
    assert fitted.forward_overhead_s == pytest.approx(7.6e-3)  # bench/spec_prediction.py
    est = speculative_estimate(TARGET, fitted, batch_size=8, context_tokens=1000, coefficients=COEF)
    assert est.draft_s == pytest.approx(2.38848e-3 + 3 * 7.6e-3, rel=1e-9)
    assert SpecDecodeConfig("eagle3", 3, draft_shape=DRAFT).forward_overhead_s == 0.0
    with pytest.raises(InvalidParameterError):
        SpecDecodeConfig("eagle3", 3, draft_shape=DRAFT, draft_forward_overhead_s=-1.0)


def test_rates_from_a_measured_run():
    # the H200 EAGLE-3 run at c=1: per position 143/181, 106/181, 84/181
    assert rates_from_measured([143 / 181, 106 / 181, 84 / 181]) == pytest.approx(
        (0.790055, 0.741259, 0.792453), abs=1e-6
    )
    # vLLM's file has only the length, 2.839779: one rate a with a + a² + a³ = 1.839779 -> a = 0.77469
    (a,) = rates_from_measured(mean_acceptance_length=2.839779, num_speculative_tokens=3)
    assert a == pytest.approx(0.77469, abs=1e-5) and a + a**2 + a**3 == pytest.approx(1.839779, abs=1e-9)
    with pytest.raises(InvalidParameterError):
        rates_from_measured(mean_acceptance_length=5.0, num_speculative_tokens=3)
    with pytest.raises(InvalidParameterError):
        rates_from_measured()
