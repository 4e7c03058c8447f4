"""Resolve any model id: the built-in catalog, then an on-disk cache, then the Hugging Face Hub.

From the Hub it reads, through ``huggingface_hub`` and never downloading weights:

* ``config.json`` (``hf_hub_download``): the architecture, nested ``text_config`` of multimodal
  checkpoints, MoE/MLA/sliding-window fields and ``quantization_config``;
* ``hf_quant_config.json`` where present (NVIDIA ModelOpt exports): the quantization algorithm;
* the safetensors headers (``HfApi.get_safetensors_metadata``, HTTP range requests of the headers only,
  sharded or single-file): exact tensor counts per dtype, which make the weight memory exact for
  quantized checkpoints too (qweight, scales and zeros included).

A Hub answer is written to an on-disk cache (``$LLM_PLANNER_CACHE``, default
``~/.cache/llm-serving-planner``), so a model resolved once resolves again offline. The token comes
from the ``token`` argument or ``HF_TOKEN``; it goes only into the ``Authorization`` header
``huggingface_hub`` builds, never into the cache, a message or a return value.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from planner.catalog.model_spec import ModelSpec, parse_config
from planner.catalog.models import get_model, similar_ids
from planner.catalog.params import count_params
from planner.errors import (
    BadValue,
    GatedModelError,
    HubUnavailableError,
    InvalidParameterError,
    MalformedTextError,
    ModelNotFoundError,
    NotTextGenerationError,
    PlannerError,
    UnknownModelError,
    UnsupportedModelError,
)
from planner.parsing import json_value
from planner.units import safetensors_dtype_bytes

__all__ = [
    "ResolvedModel",
    "cache_dir",
    "describe",
    "model_from_config",
    "parse_model",
    "resolve_model",
    "validate_model_id",
]

#: Hub repo ids: ``namespace/name``, letters, digits, ``-``, ``_``, ``.``, at most 96 characters each
#: (``huggingface_hub.utils.validate_repo_id``), no ``--`` or ``..``.
_REPO_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9._-]{1,96}$")
#: ``architectures`` suffixes of text-generation models in transformers.
_GENERATIVE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "ForCausalLMModel")
_CACHE_VERSION = 1
#: Largest pasted config.json accepted, bytes (real ones are a few KiB; multimodal ones under 100 KiB).
MAX_CONFIG_BYTES = 1 << 20
#: Seconds to wait for the Hub before calling it unavailable.
DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ResolvedModel:
    """A model and where its figures came from.

    Attributes:
        model_id: the repo id (or the label of an uploaded config).
        spec: the parsed architecture, with exact checkpoint tensor counts where known.
        source: ``catalog``, ``cache``, ``hub`` or ``upload``.
        revision: the Hub commit the config was read at, if known.
        fetched_at_s: Unix time the Hub answered, if it did.
        params_by_dtype: safetensors element counts per dtype, e.g. ``(("BF16", 8030261248),)``; empty
            when unknown. Quantized checkpoints count packed elements (an I32 qweight holds 8 int4).
        files: the files read from the Hub.
        notes: what was assumed or could not be read.
    """

    model_id: str
    spec: ModelSpec
    source: str
    revision: str | None = None
    fetched_at_s: float | None = None
    params_by_dtype: tuple[tuple[str, int], ...] = ()
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def checkpoint_bytes(self) -> int | None:
        """Bytes of all checkpoint tensors (Σ count × dtype bytes), or ``None`` when unknown."""
        if not self.params_by_dtype:
            return None
        return int(sum(n * safetensors_dtype_bytes(d) for d, n in self.params_by_dtype))


def validate_model_id(model_id: object) -> str:
    """Check that ``model_id`` is a Hub repo id (``namespace/name``).

    Raises:
        InvalidParameterError: naming the value and the accepted form.
    """
    if not isinstance(model_id, str) or not _REPO_ID.match(model_id.strip()) or ".." in model_id or "--" in model_id:
        shown = model_id if not isinstance(model_id, str) or len(model_id) <= 80 else model_id[:77] + "..."
        raise InvalidParameterError("model", shown, "a Hugging Face repo id such as meta-llama/Llama-3.1-8B-Instruct")
    return model_id.strip()


def parse_model(text: str) -> str:
    """A typed model (a link's, a box's): a catalog id (normalised: case, the part after ``/``) or any Hugging Face
    repo id; whether the repo exists is for whoever resolves it (:func:`resolve_model` reports failures).

    Raises:
        BadValue: anything else (a path, markup, NUL, spaces).
    """
    try:
        return get_model(text).id
    except PlannerError:
        pass
    try:
        return validate_model_id(text)
    except PlannerError:
        raise BadValue("a Hugging Face repo id (namespace/name) such as meta-llama/Llama-3.1-8B-Instruct") from None


def cache_dir() -> Path:
    """Where Hub answers are cached: ``$LLM_PLANNER_CACHE`` or ``~/.cache/llm-serving-planner``."""
    return Path(os.environ.get("LLM_PLANNER_CACHE") or Path.home() / ".cache" / "llm-serving-planner")


def _cache_file(model_id: str, root: Path) -> Path:
    return root / "models" / (model_id.replace("/", "--") + ".json")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _check_generative(model_id: str, config: Mapping[str, Any]) -> None:
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list):
        return  # parse_config refuses it, naming the field
    generative = any(str(a).endswith(_GENERATIVE_SUFFIXES) for a in architectures)
    if isinstance(architectures, list) and architectures and not generative:
        raise NotTextGenerationError(
            model_id,
            f"{model_id} is a {architectures[0]}, not a text-generation model; the planner sizes decoder LLMs",
        )


def _build(
    model_id: str,
    config: Mapping[str, Any],
    *,
    source: str,
    params_by_dtype=(),
    revision=None,
    fetched_at_s=None,
    files=(),
    notes=(),
) -> ResolvedModel:
    if not isinstance(config, Mapping):
        raise UnsupportedModelError(f"{model_id}: config.json must be a JSON object")
    _check_generative(model_id, config)
    spec = parse_config(config, model_id)
    counts = tuple(sorted((str(d), int(n)) for d, n in params_by_dtype))
    if counts:
        spec = replace(spec, checkpoint_params_by_dtype=counts)
    return ResolvedModel(model_id, spec, source, revision, fetched_at_s, counts, tuple(files), tuple(notes))


def model_from_config(config: Mapping[str, Any] | str | bytes, *, label: str = "uploaded config.json") -> ResolvedModel:
    """A model from a pasted or uploaded ``config.json``.

    Args:
        config: the parsed config, or its JSON text.
        label: the name the plan shows for it.

    Raises:
        UnsupportedModelError: not JSON, not an object, or missing what the planner needs.
        NotTextGenerationError: an encoder or other non-generative architecture.
    """
    if isinstance(config, (str, bytes)):
        if len(config) > MAX_CONFIG_BYTES:
            raise UnsupportedModelError(
                f"{label}: {len(config):,} bytes is larger than any config.json (at most {MAX_CONFIG_BYTES:,})"
            )
        try:
            config = json_value(config, name=label, accepted="a config.json object")
        except MalformedTextError as exc:
            raise UnsupportedModelError(str(exc)) from exc
    return _build(label, config, source="upload")


def _read_cache(model_id: str, root: Path) -> ResolvedModel | None:
    path = _cache_file(model_id, root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("version") != _CACHE_VERSION or data.get("model_id") != model_id:
        return None
    return _build(
        model_id,
        data["config"],
        source="cache",
        params_by_dtype=data.get("params_by_dtype") or (),
        revision=data.get("revision"),
        fetched_at_s=data.get("fetched_at_s"),
        files=data.get("files") or (),
        notes=data.get("notes") or (),
    )


def _write_cache(resolved: ResolvedModel, config: Mapping[str, Any], root: Path) -> None:
    path = _cache_file(resolved.model_id, root)
    payload = {
        "version": _CACHE_VERSION,
        "model_id": resolved.model_id,
        "config": config,
        "params_by_dtype": [list(p) for p in resolved.params_by_dtype],
        "revision": resolved.revision,
        "fetched_at_s": resolved.fetched_at_s,
        "files": list(resolved.files),
        "notes": list(resolved.notes),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home must not stop planning; the next call fetches again


def _merge_modelopt(config: dict[str, Any], quant: Mapping[str, Any]) -> None:
    """Fold NVIDIA ModelOpt's ``hf_quant_config.json`` into ``quantization_config``."""
    algo = str((quant.get("quantization") or {}).get("quant_algo") or "").upper()
    method = {"FP8": "fp8", "W4A16_AWQ": "awq", "NVFP4": "nvfp4", "W8A8_SQ_PER_CHANNEL": "int8"}.get(algo)
    if method and "quantization_config" not in config:
        config["quantization_config"] = {"quant_method": method, "source": "hf_quant_config.json"}


