"""planner.capacity.verdict: the one line a page shows for a plan, built on plans changed by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.plan import plan
from planner.capacity.result import VersionFigures, VersionRange
from planner.capacity.scenario import Scenario
from planner.capacity.verdict import Verdict, verdict

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"  # config.json: max_position_embeddings 131,072


@pytest.fixture(scope="module")
def fits():
    return plan(Scenario(model=LLAMA_8B, gpu="h100", engine_version="0.19.0"), advise=False)


def test_a_plan_that_fits(fits) -> None:
    assert fits.fits and fits.version_range is None
    assert verdict(fits) == Verdict("fits", f"Fits — {fits.engine_label}")


def test_refused_and_no_fit_say_why(fits) -> None:
    assert verdict(replace(fits, fits=False, refused=True, reason="32 heads")) == Verdict(
        "refused", "Refused: 32 heads", "32 heads"
    )
    assert verdict(replace(fits, fits=False, reason="weights exceed the budget")) == Verdict(
        "no_fit", "Does not fit: weights exceed the budget", "weights exceed the budget"
    )


def test_versions_that_would_not_start_it_make_a_warning(fits) -> None:
    def figures(version: str, ok: bool) -> VersionFigures:
        return VersionFigures(version, 1.0, 1, 1.0, ok)

    versions = (figures("0.14.0", False), figures("0.17.0", False), figures("0.28.0", True))
    vr = VersionRange(versions, low=versions[0], high=versions[2])
    detail = "vLLM 0.14.0, 0.17.0 would not start it (it starts in 0.28.0); set the version you run"
    assert verdict(replace(fits, version_range=vr)) == Verdict(
        "warning", f"Fits only in part — {fits.engine_label}: {detail}", detail
    )


def test_a_target_beyond_the_models_limit_is_a_warning(fits) -> None:
    scenario = replace(fits.scenario, target_context=200_000)
    detail = "not at the target context 200,000: beyond the model's limit of 131,072 tokens"
    assert verdict(replace(fits, scenario=scenario)) == Verdict(
        "warning", f"Fits only in part — {fits.engine_label}: {detail}", detail
    )
    assert verdict(replace(fits, scenario=replace(scenario, target_context=131_072))).level == "fits"


def test_auto_names_the_length_it_resolved_to() -> None:
    auto = plan(Scenario(model=LLAMA_8B, gpu="h100", engine_version="0.19.0", max_model_len=-1), advise=False)
    # one H100 holds the whole 131,072-token context (its KV cache is ~450,000 tokens at gpu_memory_utilization 0.9)
    assert verdict(auto).text == f"Fits — {auto.engine_label} at max_model_len auto → 131,072 tokens"
    no_fit = replace(auto, fits=False, reason="x")
    assert verdict(no_fit).text == "Does not fit at max_model_len auto → 131,072 tokens: x"
