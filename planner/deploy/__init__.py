"""Deployment files for a plan or a sizing row: Kubernetes manifests, the vLLM production-stack Helm values and llm-d's
values, built from the plan's own ``vllm serve`` command.

* :mod:`planner.deploy.manifests`: the objects as data (Deployment, Service, HPA; the charts' values).
* :mod:`planner.deploy.files`: the targets, their YAML files, writing them to a folder.

May import :mod:`planner.capacity`, :mod:`planner.catalog`, :mod:`planner.errors`; never streamlit, the predictor, the
fleet or sizing (they import it). Floor 5 of docs/architecture.md.
"""
