"""``python -m planner deploy``: files written for each target, a plan that does not fit refused in one line."""

from __future__ import annotations

import json

import pytest
import yaml

from planner.cli.main import main

BASE = ["deploy", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h200", "--max-model-len", "8192"]


@pytest.mark.parametrize(
    ("target", "name"), [("kubernetes", "vllm.yaml"), ("production-stack", "values.yaml"), ("llm-d", "values.yaml")]
)
def test_each_target_writes_its_file(target: str, name: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / target
    assert main([*BASE, "--replicas", "3", "--target", target, "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"files": [str(out / name)]}
    docs = list(yaml.safe_load_all((out / name).read_text(encoding="utf-8")))
    assert docs and all(isinstance(d, dict) for d in docs)


def test_hpa_on_request(tmp_path) -> None:
    assert main([*BASE, "--replicas", "2", "--hpa-max-replicas", "5", "--out", str(tmp_path)]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all((tmp_path / "vllm.yaml").read_text(encoding="utf-8"))]
    assert kinds == ["Deployment", "Service", "HorizontalPodAutoscaler"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["deploy", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "l4"], "does not fit"),
        ([*BASE, "--replicas", "0"], "--replicas"),
        ([*BASE, "--replicas", "4", "--hpa-max-replicas", "2"], "--hpa-max-replicas"),
    ],
)
def test_refusals_are_one_line(argv: list[str], named: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0]
