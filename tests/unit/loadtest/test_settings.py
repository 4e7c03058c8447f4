"""The Load Test settings: validation, the goodput SLO format, and the runs they plan."""

from __future__ import annotations

import pytest

from planner.errors import BadValue, InvalidParameterError
from planner.loadtest.settings import LoadSettings, SweepSettings, parse_goodput
from planner.loadtest.worker import plan_jobs
from planner.serving.endpoints import Endpoint


def test_parse_goodput():
    assert parse_goodput("ttft:500 tpot:50") == (("ttft", 500.0), ("tpot", 50.0))
    assert parse_goodput("") == ()
    with pytest.raises(BadValue):
        parse_goodput("ttft")


def test_planned_runs_carry_every_setting():
    settings = LoadSettings(
        num_prompts=5, max_concurrency=3, request_rate=4.0, output_len=9, goodput_ms=(("tpot", 50.0),)
    )
    (job,) = plan_jobs([Endpoint("a", "vllm", "http://127.0.0.1:9")], settings)
    spec = job.settings
    assert (spec.num_prompts, spec.max_concurrency, spec.request_rate, spec.output_len) == (5, 3, 4.0, 9)
    assert spec.goodput_ms == (("tpot", 50.0),) and spec.prompts == ()
    custom = LoadSettings(dataset_name="custom", mode="sweep", sweep=SweepSettings(sweep_max=16))
    jobs = plan_jobs([Endpoint("a", "vllm", "http://127.0.0.1:9")], custom, ("hello",))
    assert jobs[-1].settings.max_concurrency == 16 and jobs[-1].settings.prompts == ("hello",)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_prompts": 0}, "num_prompts"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"request_rate": 0}, "request_rate"),
        ({"burstiness": -1}, "burstiness"),
        ({"range_ratio": 1.0}, "range_ratio"),
        ({"duration_s": 0}, "duration_s"),
        ({"prompts": ("",)}, "prompts"),
        ({"goodput_ms": (("itl", 5),)}, "goodput_ms"),
        ({"input_sizing": "bytes"}, "input_sizing"),
    ],
)
def test_spec_validation(kwargs, name):
    with pytest.raises(InvalidParameterError) as info:
        LoadSettings(**kwargs)
    assert info.value.name == name
