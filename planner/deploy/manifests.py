"""What a platform engineer applies for a plan: Kubernetes manifests, the vLLM production-stack Helm values, llm-d's
values, each as plain data (dicts) built from the plan's own ``vllm serve`` command
(:func:`planner.capacity.launch.vllm_command`), so the files and the launch command never disagree.

* :func:`kubernetes_manifests`: a ``Deployment`` of ``replicas`` pods running ``vllm serve`` (the plan's flags, on
  port 8000), each requesting its GPUs (``nvidia.com/gpu``, ``amd.com/gpu`` or ``habana.ai/gaudi`` by vendor: TP × PP
  of them), shared memory for NCCL at TP > 1, probes on vLLM's ``/health`` (a startup probe allowing 30 minutes for
  the weights to load), a ``Service`` on port 8000 and, optionally, a ``HorizontalPodAutoscaler`` (``autoscaling/v2``)
  on vLLM's queue metric ``vllm:num_requests_waiting`` per pod (served to the HPA by a metrics adapter such as
  prometheus-adapter; target :data:`QUEUE_TARGET` requests waiting per pod, the threshold of the production-stack
  chart's KEDA example, ``helm/values.yaml`` ``keda.triggers``).
* :func:`production_stack_values`: the ``vllm-project/production-stack`` chart's values (``servingEngineSpec.modelSpec``
  with ``vllmConfig``, ``routerSpec.routingLogic``; key names as its ``helm/values.yaml``).
* :func:`llm_d_values`: the ``llm-d-incubation/llm-d-modelservice`` chart's values (``modelArtifacts``, ``decode`` and
  ``prefill`` pools of vLLM containers; its ``examples/values-pd.yaml`` layout), aggregated or prefill/decode with
  vLLM's NIXL connector (``--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'``).

Images: ``vllm/vllm-openai:v<version>`` (the plan's vLLM version, else :data:`DEFAULT_VLLM_VERSION`, the one this
project's measurements ran). A Hugging Face token is read from the Secret ``hf-token`` (key ``token``) when it exists.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from planner.capacity.launch import vllm_command
from planner.capacity.result import Plan
from planner.catalog.gpus import get_gpu
from planner.errors import InvalidParameterError, PlannerError

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "NIXL_CONNECTOR",
    "PORT",
    "QUEUE_TARGET",
    "Pool",
    "gpu_resource",
    "kubernetes_manifests",
    "llm_d_values",
    "production_stack_values",
    "serve_args",
]

#: The vLLM release of the image when the plan names none (the release this project's H200 measurements ran).
DEFAULT_VLLM_VERSION = "0.24.0"
#: The port ``vllm serve`` listens on in the pods (its default).
PORT = 8000
#: Requests waiting per pod the autoscaler keeps to (production-stack ``helm/values.yaml`` ``keda.triggers``
#: threshold).
QUEUE_TARGET = 5
#: vLLM's KV connector for prefill/decode pools (``vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py``).
NIXL_CONNECTOR = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
#: The NIXL side channel's port (llm-d-modelservice ``examples/values-pd.yaml``).
_NIXL_PORT = 5557
#: Seconds a pod may take to load its weights before the startup probe gives up: 180 probes 10 s apart.
_STARTUP_PROBES = 180
#: The production-stack router's name for each fleet routing policy (``routerSpec.routingLogic``); it has no
#: least-loaded policy.
_PRODUCTION_STACK_ROUTING = {"round_robin": "roundrobin", "kv_aware": "kvaware", "prefix_aware": "prefixaware"}
#: ``vllm serve`` flags the production-stack chart sets from ``vllmConfig`` keys.
_VLLM_CONFIG = {
    "--tensor-parallel-size": ("tensorParallelSize", int),
    "--max-model-len": ("maxModelLen", int),
    "--gpu-memory-utilization": ("gpuMemoryUtilization", float),
    "--max-num-seqs": ("maxNumSeqs", int),
    "--dtype": ("dtype", str),
}


@dataclass(frozen=True)
class Pool:
    """Replicas of one plan: the whole fleet of an aggregated deployment, or one pool of a prefill/decode pair.

    Attributes:
        plan: one replica's plan (it must fit).
        replicas: how many (≥ 1).
    """

    plan: Plan
    replicas: int

    def __post_init__(self) -> None:
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or self.replicas < 1:
            raise InvalidParameterError("replicas", self.replicas, "an integer ≥ 1")
        if not self.plan.fits:
            raise InvalidParameterError("plan", self.plan.model_id, f"a plan that fits ({self.plan.reason})")
        if self.plan.scenario.engine != "vllm":
            raise InvalidParameterError("engine", self.plan.scenario.engine, "vllm (the files run vllm serve)")


def serve_args(plan: Plan) -> tuple[list[str], list[str]]:
    """``(arguments after "vllm serve", comment lines)`` of the plan's launch command: the model and its flags, and the
    lines the command starts with (a checkpoint it needs, a what-if left out)."""
    text = vllm_command(plan)
    comments = [line.removeprefix("# ") for line in text.splitlines() if line.startswith("#")]
    command = next(line for line in text.splitlines() if not line.startswith("#"))
    words = shlex.split(command)
    return words[2:], comments


def gpu_resource(plan: Plan) -> str:
    """The extended resource a pod requests its GPUs by: ``nvidia.com/gpu`` (NVIDIA's device plugin), ``amd.com/gpu``
    (AMD's), ``habana.ai/gaudi`` (Intel Gaudi's)."""
    try:
        vendor = get_gpu(plan.scenario.gpu).vendor if plan.scenario.gpu else "NVIDIA"
    except PlannerError:
        vendor = "NVIDIA"
    if vendor == "AMD":
        return "amd.com/gpu"
    return "habana.ai/gaudi" if vendor == "Intel" else "nvidia.com/gpu"


def _name(text: str) -> str:
    """A DNS-1123 label from a model id (``meta-llama/Llama-3.1-8B-Instruct`` → ``llama-3-1-8b-instruct``)."""
    base = text.rsplit("/", 1)[-1].lower()
    return (re.sub(r"[^a-z0-9-]+", "-", base).strip("-") or "model")[:40].strip("-")


def _image(plan: Plan) -> str:
    return f"vllm/vllm-openai:v{plan.scenario.engine_version or DEFAULT_VLLM_VERSION}"


def _container(pool: Pool, extra_args: list[str], *, nixl: bool = False) -> dict:
    args, _ = serve_args(pool.plan)
    gpus = pool.plan.num_gpus
    env: list[dict] = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}}
    ]
    ports = [{"name": "http", "containerPort": PORT, "protocol": "TCP"}]
    if nixl:
        env += [
            {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(_NIXL_PORT)},
        ]
        ports.append({"name": "nixl", "containerPort": _NIXL_PORT, "protocol": "TCP"})
    probe = {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 10}
    container = {
        "name": "vllm",
        "image": _image(pool.plan),
        "command": ["vllm", "serve"],
        "args": [*args, *extra_args, "--host", "0.0.0.0", "--port", str(PORT)],
        "env": env,
        "ports": ports,
        "resources": {"limits": {gpu_resource(pool.plan): gpus}, "requests": {gpu_resource(pool.plan): gpus}},
        "startupProbe": {**probe, "failureThreshold": _STARTUP_PROBES},
        "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**probe, "failureThreshold": 3},
    }
    if gpus > 1:  # NCCL's buffers live in /dev/shm
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def _deployment(pool: Pool, name: str, role: str, extra_args: list[str], *, nixl: bool = False) -> dict:
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": role}
    _, comments = serve_args(pool.plan)
    annotations = {"llm-serving-planner/gpu": pool.plan.gpu_name}
    if comments:
        annotations["llm-serving-planner/note"] = "; ".join(comments)
    spec: dict = {"containers": [_container(pool, extra_args, nixl=nixl)]}
    if pool.plan.num_gpus > 1:
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{name}-{role}", "labels": labels, "annotations": annotations},
        "spec": {
            "replicas": pool.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def _service(name: str, role: str) -> dict:
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": role}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{role}", "labels": labels},
        "spec": {
            "selector": labels,
            "ports": [{"name": "http", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def _hpa(name: str, role: str, replicas: int, max_replicas: int) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"{name}-{role}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{name}-{role}"},
            "minReplicas": replicas,
            "maxReplicas": max(replicas, max_replicas),
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "vllm:num_requests_waiting"},
                        "target": {"type": "AverageValue", "averageValue": str(QUEUE_TARGET)},
                    },
                }
            ],
        },
    }


def kubernetes_manifests(
    pool: Pool, *, prefill: Pool | None = None, hpa_max_replicas: int | None = None, name: str | None = None
) -> list[dict]:
    """The Kubernetes objects of a deployment (module docstring): a Deployment and a Service (and an HPA with
    ``hpa_max_replicas``); with ``prefill``, ``pool`` is the decode pool and both pools run vLLM's NIXL connector,
    each its own Deployment and Service (a P/D-aware router, llm-d or production-stack, sends requests to them).

    Args:
        pool: the replicas (the decode pool with ``prefill``).
        prefill: the prefill pool of a prefill/decode deployment; None for an aggregated one.
        hpa_max_replicas: add an autoscaler up to this many replicas (the decode pool's with ``prefill``).
        name: the objects' base name (default: from the model id).
    """
    base = name or _name(pool.plan.model_id)
    if prefill is None:
        out = [_deployment(pool, base, "vllm", []), _service(base, "vllm")]
        if hpa_max_replicas:
            out.append(_hpa(base, "vllm", pool.replicas, hpa_max_replicas))
        return out
    kv = ["--kv-transfer-config", NIXL_CONNECTOR]
    out = [
        _deployment(prefill, base, "prefill", kv, nixl=True),
        _service(base, "prefill"),
        _deployment(pool, base, "decode", kv, nixl=True),
        _service(base, "decode"),
    ]
    if hpa_max_replicas:
        out.append(_hpa(base, "decode", pool.replicas, hpa_max_replicas))
    return out


def production_stack_values(pool: Pool, *, router: str = "round_robin", name: str | None = None) -> dict:
    """The production-stack chart's values for ``pool`` behind its router (module docstring): flags the chart has a
    ``vllmConfig`` key for go there, the rest to ``extraArgs``; ``router`` is the fleet policy (``least_loaded`` has no
    production-stack counterpart: round robin).

    Raises:
        InvalidParameterError: an unknown router.
    """
    if router not in (*_PRODUCTION_STACK_ROUTING, "least_loaded"):
        raise InvalidParameterError("router", router, ", ".join((*_PRODUCTION_STACK_ROUTING, "least_loaded")))
    args, _ = serve_args(pool.plan)
    config: dict = {"enablePrefixCaching": True, "enableChunkedPrefill": True}
    extra: list[str] = []
    i = 1  # args[0] is the model
    while i < len(args):
        flag = args[i]
        takes_value = i + 1 < len(args) and not args[i + 1].startswith("--")
        value = args[i + 1] if takes_value else None
        if flag in _VLLM_CONFIG and value is not None and value != "auto":
            key, kind = _VLLM_CONFIG[flag]
            config[key] = kind(value)
        else:
            extra += [flag] if value is None else [flag, value]
        i += 2 if takes_value else 1
    if extra:
        config["extraArgs"] = extra
    version = pool.plan.scenario.engine_version or DEFAULT_VLLM_VERSION
    return {
        "servingEngineSpec": {
            "runtimeClassName": "",
            "modelSpec": [
                {
                    "name": name or _name(pool.plan.model_id),
                    "repository": "vllm/vllm-openai",
                    "tag": f"v{version}",
                    "modelURL": args[0],
                    "replicaCount": pool.replicas,
                    "requestCPU": 8,
                    "requestMemory": "32Gi",
                    "requestGPU": pool.plan.num_gpus,
                    "vllmConfig": config,
                }
            ],
        },
        "routerSpec": {"routingLogic": _PRODUCTION_STACK_ROUTING.get(router, "roundrobin")},
    }


def _modelservice_pool(pool: Pool | None, extra_args: list[str], *, nixl: bool) -> dict:
    if pool is None:
        return {"create": False}
    container = _container(pool, extra_args, nixl=nixl)
    flags = serve_args(pool.plan)[0][1:]
    # the chart's vllmServe command puts the model and the port on the command line itself
    container = {
        "name": "vllm",
        "image": container["image"],
        "modelCommand": "vllmServe",
        "args": [*flags, *extra_args],
        "env": container["env"],
        "ports": container["ports"],
        "resources": container["resources"],
        "mountModelVolume": True,
    }
    return {
        "create": True,
        "replicas": pool.replicas,
        "parallelism": {"tensor": pool.plan.scenario.tensor_parallel_size},
        "containers": [container],
    }


def llm_d_values(pool: Pool, *, prefill: Pool | None = None) -> dict:
    """llm-d-modelservice values (module docstring): ``pool`` as its ``decode`` pool (all of an aggregated
    deployment), ``prefill`` as its ``prefill`` pool when given (both with the NIXL connector)."""
    args, _ = serve_args(pool.plan)
    kv = ["--kv-transfer-config", NIXL_CONNECTOR] if prefill is not None else []
    weights_gib = pool.plan.weights_total_bytes / 2**30
    return {
        "multinode": False,
        "modelArtifacts": {
            "name": args[0],
            "uri": f"hf://{args[0]}",
            "size": f"{max(10, int(weights_gib * 1.2) + 1)}Gi",
        },
        "routing": {"servicePort": PORT, "proxy": {"secure": False}},
        "decode": _modelservice_pool(pool, kv, nixl=prefill is not None),
        "prefill": _modelservice_pool(prefill, kv, nixl=True),
    }
