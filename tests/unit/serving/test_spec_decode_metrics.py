"""Speculative-decoding acceptance of a run from the server's counters, on REAL vLLM 0.24.0 ``/metrics`` bytes.

Golden inputs: bench/data/h200_sweeps/llama-3.1-8b-eagle3/ and llama-3.1-8b-spec/*.metrics.txt.gz, the ``/metrics`` of
vLLM 0.24.0 on an H200 after each point of ``bench/h200/sweep_campaign.py`` (``initial`` = as the server came up).
The differences below are worked by hand from the ``vllm:spec_decode_*_total`` lines of those files; the formulas
are vLLM's (``vllm/v1/spec_decode/metrics.py``): acceptance rate = accepted / draft tokens, mean acceptance length =
1 + accepted / drafts, per position = accepted at position i / drafts. vLLM's own benchmark stored the same run's
figures in ``in512_c1.json`` (``spec_decode_acceptance_rate`` 61.33 %, ``spec_decode_acceptance_length`` 2.8398).
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from planner.loadtest.results import import_runs, spec_decode_frame, to_vllm_file
from planner.serving.server_metrics import (
    ServerSample,
    SpecDecodeStats,
    parse_metrics,
    spec_decode_stats,
)

H200 = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps"


def _sample(folder: str, name: str) -> ServerSample:
    return parse_metrics(gzip.decompress((H200 / folder / f"{name}.metrics.txt.gz").read_bytes()).decode(), "vllm", 0.0)


@pytest.mark.parametrize(
    ("folder", "before", "after", "drafts", "draft_tokens", "accepted", "per_pos"),
    [
        # EAGLE-3, k=3: 181 drafts, 543 draft tokens (181 × 3), 333 accepted; per position 143, 106, 84
        ("llama-3.1-8b-eagle3", "initial", "in512_c1", 181, 543, 333, (143, 106, 84)),
        # c16 after c1: 1611 − 181, 4833 − 543, 3000 − 333; positions 1267 − 143, 979 − 106, 754 − 84
        ("llama-3.1-8b-eagle3", "in512_c1", "in512_c16", 1430, 4290, 2667, (1124, 873, 670)),
        # draft model, k=5, c1: 165 drafts, 825 tokens, 345 accepted
        ("llama-3.1-8b-spec", "initial", "in512_c1", 165, 825, 345, (130, 85, 59, 45, 26)),
        # c256 after c64: 27593 − 6905, 137965 − 34525, 60367 − 15216; positions 20628 − 5159, ...
        ("llama-3.1-8b-spec", "in512_c64", "in512_c256", 20688, 103440, 45151, (15469, 11318, 8231, 6106, 4027)),
    ],
)
def test_counters_differenced_from_real_vllm_scrapes(folder, before, after, drafts, draft_tokens, accepted, per_pos):
    stats = spec_decode_stats(_sample(folder, before), _sample(folder, after))
    assert (stats.num_drafts, stats.num_draft_tokens, stats.num_accepted_tokens) == (drafts, draft_tokens, accepted)
    assert stats.accepted_per_pos == per_pos


def test_rates_worked_by_hand():
    eagle = spec_decode_stats(_sample("llama-3.1-8b-eagle3", "initial"), _sample("llama-3.1-8b-eagle3", "in512_c1"))
    assert eagle.acceptance_rate == pytest.approx(0.613260, abs=1e-6)  # 333 / 543; vLLM's file: 61.3259 %
    assert eagle.mean_acceptance_length == pytest.approx(2.839779, abs=1e-6)  # 1 + 333 / 181; vLLM's: 2.8398
    assert eagle.per_position_acceptance == pytest.approx((0.790055, 0.585635, 0.464088), abs=1e-6)  # /181
    spec = spec_decode_stats(_sample("llama-3.1-8b-spec", "in512_c64"), _sample("llama-3.1-8b-spec", "in512_c256"))
    # synthetic rates asked for: 0.75, 0.55, 0.4, 0.3, 0.2 (the folder README); 15469 / 20688 = 0.7477, ...
    assert spec.per_position_acceptance == pytest.approx((0.7477, 0.5471, 0.3979, 0.2951, 0.1947), abs=1e-4)
    assert spec.mean_acceptance_length == pytest.approx(3.1825, abs=1e-4)  # 1 + 45151 / 20688
    assert spec.acceptance_rate == pytest.approx(0.4365, abs=1e-4)  # 45151 / 103440


def test_no_counters_no_drafts_and_restarts():
    plain = parse_metrics('vllm:num_requests_running{model_name="m"} 1.0\n', "vllm", 0.0)
    assert plain.spec_decode_num_drafts_total is None and plain.spec_decode_accepted_per_pos_total is None
    eagle = _sample("llama-3.1-8b-eagle3", "in512_c1")
    assert spec_decode_stats(plain, eagle) is None and spec_decode_stats(eagle, None) is None
    assert spec_decode_stats(eagle, _sample("llama-3.1-8b-eagle3", "initial")) is None  # counters went down
    idle = spec_decode_stats(eagle, eagle)
    assert idle.num_drafts == 0 and idle.acceptance_rate is None and idle.mean_acceptance_length is None
    assert idle.per_position_acceptance == ()


def test_per_position_needs_positions_from_zero():
    text = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="1"} 3.0\n'
    assert parse_metrics(text, "vllm", 0.0).spec_decode_accepted_per_pos_total is None


def test_vllm_bench_file_and_our_file_carry_the_counters(tmp_path):
    raw = (H200 / "llama-3.1-8b-eagle3" / "in512_c1.json.gz").read_bytes()
    (run,) = import_runs(raw, "in512_c1.json")
    assert (run.spec_decode.num_drafts, run.spec_decode.num_draft_tokens) == (181, 543)
    assert run.spec_decode.mean_acceptance_length == pytest.approx(2.839779, abs=1e-6)
    assert run.spec_decode.accepted_per_pos == ()  # vLLM's file has no per-position counts
    ours = to_vllm_file(run)
    assert ours["spec_decode_acceptance_rate"] == pytest.approx(61.3259668, abs=1e-6)  # vLLM's key, in percent
    with_pos = SpecDecodeStats(181, 543, 333, (143, 106, 84))
    again = import_runs(json.dumps(to_vllm_file(type(run)(**{**run.__dict__, "spec_decode": with_pos}))), "x.json")
    assert again[0].spec_decode.accepted_per_pos == (143, 106, 84)
    frame = spec_decode_frame(again)
    assert frame.loc[0, "per_position_acceptance"] == "0.79, 0.59, 0.46"
    assert frame.loc[0, "median_tpot_ms"] == pytest.approx(2.2832, abs=1e-4)  # vLLM's median_tpot_ms
    assert datetime  # imported for parity with the other result tests
