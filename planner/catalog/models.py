"""The built-in model catalog: Hugging Face ``config.json`` contents of popular checkpoints.

Two data files ship with the package:

* ``data/models_reference.json``: 34 popular open models, their Hugging Face ``config.json`` values restated in
  ``config.json`` form (each entry names the config it was read from);
* ``data/models_serving.json``: 22 serving checkpoints (instruct, AWQ, GPTQ, FP8 exports, MoE,
  multimodal), each with its ``config_source`` and whether it was read verbatim or reconstructed.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from importlib import resources

from planner.catalog.model_spec import ModelSpec, parse_config
from planner.catalog.params import count_params
from planner.errors import UnknownModelError

__all__ = ["CatalogModel", "get_model", "list_models", "model_ids", "quantized_exports", "similar_ids"]

_DATA_FILES = ("models_serving.json", "models_reference.json")


@dataclass(frozen=True)
class CatalogModel:
    """One catalog entry.

    Attributes:
        id: Hugging Face repo id.
        spec: the parsed architecture.
        total_params: parameters computed from the config (text decoder plus any vision tower).
        published_params: the published figure as printed (e.g. ``"8B"``), or ``None``.
        published_source: where that figure was published.
        config_source: where the config values were read.
        config_reconstructed: the config was rebuilt from a base model plus documented settings.
        notes: caveats.
    """

    id: str
    spec: ModelSpec
    total_params: int
    published_params: str | None
    published_source: str | None
    config_source: str
    config_reconstructed: bool
    notes: str


@functools.cache
def list_models() -> tuple[CatalogModel, ...]:
    """Every catalog model, serving checkpoints first, in file order."""
    seen: set[str] = set()
    out = []
    for name in _DATA_FILES:
        raw = json.loads(resources.files("planner.catalog.data").joinpath(name).read_text(encoding="utf-8"))
        for entry in raw:
            if entry["id"] in seen:
                continue
            seen.add(entry["id"])
            spec = parse_config(entry["config"], entry["id"])
            pub = entry.get("published_params") or {}
            out.append(
                CatalogModel(
                    id=entry["id"],
                    spec=spec,
                    total_params=count_params(spec).total,
                    published_params=pub.get("text"),
                    published_source=pub.get("source"),
                    config_source=str(entry.get("config_source", "")),
                    config_reconstructed=bool(entry.get("config_reconstructed", False)),
                    notes=str(entry.get("notes", "")),
                )
            )
    return tuple(out)


def model_ids() -> tuple[str, ...]:
    """Catalog model ids, in catalog order."""
    return tuple(m.id for m in list_models())


@functools.cache
def _by_key() -> dict[str, CatalogModel]:
    table: dict[str, CatalogModel] = {}
    for m in list_models():
        table.setdefault(m.id.lower(), m)
        table.setdefault(m.id.split("/")[-1].lower(), m)
    return table


def get_model(model_id: str) -> CatalogModel:
    """Look a model up by repo id, case-insensitive; the part after ``/`` alone also works.

    Raises:
        UnknownModelError: nothing matches; the message names the id and the closest catalog ids.
    """
    key = str(model_id).strip().lower()
    found = _by_key().get(key)
    if found is not None:
        return found
    close = similar_ids(model_id)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownModelError(f"model {model_id!r} is not in the catalog{hint}")


def similar_ids(model_id: str, limit: int = 3) -> tuple[str, ...]:
    """Catalog ids that look like ``model_id`` (difflib), closest first."""
    close = difflib.get_close_matches(str(model_id).strip().lower(), list(_by_key()), n=limit * 2, cutoff=0.5)
    return tuple(dict.fromkeys(_by_key()[c].id for c in close))[:limit]


def quantized_exports(model_id: str) -> tuple[CatalogModel, ...]:
    """Catalog checkpoints that are quantized exports of ``model_id``.

    An export is a quantized catalog model whose repo name contains the base model's repo name and whose
    architecture matches (layers, hidden size, vocabulary): ``hugging-quants/Meta-Llama-3.1-8B-Instruct-
    AWQ-INT4`` for ``meta-llama/Llama-3.1-8B-Instruct``.
    """
    try:
        base = get_model(model_id)
    except UnknownModelError:
        return ()
    name = base.id.split("/")[-1].lower()
    b = base.spec
    return tuple(
        m
        for m in list_models()
        if m.id != base.id
        and m.spec.quant.method != "none"
        and name in m.id.split("/")[-1].lower()
        and (m.spec.num_layers, m.spec.hidden_size, m.spec.vocab_size) == (b.num_layers, b.hidden_size, b.vocab_size)
    )
