"""planner/views/endpoints.py: the discovery table and the empty state."""

from __future__ import annotations

from planner.errors import PlannerError
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint
from planner.views.endpoints import EXAMPLE_TOML, discovery_view, no_endpoints_message

VLLM = Endpoint(name="a", kind="vllm", base_url="http://127.0.0.1:8000")
TGI = Endpoint(name="b", kind="tgi", base_url="http://127.0.0.1:8080")
KEYED = Endpoint(name="c", kind="openai", base_url="http://127.0.0.1:9000", api_key_env="C_KEY")


def test_one_row_per_endpoint_and_errors_under_the_table():
    found = [
        EndpointInfo("a", "vllm", True, model="Qwen/Qwen3-0.6B", max_model_len_tokens=40_960, version="0.24.0"),
        EndpointInfo("b", "tgi", False, max_model_len_tokens=8192, max_input_tokens=4096, error="health: 503"),
        PlannerError("C_KEY is not set"),
    ]
    view = discovery_view([VLLM, TGI, KEYED], found)
    rows = view.table.to_dict("records")
    assert rows[0] == {
        "endpoint": "a",
        "kind": "vllm",
        "health": "up",
        "model": "Qwen/Qwen3-0.6B",
        "context (tokens)": "40,960",
        "version": "0.24.0",
    }
    assert rows[1]["health"] == "down" and rows[1]["context (tokens)"] == "input 4,096 / total 8,192"
    assert rows[1]["model"] == "n/a" and rows[1]["version"] == "n/a"
    assert rows[2] == {
        "endpoint": "c",
        "kind": "openai",
        "health": "down",
        "model": "n/a",
        "context (tokens)": "n/a",
        "version": "n/a",
    }
    assert view.errors == ("b: health: 503", f"c: {found[2]}")


def test_the_empty_state_shows_an_example_file():
    assert EXAMPLE_TOML in no_endpoints_message(True)
    assert no_endpoints_message(True).endswith("or add one above for this session.")
    assert no_endpoints_message(False).endswith("Adding endpoints in the page is turned off on this deployment.")