def resolve_model(
    model_id: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    cache_root: Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    refresh: bool = False,
) -> ResolvedModel:
    """Resolve ``model_id``: catalog, then the on-disk cache, then the Hub.

    Args:
        model_id: a catalog id or any Hub repo id.
        token: Hub token for gated or private repos; default ``$HF_TOKEN``.
        endpoint: Hub URL; default ``$HF_ENDPOINT`` or https://huggingface.co.
        cache_root: cache folder; default :func:`cache_dir`.
        timeout_s: seconds to wait for each Hub request.
        refresh: skip the on-disk cache and ask the Hub again.

    Returns:
        The model and where it came from.

    Raises:
        InvalidParameterError: ``model_id`` is not a repo id.
        ModelNotFoundError / GatedModelError / HubUnavailableError / NotTextGenerationError /
        UnsupportedModelError: one line naming the id, the reason and what to do.
    """
    try:
        entry = get_model(model_id)
    except UnknownModelError:
        entry = None
    if entry is not None:
        return ResolvedModel(entry.id, entry.spec, "catalog", files=("built-in catalog",))
    model_id = validate_model_id(model_id)
    root = cache_root or cache_dir()
    if not refresh:
        cached = _read_cache(model_id, root)
        if cached is not None:
            return cached
    if _offline():
        close = similar_ids(model_id)
        hint = f" (catalog models like it: {', '.join(close)})" if close else ""
        raise HubUnavailableError(
            model_id,
            f"{model_id} is not in the catalog or the cache, and the Hub is off (HF_HUB_OFFLINE=1): "
            f"pick a catalog model{hint} or paste/upload its config.json",
        )
    return _fetch(
        model_id,
        token=token or os.environ.get("HF_TOKEN") or None,
        endpoint=endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co",
        root=root,
        timeout_s=timeout_s,
    )


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP client errors huggingface_hub can let through: it runs on ``httpx2`` from 2.x, ``httpx`` before."""
    errors: list[type[Exception]] = []
    for module in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            errors.append(__import__(module).HTTPError)
    return tuple(errors)


def _fetch(model_id: str, *, token: str | None, endpoint: str, root: Path, timeout_s: float) -> ResolvedModel:
    # Imported here: huggingface_hub is only needed when a model is not in the catalog or cache.
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub import errors as hf_errors
    from huggingface_hub.utils import disable_progress_bars

    # Header reads take milliseconds; a progress bar on stderr would only clutter the CLI and server logs.
    disable_progress_bars()
    api = HfApi(endpoint=endpoint, token=token or False)

    def download(filename: str) -> dict[str, Any]:
        path = hf_hub_download(
            model_id, filename, endpoint=endpoint, token=token or False, cache_dir=root / "hf", etag_timeout=timeout_s
        )
        return json_value(
            Path(path).read_text(encoding="utf-8"), name=f"{model_id} {filename}", accepted="a JSON object"
        )

    files = ["config.json"]
    notes: list[str] = []
    try:
        # One metadata request first: it fails fast (no retries) when the Hub is unreachable or the repo
        # does not exist, where hf_hub_download would retry with back-off for half a minute.
        info = api.model_info(model_id, timeout=timeout_s)
        config = download("config.json")
        with contextlib.suppress(hf_errors.EntryNotFoundError):
            _merge_modelopt(config, download("hf_quant_config.json"))
            files.append("hf_quant_config.json")
        try:
            meta = api.get_safetensors_metadata(model_id)
            counts = tuple(meta.parameter_count.items())
            files.append("safetensors headers")
        except hf_errors.NotASafetensorsRepoError:
            counts = ()
            notes.append("no safetensors files: parameters computed from config.json")
    except hf_errors.GatedRepoError as exc:
        raise GatedModelError(
            model_id,
            f"{model_id} is gated: accept its license on the Hub, then set HF_TOKEN in the environment or in "
            ".streamlit/secrets.toml",
        ) from exc
    except hf_errors.RepositoryNotFoundError as exc:
        raise ModelNotFoundError(
            model_id, f"{model_id} was not found on the Hub (a private repo needs HF_TOKEN)"
        ) from exc
    except hf_errors.RevisionNotFoundError as exc:
        raise ModelNotFoundError(model_id, f"{model_id}: revision not found on the Hub") from exc
    except hf_errors.LocalEntryNotFoundError as exc:
        # hf_hub_download's way of saying the Hub could not be reached and nothing is cached.
        raise HubUnavailableError(
            model_id, f"could not fetch {model_id} from the Hub; pick a catalog model or paste/upload its config.json"
        ) from exc
    except hf_errors.EntryNotFoundError as exc:
        raise NotTextGenerationError(
            model_id,
            f"{model_id} has no config.json: not a transformers model the planner can size; paste a config.json",
        ) from exc
    except MalformedTextError as exc:  # not JSON, or nested too deeply to read
        raise UnsupportedModelError(str(exc)) from exc
    except ValueError as exc:
        raise UnsupportedModelError(f"{model_id}: config.json is not valid JSON ({exc})") from exc
    except (*_transport_errors(), hf_errors.HfHubHTTPError, OSError) as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise HubUnavailableError(
            model_id,
            f"could not fetch {model_id} from the Hub ({reason}); pick a catalog model or paste/upload its config.json",
        ) from exc
    resolved = _build(
        model_id,
        config,
        source="hub",
        params_by_dtype=counts,
        revision=info.sha,
        fetched_at_s=time.time(),
        files=files,
        notes=notes,
    )
    _write_cache(resolved, config, root)
    return resolved


def describe(resolved: ResolvedModel) -> dict[str, object]:
    """What was resolved, as a JSON-ready dict: architecture, attention layout, parameters computed from
    the config and counted in the checkpoint, quantization, context limit, source and assumptions.

    Keys use ``config.json``'s names where it has one; ``None`` marks what does not apply or is unknown.
    """
    spec = resolved.spec
    counts = count_params(spec)
    return {
        "model": resolved.model_id,
        "source": resolved.source,
        "revision": resolved.revision,
        "files": list(resolved.files),
        "architecture": spec.architecture,
        "model_type": spec.model_type,
        "attention": spec.attention_kind,
        "num_hidden_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "torch_dtype": spec.torch_dtype,
        "quantization": spec.quant.method,
        "quantization_bits": spec.quant.bits if spec.quant.method != "none" else None,
        "quantization_group_size": spec.quant.group_size,
        "num_experts": spec.num_experts or None,
        "num_experts_per_tok": spec.num_experts_per_tok or None,
        "kv_lora_rank": spec.kv_lora_rank,
        "sliding_window": spec.sliding_window,
        "layer_attention": {kind: spec.layer_attention.count(kind) for kind in sorted(set(spec.layer_attention))},
        "tie_word_embeddings": spec.tie_word_embeddings,
        "params_computed": counts.total,
        "params_active_computed": counts.active,
        "vision_params_computed": counts.vision or None,
        "params_by_dtype": dict(resolved.params_by_dtype) or None,
        "checkpoint_bytes": resolved.checkpoint_bytes,
        "assumptions": list(spec.assumptions),
        "notes": list(resolved.notes),
    }
