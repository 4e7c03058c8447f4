"""The Load Test engine's jobs from the page settings (:func:`~planner.loadtest.worker.plan_jobs`).

Runs one after another with /metrics scraped alongside are in tests/integration/loadtest/test_worker.py.
"""

from __future__ import annotations

import pytest

from planner.errors import PlannerError
from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.worker import plan_jobs
from planner.serving.endpoints import Endpoint


def _ep(name: str, kind: str = "vllm", url: str = "http://127.0.0.1:9", key_env: str | None = None) -> Endpoint:
    return Endpoint(name=name, kind=kind, base_url=url, api_key_env=key_env)


def test_sweep_jobs_per_endpoint_in_level_order():
    jobs = plan_jobs(
        [_ep("a"), _ep("b")],
        LoadSettings(mode="sweep", sweep=SweepSettings(sweep_max=6), num_prompts=4),
        tag="12:00:00",
    )
    assert [(j.endpoint.name, j.settings.max_concurrency) for j in jobs] == [
        ("a", 1),
        ("a", 2),
        ("a", 4),
        ("a", 6),
        ("b", 1),
        ("b", 2),
        ("b", 4),
        ("b", 6),
    ]
    assert jobs[0].label == "a · c=1 · 12:00:00"
    assert {j.sweep for j in jobs} == {"a sweep · 12:00:00", "b sweep · 12:00:00"}
    # every level is bounded in requests and time (SweepSpec: at least 4 requests per slot)
    assert [j.settings.num_prompts for j in jobs[:4]] == [4, 8, 16, 24]
    assert all(j.settings.duration_s == 300.0 for j in jobs)


def test_single_run_plans_the_same_load_for_every_kind():
    # one policy: the settings are the same for every endpoint; what TGI does not read is left out of its request
    # body by build_request (asserted on the bytes in tests/integration/test_wire.py) and named in the result
    jobs = plan_jobs([_ep("v"), _ep("t", kind="tgi")], LoadSettings(ignore_eos=True, max_concurrency=None))
    assert [j.settings.ignore_eos for j in jobs] == [True, True]
    assert jobs[0].label == "v · c=∞"
    assert all(j.settings.input_sizing == "tokenize" for j in jobs)


def test_prompt_datasets_need_prompts():
    with pytest.raises(PlannerError, match="custom dataset has no prompts"):
        plan_jobs([_ep("a")], LoadSettings(dataset_name="custom"))
    (job,) = plan_jobs([_ep("a")], LoadSettings(dataset_name="examples"), ("p1", "p2"))
    assert job.settings.prompts == ("p1", "p2") and not job.settings.synthetic
