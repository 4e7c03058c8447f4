"""A resolved model as the pages show it: its details table, and the name a pasted config.json is planned under."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from planner import display
from planner.capacity.launch import UPLOADED_PREFIX
from planner.catalog.hub import ResolvedModel, describe
from planner.errors import MalformedTextError
from planner.parsing import json_value

__all__ = ["UPLOAD_NAMESPACE", "ModelDetails", "model_details", "upload_label"]

#: Namespace of the model name a pasted config.json gets in a scenario (and so in the URL).
UPLOAD_NAMESPACE = UPLOADED_PREFIX.rstrip("/")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def upload_label(text: str) -> str:
    """The model name a pasted config.json gets: ``uploaded-config/<name>-<hash>``, a valid repo id.

    ``<name>`` is the last part of the config's ``_name_or_path`` (or its ``model_type``), reduced to
    ``[A-Za-z0-9._-]``; ``<hash>`` is the first 8 hex digits of the SHA-256 of the config's canonical JSON, so
    the same config always gets the same name (and a link names exactly one config). A text that is not a JSON
    object is named ``uploaded-config/config-<hash of the text>``: a refused paste is a scenario too, whose verdict
    says why it is not planned.
    """
    try:
        data = json_value(text, name="config.json", accepted="a JSON object")
    except MalformedTextError:
        data = None
    if isinstance(data, dict):
        name = str(data.get("_name_or_path") or data.get("model_type") or "model").rstrip("/").split("/")[-1]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    else:
        name, canonical = "config", text
    slug = _UNSAFE.sub("-", name).strip("-._")[:40].strip("-._") or "model"
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{UPLOAD_NAMESPACE}/{slug}-{digest}"


@dataclass(frozen=True)
class ModelDetails:
    """What the "Model details" expander shows.

    Attributes:
        table: one ``value`` column, a row per figure ("Source", "Architecture", … "Read from"); "n/a" where unknown.
        assumptions: what the model's figures assume, a line each.
        notes: what was noted while resolving it, a line each.
    """

    table: pd.DataFrame
    assumptions: tuple[str, ...]
    notes: tuple[str, ...]


def _billions(count: int | None) -> str:
    return display.NA if count is None else f"{count / 1e9:,.2f} B ({display.count(count)})"


def _when(seconds: float | None) -> str:
    return "time unknown" if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _source(resolved: ResolvedModel) -> str:
    revision = f"revision {resolved.revision[:10]}" if resolved.revision else "revision unknown"
    if resolved.source == "hub":
        return f"Hugging Face Hub, {revision}, fetched {_when(resolved.fetched_at_s)}"
    if resolved.source == "cache":
        return f"on-disk cache of the Hub, {revision}, fetched {_when(resolved.fetched_at_s)}"
    if resolved.source == "upload":
        return "pasted/uploaded config.json"
    return "built-in catalog"


def model_details(resolved: ResolvedModel) -> ModelDetails:
    """What :func:`planner.catalog.hub.describe` says about ``resolved``, as rows of text; missing values "n/a"."""
    d = describe(resolved)
    na, text, count = display.NA, display.text, display.count
    layers = d["layer_attention"] or {}
    kinds = ", ".join(f"{n} {kind}" for kind, n in layers.items()) or na
    if d["sliding_window"]:
        kinds += f" (window {count(d['sliding_window'])} tokens)"
    experts = count(d["num_experts"])
    if d["num_experts"] and d["num_experts_per_tok"]:
        experts += f" ({d['num_experts_per_tok']} active per token)"
    quant = text(d["quantization"])
    if quant not in ("none", na):
        quant += f", {text(d['quantization_bits'])}-bit, group size {text(d['quantization_group_size'])}"
    params = _billions(d["params_computed"])
    if d["params_active_computed"] and d["params_active_computed"] != d["params_computed"]:
        params += f", {_billions(d['params_active_computed'])} active"
    if d["vision_params_computed"]:
        params += f", vision tower {_billions(d['vision_params_computed'])}"
    by_dtype = d["params_by_dtype"]
    in_checkpoint = ", ".join(f"{dtype} {count(n)}" for dtype, n in by_dtype.items()) if by_dtype else na
    rows = {
        "Source": _source(resolved),
        "Architecture": f"{text(d['architecture'])} ({text(d['model_type'])})",
        "Attention": text(d["attention"]),
        "Layers": text(d["num_hidden_layers"]),
        "Attention heads / KV heads": f"{text(d['num_attention_heads'])} / {text(d['num_key_value_heads'])}",
        "Head dim": text(d["head_dim"]),
        "Layer types": kinds,
        "MoE experts": experts,
        "MLA KV rank": text(d["kv_lora_rank"]),
        "Quantization": quant,
        "Checkpoint dtype": text(d["torch_dtype"]),
        "Context limit (tokens)": count(d["max_position_embeddings"]),
        "Vocabulary": count(d["vocab_size"]),
        "Parameters (computed)": params,
        "Parameters in checkpoint": in_checkpoint,
        "Checkpoint size": display.gib(d["checkpoint_bytes"]),
        "Read from": ", ".join(d["files"]) or na,
    }
    return ModelDetails(
        table=pd.DataFrame({"value": rows}).rename_axis(None),
        assumptions=tuple(d["assumptions"]),
        notes=tuple(d["notes"]),
    )
