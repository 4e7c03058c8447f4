"""planner/views/performance.py: the workload of the boxes, what is predicted, and the view of predicted curves."""

from __future__ import annotations

from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.predict.curves import DEFAULT_RATES, MAX_PAGE_OUTPUT_TOKENS
from planner.views.performance import performance_plan, performance_view, workload

BOXES = {"input_len": 512, "output_len": 16, "num_prompts": 8, "range_ratio": 0.0, "sweep_max": 4, "burstiness": 1.0}


def test_workload_of_the_boxes():
    load = workload(BOXES, "rate", "1, 2.5")
    assert load.rates == (1.0, 2.5) and load.rates_error is None
    assert (load.settings.input_len, load.settings.output_len, load.settings.num_prompts) == (512, 16, 8)
    bad = workload(BOXES, "rate", "1, fast")
    assert bad.rates == DEFAULT_RATES
    assert bad.rates_error.startswith("request rates '1, fast' are not valid: expected ")


def test_scenarios_that_cannot_be_predicted_and_why_nothing_is(planned):
    scenarios = [Scenario(engine="tgi"), Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090")]
    made = performance_plan(scenarios, planned(scenarios), workload(BOXES, "concurrency", "1"))
    assert [m.text.split(":")[0] for m in made.messages] == [
        "Scenario 1 (1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · tgi)",
        "Scenario 2 (2 · Llama-3.1-70B-Instruct · rtx-4090 · vllm) does not fit, so it has no performance",
    ]
    assert made.stop.level == "info" and made.stop.text.startswith("Nothing to predict")
    assert made.levels == (1, 2, 4)  # concurrency 1, 2, 4 up to sweep_max 4
    bad_rates = performance_plan(scenarios, planned(scenarios), workload(BOXES, "rate", "x"))
    assert bad_rates.stop.level == "error" and bad_rates.stop.text.startswith("Cannot predict: request rates 'x'")


def test_a_workload_too_large_for_the_page(planned):
    # 10,000 requests × 32,768 output tokens at each of 9 levels: far past the page's cap
    big = BOXES | {"num_prompts": 10_000, "output_len": 32_768, "sweep_max": 256}
    made = performance_plan([Scenario()], planned([Scenario()]), workload(big, "concurrency", "1"))
    assert made.stop.level == "error"
    assert f"more than this page's {MAX_PAGE_OUTPUT_TOKENS:,}" in made.stop.text


def test_the_view_of_predicted_curves_and_progress(planned):
    scenarios = [Scenario(max_model_len=8192)]
    load = workload(BOXES, "concurrency", "1")
    made = performance_plan(scenarios, planned(scenarios), load)
    assert made.stop is None and len(made.jobs) == 1
    progress = []
    view = performance_view(made, load, on_progress=lambda done, text: progress.append((done, text)))
    assert view.nothing is None and view.messages == ()
    (headline,) = view.headlines
    assert headline.label is None  # one curve: no label over its figures
    assert headline.metrics[0][0] == "Knee" and len(headline.metrics) == 5
    assert view.caption.startswith("512 prompt tokens and 16 output tokens a request")
    assert list(view.table["concurrency"]) == ["1", "2", "4"]
    assert progress[-1] == (1.0, "Predicting 1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · vllm: level 3 of 3")


def test_a_failed_prediction_is_a_warning_and_none_left_is_said(planned):
    scenarios = [Scenario(max_model_len=8192)]
    load = workload(BOXES, "concurrency", "1")
    made = performance_plan(scenarios, planned(scenarios), load)

    def fails(*args, **kwargs):
        raise InvalidParameterError("profile", "x", "a profile for this GPU")

    view = performance_view(made, load, curve=fails)
    label = "1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · vllm"
    assert view.messages[0].text.startswith(f"Scenario {label}: no prediction: ")
    assert view.nothing == "No scenario could be predicted for this workload (see above why)."
