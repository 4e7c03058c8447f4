"""Deployment files for a plan (or a sizing row): the manifests of :mod:`planner.deploy.manifests` as YAML files, one
set per target, and writing them to a folder.

Targets (:data:`TARGETS`): ``kubernetes`` (``vllm.yaml``: the Deployment, Service and optional HPA, one YAML stream),
``production-stack`` (``values.yaml`` for ``helm install ... vllm/vllm-stack -f values.yaml``) and ``llm-d``
(``values.yaml`` for the ``llm-d-modelservice`` chart). A prefill/decode deployment (``prefill=``) is not a layout the
production-stack chart's values describe here: refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from planner.deploy.manifests import Pool, kubernetes_manifests, llm_d_values, production_stack_values
from planner.errors import InvalidParameterError

__all__ = ["TARGETS", "deployment_files", "write_files"]

#: Where the files are for.
TARGETS: tuple[str, ...] = ("kubernetes", "production-stack", "llm-d")


class _Dumper(yaml.SafeDumper):
    """YAML without anchors: each object written out where it is used (labels repeat in a selector), as people write
    manifests."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _dump(documents: list[dict], header: str) -> str:
    body = "---\n".join(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120) for doc in documents)
    return f"# {header}\n{body}"


def deployment_files(
    pool: Pool,
    target: str,
    *,
    prefill: Pool | None = None,
    router: str = "round_robin",
    hpa_max_replicas: int | None = None,
) -> dict[str, str]:
    """File name → YAML text of ``pool`` (with ``prefill``, the decode pool of a prefill/decode pair) for ``target``.

    Args:
        pool: the replicas of one plan.
        target: one of :data:`TARGETS`.
        prefill: the prefill pool of a prefill/decode deployment.
        router: the fleet's routing policy (production-stack's ``routingLogic``).
        hpa_max_replicas: ``kubernetes``: add an autoscaler on vLLM's queue up to this many replicas.

    Raises:
        InvalidParameterError: an unknown target or router, a prefill pool for production-stack.
    """
    what = f"{pool.replicas} x {pool.plan.model_id} on {pool.plan.num_gpus}x {pool.plan.gpu_name}"
    if prefill is not None:
        what = f"prefill {prefill.replicas} x {prefill.plan.num_gpus}x {prefill.plan.gpu_name}, decode {what}"
    header = f"LLM Serving Planner: {what}"
    if target == "kubernetes":
        return {
            "vllm.yaml": _dump(kubernetes_manifests(pool, prefill=prefill, hpa_max_replicas=hpa_max_replicas), header)
        }
    if target == "production-stack":
        if prefill is not None:
            raise InvalidParameterError("target", target, "kubernetes or llm-d for a prefill/decode deployment")
        return {"values.yaml": _dump([production_stack_values(pool, router=router)], header)}
    if target == "llm-d":
        return {"values.yaml": _dump([llm_d_values(pool, prefill=prefill)], header)}
    raise InvalidParameterError("target", target, ", ".join(TARGETS))


def write_files(files: dict[str, str], folder: str | Path) -> list[Path]:
    """Write ``files`` into ``folder`` (made if missing); returns the paths written.

    Raises:
        InvalidParameterError: the folder cannot be made or written.
    """
    root = Path(folder)
    try:
        root.mkdir(parents=True, exist_ok=True)
        out = []
        for name, text in files.items():
            path = root / name
            path.write_text(text, encoding="utf-8")
            out.append(path)
    except OSError as exc:
        raise InvalidParameterError("out", str(folder), f"a folder that can be written ({exc.strerror})") from exc
    return out
