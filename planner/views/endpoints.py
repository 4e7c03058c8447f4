"""What the endpoint pages (Live Compare, Load Test) show about their endpoints: the discovery table and the empty
state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from planner import display
from planner.errors import PlannerError
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint

__all__ = ["DISCOVERY_CAPTION", "EXAMPLE_TOML", "DiscoveryView", "discovery_view", "no_endpoints_message"]

#: An ``endpoints.toml`` with one endpoint, every key explained.
EXAMPLE_TOML = """[[endpoint]]
name = "vllm-a"
kind = "vllm"                       # vllm | tgi | openai | sglang | llamacpp
base_url = "http://127.0.0.1:8000"
model = "Qwen/Qwen3-0.6B"           # optional: discovered when absent
api_key_env = "VLLM_API_KEY"        # optional: the NAME of the env var / secret holding the key"""
#: What the discovery table's caption says.
DISCOVERY_CAPTION = "Discovery (health, served model, context limit, version) is cached for 30 s."


@dataclass(frozen=True)
class DiscoveryView:
    """The discovery table: one row per endpoint (``endpoint``, ``kind``, ``health``, ``model``,
    ``context (tokens)``, ``version``; "n/a" where unknown), and one line per endpoint that failed or reported an
    error (``errors``, shown under the table: in a grid column they ran past the page's edge)."""

    table: pd.DataFrame
    errors: tuple[str, ...]


def discovery_view(endpoints: Sequence[Endpoint], found: Sequence[EndpointInfo | PlannerError]) -> DiscoveryView:
    """The discovery table of ``endpoints``, given what discovery ``found`` for each (its error where it failed)."""
    rows, errors = [], []
    for endpoint, info in zip(endpoints, found, strict=True):
        if isinstance(info, PlannerError):
            rows.append({"endpoint": endpoint.name, "kind": endpoint.kind, "health": "down"})
            errors.append(f"{endpoint.name}: {info}")
            continue
        context = display.count(info.max_model_len_tokens)
        if info.max_input_tokens is not None:
            context = f"input {display.count(info.max_input_tokens)} / total {context}"
        rows.append(
            {
                "endpoint": endpoint.name,
                "kind": endpoint.kind,
                "health": "up" if info.healthy else "down",
                "model": display.text(info.model),
                "context (tokens)": context,
                "version": display.text(info.version),
            }
        )
        if info.error:
            errors.append(f"{endpoint.name}: {info.error}")
    return DiscoveryView(pd.DataFrame(rows).fillna(display.NA), tuple(errors))


def no_endpoints_message(allow_custom: bool) -> str:
    """What a page says when no endpoint is configured (markdown): how to try it without a GPU, and how to add one."""
    return (
        "No endpoint is configured. To try the page without a GPU, start the demo server "
        "(`python -m planner demo-server`) and add it above as `http://127.0.0.1:8000`. Or put an "
        "`endpoints.toml` at the repository root (or point `LLM_PLANNER_ENDPOINTS` at one) with one table per "
        "server:\n\n"
        f"```toml\n{EXAMPLE_TOML}\n```\n\n"
        + (
            "or add one above for this session."
            if allow_custom
            else "Adding endpoints in the page is turned off on this deployment."
        )
    )
