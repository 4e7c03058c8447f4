"""planner/views/model.py: a model's details and the name a pasted config.json gets.

Llama-3.1-8B-Instruct's figures are those of its public config.json
(https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json): 32 layers, 32 attention heads and
8 KV heads of 128 dimensions, a vocabulary of 128,256 and 131,072 positions.
"""

from __future__ import annotations

import json
import re

from planner.catalog.hub import resolve_model
from planner.views.model import UPLOAD_NAMESPACE, model_details, upload_label


def test_catalog_model_details_are_its_config():
    details = model_details(resolve_model("meta-llama/Llama-3.1-8B-Instruct"))
    rows = details.table["value"].to_dict()
    assert rows["Source"] == "built-in catalog"
    assert rows["Layers"] == "32"
    assert rows["Attention heads / KV heads"] == "32 / 8"
    assert rows["Head dim"] == "128"
    assert rows["Vocabulary"] == "128,256"
    assert rows["Context limit (tokens)"] == "131,072"
    assert rows["MoE experts"] == "n/a"
    assert list(details.table.columns) == ["value"]


def test_upload_label_names_the_config_and_is_stable():
    config = {"_name_or_path": "org/My Model!", "hidden_size": 4096, "num_hidden_layers": 32}
    label = upload_label(json.dumps(config))
    assert re.fullmatch(rf"{UPLOAD_NAMESPACE}/My-Model-[0-9a-f]{{8}}", label), label
    # the same config written another way (key order, spacing) is the same name; another config is not
    assert upload_label(json.dumps(dict(reversed(config.items())), indent=4)) == label
    assert upload_label(json.dumps(config | {"num_hidden_layers": 40})) != label


def test_a_text_that_is_not_json_still_gets_a_name():
    assert re.fullmatch(rf"{UPLOAD_NAMESPACE}/config-[0-9a-f]{{8}}", upload_label("{not json"))
    assert upload_label('{"model_type": "llama"}').startswith(f"{UPLOAD_NAMESPACE}/llama-")
