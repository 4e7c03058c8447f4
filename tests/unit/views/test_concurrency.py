"""planner/views/concurrency.py: the range slider's choices and the chart and table over a range.

Llama-3.1-8B-Instruct's context limit is 131,072 = 2^17 tokens, so the slider holds the powers of two from 128 = 2^7
to 2^17: eleven choices.
"""

from __future__ import annotations

from planner.capacity.scenario import Scenario
from planner.errors import UnsupportedModelError
from planner.views.concurrency import CHART_CAPTION, concurrency_chart, concurrency_setup


def test_the_slider_spans_powers_of_two_up_to_the_models_limit(planned):
    scenarios = [Scenario()]
    setup = concurrency_setup(scenarios, planned(scenarios))
    assert setup.options == tuple(2**k for k in range(7, 18))
    assert setup.value == (512, 131_072) and setup.messages == () and setup.nothing is None
    # a range the link chose is kept, even off the powers of two
    setup = concurrency_setup(scenarios, planned(scenarios), (1000, 65536))
    assert 1000 in setup.options and setup.value == (1000, 65536)


def test_scenarios_that_cannot_be_charted_say_why_in_order(planned):
    scenarios = [Scenario(model="nobody/none"), Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090")]
    failed = UnsupportedModelError("nobody/none is not in the catalog")
    pairs = [(failed, failed), *planned(scenarios[1:])]
    setup = concurrency_setup(scenarios, pairs)
    assert [m.level for m in setup.messages] == ["error", "warning"]
    assert setup.messages[0].text == "Scenario 1 cannot be planned: nobody/none is not in the catalog"
    assert setup.messages[1].text.startswith("Scenario 2 does not fit: ")
    nothing = concurrency_setup(scenarios[:1], pairs[:1])
    assert nothing.nothing.startswith("No scenario could be planned") and nothing.options == ()


def test_the_chart_and_table_over_a_range(planned):
    scenarios = [Scenario(max_model_len=8192)]
    setup = concurrency_setup(scenarios, planned(scenarios))
    chart = concurrency_chart(setup, 1024, 8192)
    assert chart.problem is None and chart.figure is not None and chart.captions[0] == CHART_CAPTION
    assert list(chart.table.index) == ["1K", "2K", "4K", "8K"]
    assert chart.table.index.name == "context (tokens)"
    assert chart.csv.splitlines()[0].startswith("context_tokens,")
    assert concurrency_chart(setup, 4096, 4096).problem == "Pick a range with two different ends."


def test_a_range_nothing_fits_in_says_so_instead_of_a_blank_chart(planned):
    scenarios = [Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090", engine_version="0.28.0")]
    setup = concurrency_setup(scenarios, planned(scenarios))
    chart = concurrency_chart(setup, 512, 4096)
    assert chart.figure is None and chart.empty.startswith("Nothing to chart from 512 to 4K tokens")
    assert set(chart.table.iloc[:, 0]) == {"0.00"}
