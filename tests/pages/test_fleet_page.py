"""The Fleet page with AppTest: each policy side by side for the default deployment, its link, bad links, the
deployment files."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "fleet.py")
TIMEOUT_S = 90


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def test_default_page_shows_every_policy() -> None:
    at = _app(num_prompts="80")
    assert not at.exception and not at.warning and not at.error
    table = at.dataframe[0].value
    assert table["router"].tolist() == ["round_robin", "least_loaded", "kv_aware", "prefix_aware"]
    titles = {json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")}
    assert titles == {"TTFT distribution", "Prefix-cache hit rate", "Requests per replica"}
    labels = {b.label for b in at.get("download_button")}
    assert labels == {"kubernetes: vllm.yaml", "production-stack: values.yaml", "llm-d: values.yaml", "Results (JSON)"}
    assert dict(at.query_params) == {"num_prompts": "80"}


def test_link_sets_the_fleet() -> None:
    at = _app(replicas="2", router="round_robin,prefix_aware", dataset_name="prefix_repetition", num_prompts="40")
    assert not at.exception and not at.warning
    assert at.dataframe[0].value["router"].tolist() == ["round_robin", "prefix_aware"]
    assert at.query_params["router"] == "round_robin,prefix_aware"
    counts = at.dataframe[0].value["requests per replica"].tolist()
    assert all(len(c.split(" · ")) == 2 for c in counts)


def test_bad_link_values_warn_and_fall_back() -> None:
    at = _app(replicas="0", router="random", num_prompts="40")
    assert not at.exception
    shown = " ".join(w.value for w in at.warning)
    assert "replicas='0'" in shown and "router='random'" in shown
    assert len(at.dataframe[0].value) == 4  # the default policies
