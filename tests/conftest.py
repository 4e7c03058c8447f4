"""Test-wide fixtures: an offline, isolated environment, and the local Hub stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.hub.server import HubStandIn


@pytest.fixture(autouse=True)
def _offline_and_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reaches the network or the user's own caches: the Hub is off and caches are temporary.

    Tests that talk to the local Hub stand-in use the ``hub`` fixture below, which turns the Hub back on.
    """
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LLM_PLANNER_CACHE", str(cache / "planner"))
    monkeypatch.setenv("HF_HOME", str(cache / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture(scope="session")
def vllm_logs() -> dict[int, dict]:
    """Public vLLM startup-log records by id (bench/data/vllm_capacity_logs.json, from shared/reference)."""
    path = Path(__file__).resolve().parent.parent / "bench" / "data" / "vllm_capacity_logs.json"
    return {r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))}


# --- Hub stand-in (tests/hub/server.py) ---------------------------------------------------------------------------
@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[HubStandIn]:
    """A started `HubStandIn` on 127.0.0.1 with the client's environment pointed at it, torn down after.

    Sets HF_ENDPOINT=hub.endpoint, HF_HOME=tmp_path/"hf", HF_HUB_DISABLE_TELEMETRY=1, HF_HUB_OFFLINE=0 and removes
    HF_TOKEN. huggingface_hub reads these once, at import, into `huggingface_hub.constants`, so the constants that
    matter at call time are patched too: HF_HUB_CACHE (where `HfApi.get_safetensors_metadata` caches the shard
    index), HF_TOKEN_PATH/HF_STORED_TOKENS_PATH (so a developer's saved token is never sent), HF_HUB_OFFLINE.
    ENDPOINT is deliberately left alone: code under test passes `endpoint=hub.endpoint` explicitly.
    The client's shared httpx session is closed after the test so no pooled connection outlives the server.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    from tests.hub.server import HubStandIn

    hf_home = tmp_path / "hf"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(hf_home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(hf_home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(hf_home / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    with HubStandIn() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        try:
            yield server
        finally:
            _http.close_session()
