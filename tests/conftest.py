"""Shared test helpers: the reference data shipped in ../shared (read-only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def vllm_logs() -> dict[int, dict]:
    """The public vLLM startup-log records, by id (shared/reference/vllm_capacity_logs.json)."""
    path = SHARED / "vllm_capacity_logs.json"
    if not path.exists():
        pytest.skip("shared/reference is not beside the checkout")
    return {r["id"]: r for r in json.loads(path.read_text())}
