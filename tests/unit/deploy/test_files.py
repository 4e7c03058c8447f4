"""Deployment files validated offline: every Kubernetes object against the Kubernetes JSON schemas that
``kubernetes-validate`` bundles (strict: no unknown field), and the Helm values' containers as Pod specs, with the
charts' keys where the charts read them (vllm-project/production-stack ``helm/values.yaml``;
llm-d-incubation/llm-d-modelservice ``examples/values-pd.yaml``)."""

from __future__ import annotations

import shlex

import kubernetes_validate
import pytest
import yaml

from planner.capacity.launch import vllm_command
from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.deploy.files import TARGETS, deployment_files, write_files
from planner.deploy.manifests import NIXL_CONNECTOR, Pool
from planner.errors import InvalidParameterError

#: The Kubernetes release the objects are checked against (kubernetes-validate 1.37.0's newest schemas).
K8S = "1.37.0"


def _plan(**kw: object):
    return plan(Scenario(engine="vllm", max_model_len=8192, **kw), advise=False)


@pytest.fixture(scope="module")
def llama_tp2():
    return _plan(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100-sxm-80gb", tensor_parallel_size=2)


def _pod(container: dict) -> dict:
    """A container of a chart's values as a Pod, less the chart's own keys (``modelCommand``, ``mountModelVolume``)."""
    own = {k: v for k, v in container.items() if k not in ("modelCommand", "mountModelVolume")}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": {"containers": [own]}}


def test_kubernetes_objects_validate_and_run_the_launch_command(llama_tp2, tmp_path) -> None:
    files = deployment_files(Pool(llama_tp2, 3), "kubernetes", hpa_max_replicas=6)
    docs = list(yaml.safe_load_all(files["vllm.yaml"]))
    assert [d["kind"] for d in docs] == ["Deployment", "Service", "HorizontalPodAutoscaler"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S, strict=True)  # raises on any schema error
    deployment, service, hpa = docs
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # the plan's own launch command, then where it listens
    assert ["vllm", "serve", *container["args"]] == [
        *shlex.split(vllm_command(llama_tp2)),
        *["--host", "0.0.0.0", "--port", "8000"],
    ]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 2}  # TP 2
    assert {
        p["httpGet"]["path"]
        for p in (container["startupProbe"], container["readinessProbe"], container["livenessProbe"])
    } == {"/health"}
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]  # NCCL at TP 2
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    metric = hpa["spec"]["metrics"][0]["pods"]
    assert metric["metric"]["name"] == "vllm:num_requests_waiting"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 6)
    assert [p.name for p in write_files(files, tmp_path / "out")] == ["vllm.yaml"]


def test_prefill_decode_objects_validate() -> None:
    decode = _plan(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l40s")
    prefill = _plan(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100-sxm-80gb")
    docs = list(
        yaml.safe_load_all(deployment_files(Pool(decode, 3), "kubernetes", prefill=Pool(prefill, 1))["vllm.yaml"])
    )
    assert [d["metadata"]["name"].rsplit("-", 1)[1] for d in docs] == ["prefill", "prefill", "decode", "decode"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S, strict=True)
    for deployment in (docs[0], docs[2]):
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--kv-transfer-config") + 1] == NIXL_CONNECTOR
    assert (docs[0]["spec"]["replicas"], docs[2]["spec"]["replicas"]) == (1, 3)


def test_production_stack_values(llama_tp2) -> None:
    values = yaml.safe_load(
        deployment_files(Pool(llama_tp2, 4), "production-stack", router="prefix_aware")["values.yaml"]
    )
    (spec,) = values["servingEngineSpec"]["modelSpec"]
    assert spec["modelURL"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert (spec["replicaCount"], spec["requestGPU"]) == (4, 2)
    # flags the chart has keys for (helm/values.yaml vllmConfig), typed as the chart types them
    config = spec["vllmConfig"]
    assert (config["tensorParallelSize"], config["maxModelLen"], config["gpuMemoryUtilization"]) == (2, 8192, 0.9)
    assert config["enablePrefixCaching"] is True
    assert (
        values["routerSpec"]["routingLogic"] == "prefixaware"
    )  # one of roundrobin, session, prefixaware, kvaware, ...


def test_production_stack_extra_args_keep_the_other_flags() -> None:
    fp8 = _plan(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", kv_cache_dtype="fp8", quantization="fp8")
    values = yaml.safe_load(deployment_files(Pool(fp8, 1), "production-stack")["values.yaml"])
    extra = values["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["extraArgs"]
    assert extra[extra.index("--quantization") + 1] == "fp8"
    assert extra[extra.index("--kv-cache-dtype") + 1] == "fp8"


def test_llm_d_values_aggregated_and_prefill_decode(llama_tp2) -> None:
    values = yaml.safe_load(deployment_files(Pool(llama_tp2, 2), "llm-d")["values.yaml"])
    assert values["modelArtifacts"]["uri"] == "hf://meta-llama/Llama-3.1-8B-Instruct"
    assert values["decode"]["replicas"] == 2 and values["decode"]["parallelism"] == {"tensor": 2}
    assert values["prefill"] == {"create": False}
    kubernetes_validate.validate(_pod(values["decode"]["containers"][0]), K8S, strict=True)
    pd = yaml.safe_load(deployment_files(Pool(llama_tp2, 3), "llm-d", prefill=Pool(llama_tp2, 1))["values.yaml"])
    assert (pd["prefill"]["replicas"], pd["decode"]["replicas"]) == (1, 3)
    for pool in ("prefill", "decode"):
        container = pd[pool]["containers"][0]
        assert container["modelCommand"] == "vllmServe"
        assert NIXL_CONNECTOR in container["args"]
        kubernetes_validate.validate(_pod(container), K8S, strict=True)


def test_bad_requests_are_named(llama_tp2) -> None:
    with pytest.raises(InvalidParameterError) as exc:
        deployment_files(Pool(llama_tp2, 1), "helm")
    assert exc.value.name == "target"
    with pytest.raises(InvalidParameterError):
        deployment_files(Pool(llama_tp2, 1), "production-stack", prefill=Pool(llama_tp2, 1))
    with pytest.raises(InvalidParameterError) as exc:
        Pool(llama_tp2, 0)
    assert exc.value.name == "replicas"
    assert TARGETS == ("kubernetes", "production-stack", "llm-d")
