"""``python -m planner gpus`` and ``models``: the catalogs as a table and as JSON."""

from __future__ import annotations

import json

import pytest

from planner.catalog.gpus import get_gpu
from planner.cli.main import main
from planner.errors import UnknownGPUError


def test_gpus_json_lists_the_catalog_with_driver_memory(capsys):
    assert main(["gpus", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    # measured on an H200 SXM: torch.cuda.get_device_properties(0).total_memory = 150,109,880,320 B (gpus.json)
    h200 = rows["h200-sxm-141gb"]
    assert h200["memory_total_bytes"] == 150_109_880_320
    assert h200["memory_total_gib"] == pytest.approx(139.80, abs=0.005)  # 150,109,880,320 / 2**30
    assert len(rows) == 26


def test_models_table_names_every_catalog_model(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    llama = next(line for line in out if line.startswith("meta-llama/Llama-3.1-8B-Instruct "))
    # config.json: 32 layers, 8 KV heads (GQA), unquantized; 8.0 B parameters
    assert llama.split()[1:5] == ["GQA", "32", "8", "none"] and llama.split()[-1] == "8.0B"
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"id", "attention", "num_layers", "num_kv_heads", "head_dim", "total_params"} <= set(rows[0])


def test_an_unknown_gpu_says_how_to_list_them():
    with pytest.raises(UnknownGPUError, match=r"closest catalog ids: .*\(python -m planner gpus lists them all\)"):
        get_gpu("H1OO")
