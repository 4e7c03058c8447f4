"""Parameter counts computed from configs against published counts.

Sources print counts either rounded or truncated to their last digit (Llama's "70B" is 70.55B,
Qwen's "7.61B" is 7.6156B, DeepSeek's "37B" is 37.55B), so each figure is checked against the interval
``[published - unit/2, published + unit)``: what rounding or truncation to that digit allows.
"""

from __future__ import annotations

import pytest

from planner.catalog.models import get_model
from planner.catalog.params import count_params

# (model id, published total in billions, printed precision in billions, source)
PUBLISHED_TOTALS = [
    ("meta-llama/Llama-3.1-8B", 8, 1, "Llama 3.1 model card, Params column"),
    ("meta-llama/Llama-3.1-70B", 70, 1, "Llama 3.1 model card"),
    ("meta-llama/Llama-3.1-405B", 405, 1, "Llama 3.1 model card"),
    ("meta-llama/Llama-3.2-1B-Instruct", 1.23, 0.01, "Llama 3.2 model card: 1B (1.23B)"),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21, 0.01, "Llama 3.2 model card: 3B (3.21B)"),
    ("Qwen/Qwen2.5-7B-Instruct", 7.61, 0.01, "Qwen2.5-7B-Instruct card: Number of Parameters 7.61B"),
    ("Qwen/Qwen3-0.6B", 0.6, 0.1, "Qwen3-0.6B card: Number of Parameters 0.6B"),
    ("Qwen/Qwen3-8B", 8.2, 0.1, "Qwen3-8B card: 8.2B"),
    ("Qwen/Qwen3-14B", 14.8, 0.1, "Qwen3-14B card: 14.8B"),
    ("Qwen/Qwen3-32B", 32.8, 0.1, "Qwen3-32B card: 32.8B"),
    ("Qwen/Qwen3-30B-A3B", 30.5, 0.1, "Qwen3-30B-A3B card: 30.5B in total"),
    ("Qwen/Qwen3-235B-A22B", 235, 1, "Qwen3-235B-A22B card: 235B in total"),
    ("mistralai/Mistral-7B-Instruct-v0.3", 7.25, 0.01, "Hugging Face model page (safetensors): 7.25B params"),
    ("mistralai/Mixtral-8x7B-v0.1", 46.7, 0.1, "Mistral AI, 'Mixtral of experts': 46.7B total parameters"),
    ("microsoft/Phi-3-mini-4k-instruct", 3.8, 0.1, "Phi-3 technical report arXiv:2404.14219: 3.8B"),
    ("microsoft/phi-4", 14, 1, "Phi-4 technical report arXiv:2412.08905: 14B"),
    ("deepseek-ai/DeepSeek-V3", 671, 1, "DeepSeek-V3 README: 671B total (without the 14B MTP module)"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", 15.7, 0.1, "DeepSeek-V2 paper arXiv:2405.04434: V2-Lite 15.7B total"),
    ("openai/gpt-oss-20b", 21, 1, "gpt-oss README: 21B"),
    ("openai/gpt-oss-120b", 117, 1, "gpt-oss README: 117B"),
    # Multimodal: the vision tower counts (SigLIP + projector). Hub safetensors metadata.
    ("google/gemma-3-4b-it", 4.3, 0.1, "Hugging Face model page (safetensors): 4.3B params"),
    ("google/gemma-3-12b-it", 12.2, 0.1, "Hugging Face model page (safetensors): 12.2B params"),
    ("google/gemma-3-27b-it", 27.4, 0.1, "Hugging Face model page (safetensors): 27.4B params"),
]


@pytest.mark.parametrize(("model_id", "published_b", "precision_b", "source"), PUBLISHED_TOTALS)
def test_total_params_match_published(model_id: str, published_b: float, precision_b: float, source: str) -> None:
    total_b = count_params(get_model(model_id).spec).total / 1e9
    assert published_b - precision_b / 2 <= total_b < published_b + precision_b, source


# (model id, published active in billions, precision, source). gpt-oss and DeepSeek count the output
# projection but not the input embedding in their active figure, so we compare active - embedding.
PUBLISHED_ACTIVE = [
    ("Qwen/Qwen3-30B-A3B", 3.3, 0.1, False, "Qwen3-30B-A3B card: 3.3B activated"),
    ("Qwen/Qwen3-235B-A22B", 22, 1, False, "Qwen3-235B-A22B card: 22B activated"),
    ("mistralai/Mixtral-8x7B-v0.1", 12.9, 0.1, False, "Mixtral of experts: 12.9B per token"),
    ("deepseek-ai/DeepSeek-V3", 37, 1, False, "DeepSeek-V3 README: 37B activated"),
    ("openai/gpt-oss-20b", 3.6, 0.1, True, "gpt-oss README: 3.6B active"),
    ("openai/gpt-oss-120b", 5.1, 0.1, True, "gpt-oss README: 5.1B active"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", 2.4, 0.1, True, "DeepSeek-V2 paper: V2-Lite 2.4B activated"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 17, 1, False, "Llama 4 model card: 17B active"),
]


@pytest.mark.parametrize(("model_id", "published_b", "precision_b", "minus_embedding", "source"), PUBLISHED_ACTIVE)
def test_active_params_match_published(model_id, published_b, precision_b, minus_embedding, source) -> None:
    counts = count_params(get_model(model_id).spec)
    active_b = (counts.active - (counts.embedding if minus_embedding else 0)) / 1e9
    assert published_b - precision_b / 2 <= active_b < published_b + precision_b, source


def test_non_embedding_params_of_qwen3_14b() -> None:
    # Qwen3-14B card: "Number of Parameters (Non-Embedding): 13.2B"; embeddings are untied.
    counts = count_params(get_model("Qwen/Qwen3-14B").spec)
    assert (counts.total - counts.embedding - counts.lm_head) / 1e9 == pytest.approx(13.2, abs=0.05)


def test_tied_embeddings_counted_once() -> None:
    # Llama 3.2 1B ties lm_head to the embedding (config tie_word_embeddings: true).
    counts = count_params(get_model("meta-llama/Llama-3.2-1B-Instruct").spec)
    assert counts.lm_head == 0
    assert counts.embedding == 128256 * 2048
